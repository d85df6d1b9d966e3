package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// DefaultMaxManifestSize is the manifest size above which LogAndApply
// starts a new manifest when Options.MaxManifestSize is zero.
const DefaultMaxManifestSize = 4 << 20

// Options configure a VersionSet.
type Options struct {
	// FS is the filesystem; nil means vfs.Default.
	FS vfs.FS
	// Dir is the DB directory holding CURRENT and the manifests.
	Dir string
	// MaxManifestSize is the size above which the manifest is rewritten
	// as a fresh snapshot; 0 means DefaultMaxManifestSize.
	MaxManifestSize int64
	// OnObsoleteFile, when set, is called with each table file that no
	// live Version references any more. It runs synchronously in the
	// goroutine that released the last Version holding the file, which
	// may be inside LogAndApply or Version.Unref, with no VersionSet lock
	// held; it must not wait for locks those callers may hold (such as the
	// DB mutex), so queue the deletion rather than doing it under a lock.
	// It is not called after Close.
	OnObsoleteFile func(fileNum base.FileNum)
}

// ErrClosed is returned by LogAndApply after Close.
var ErrClosed = errors.New("manifest: version set is closed")

// VersionSet owns the MANIFEST and the sequence of Versions: the current
// one plus every older one still referenced by a reader.
type VersionSet struct {
	fs   vfs.FS
	dir  string
	opts Options

	// nextFileNum is the next number NewFileNum hands out.
	nextFileNum atomic.Uint64
	// manifestNum is the number of the manifest CURRENT names.
	manifestNum atomic.Uint64

	// writeMu serializes LogAndApply and Close and guards the fields
	// below; it is held across manifest I/O, so readers never take it.
	writeMu      sync.Mutex
	manifestFile vfs.File
	// manifest is nil after Load until the first LogAndApply, which then
	// starts a new manifest: appending to the loaded one could put intact
	// records after a torn tail, which a later Load would call corruption.
	manifest *record.Writer
	// rotateAt is the manifest size that triggers a rewrite.
	rotateAt int64
	// writeErr is sticky: after a failed manifest write the file's tail
	// and even CURRENT are in an unknown state, so nothing more is written.
	writeErr error
	closed   bool

	// mu guards current, the live list, logNum, lastSeq and noCallbacks.
	// It is held only briefly and never across I/O.
	mu      sync.Mutex
	current *Version
	// live is the sentinel of a circular list of Versions with a nonzero
	// reference count.
	live        Version
	logNum      base.FileNum
	lastSeq     base.SeqNum
	noCallbacks bool
}

func newVersionSet(opts Options) *VersionSet {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.MaxManifestSize <= 0 {
		opts.MaxManifestSize = DefaultMaxManifestSize
	}
	vs := &VersionSet{fs: opts.FS, dir: opts.Dir, opts: opts}
	vs.live.prev, vs.live.next = &vs.live, &vs.live
	return vs
}

func (vs *VersionSet) path(name string) string { return vs.fs.PathJoin(vs.dir, name) }

// Create initializes the version set of a new DB: it writes MANIFEST-000001
// holding an empty snapshot and points CURRENT at it. It refuses, with an
// error wrapping os.ErrExist, to run where CURRENT already exists.
func Create(opts Options) (*VersionSet, error) {
	vs := newVersionSet(opts)
	if _, err := vs.fs.Stat(vs.path(base.MakeFilename(base.FileTypeCurrent, 0))); err == nil {
		return nil, fmt.Errorf("manifest: creating a DB in %s: CURRENT: %w", vs.dir, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("manifest: creating a DB in %s: %w", vs.dir, err)
	}
	vs.nextFileNum.Store(1)
	var empty [NumLevels][]*FileMetadata
	if err := vs.writeSnapshot(empty, 0, 0); err != nil {
		return nil, err
	}
	vs.current = vs.newVersion(empty)
	return vs, nil
}

// Load opens the version set of an existing DB by replaying the manifest
// CURRENT names. A missing CURRENT gives an error wrapping os.ErrNotExist;
// damage gives a *base.CorruptionError. A torn tail at the end of the
// manifest is an interrupted LogAndApply that was never acknowledged, so
// the edits before it are kept. Load writes nothing; the first LogAndApply
// starts a new manifest.
func Load(opts Options) (*VersionSet, error) {
	vs := newVersionSet(opts)
	num, err := vs.readCurrent()
	if err != nil {
		return nil, err
	}
	name := vs.path(base.MakeFilename(base.FileTypeManifest, num))
	f, err := vs.fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, base.Corruptf(name, -1, "manifest named by CURRENT is missing")
	} else if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()

	b := newBuilder(nil)
	maxNum := num
	next := base.FileNum(0)
	var logNum base.FileNum
	var lastSeq base.SeqNum
	r := record.NewReader(f, name)
	edits := 0
	for ; ; edits++ {
		rec, err := r.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		var e VersionEdit
		if err := e.Decode(rec); err != nil {
			return nil, base.Corruptf(name, r.Offset(), "decoding version edit: %v", err)
		}
		if err := b.apply(&e); err != nil {
			return nil, base.Corruptf(name, r.Offset(), "applying version edit: %v", err)
		}
		next = max(next, e.NextFileNum)
		logNum = max(logNum, e.LogNum)
		lastSeq = max(lastSeq, e.LastSeq)
		for _, nf := range e.NewFiles {
			maxNum = max(maxNum, nf.Meta.FileNum)
		}
	}
	if edits == 0 {
		return nil, base.Corruptf(name, 0, "manifest holds no version edit")
	}
	files := b.levels()
	if err := (&Version{Files: files}).CheckOrdering(); err != nil {
		return nil, base.Corruptf(name, -1, "replayed version is inconsistent: %v", err)
	}
	// The recorded NextFileNum can lag numbers that were allocated and
	// used without a later edit recording it, so take every number seen.
	vs.nextFileNum.Store(uint64(max(next, maxNum+1, logNum+1)))
	vs.manifestNum.Store(uint64(num))
	vs.logNum, vs.lastSeq = logNum, lastSeq
	vs.current = vs.newVersion(files)
	return vs, nil
}

// readCurrent returns the manifest number CURRENT names.
func (vs *VersionSet) readCurrent() (base.FileNum, error) {
	name := vs.path(base.MakeFilename(base.FileTypeCurrent, 0))
	f, err := vs.fs.Open(name)
	if err != nil {
		return 0, fmt.Errorf("manifest: opening CURRENT: %w", err)
	}
	defer f.Close()
	// CURRENT is a few bytes; the limit keeps a damaged one from being
	// read whole.
	data, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, fmt.Errorf("manifest: reading CURRENT: %w", err)
	}
	s, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return 0, base.Corruptf(name, 0, "content %q does not end in a newline", data)
	}
	t, num, ok := base.ParseFilename(s)
	if !ok || t != base.FileTypeManifest {
		return 0, base.Corruptf(name, 0, "content %q does not name a manifest", data)
	}
	return num, nil
}

// Current returns the current Version with a reference taken; the caller
// releases it with Unref.
func (vs *VersionSet) Current() *Version {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.current
	v.Ref()
	return v
}

// LogAndApply makes edit durable in the manifest and installs the Version
// it produces. Calls are serialized. It fills edit.NextFileNum; LogNum and
// LastSeq only ever move forward, so a smaller value in edit is ignored.
// An edit that deletes a file not in the named level, adds a file already
// present, or breaks the level ordering is rejected with nothing written.
// A file deleted and re-added by the same edit (a move between levels)
// keeps the *FileMetadata already installed, so its reference count is not
// split between two pointers.
//
// When writing or syncing fails the new Version is not installed and the
// error is returned. Unless the error matches ErrNotLogged, every later
// call returns it too: the manifest may end in a partial record, or in an
// edit whose fsync failed (ResetWriteError clears it).
func (vs *VersionSet) LogAndApply(edit *VersionEdit) error {
	vs.writeMu.Lock()
	switch {
	case vs.closed:
		vs.writeMu.Unlock()
		return ErrClosed
	case vs.writeErr != nil:
		vs.writeMu.Unlock()
		return vs.writeErr
	}
	b := newBuilder(vs.current)
	if err := b.apply(edit); err != nil {
		vs.writeMu.Unlock()
		return fmt.Errorf("manifest: rejecting version edit: %w", err)
	}
	files := b.levels()
	if err := (&Version{Files: files}).CheckOrdering(); err != nil {
		vs.writeMu.Unlock()
		return fmt.Errorf("manifest: rejecting version edit: %w", err)
	}

	// Numbers the caller chose itself must never be handed out again.
	vs.MarkFileNumUsed(edit.LogNum)
	for _, nf := range edit.NewFiles {
		vs.MarkFileNumUsed(nf.Meta.FileNum)
	}
	vs.mu.Lock()
	logNum, lastSeq := max(vs.logNum, edit.LogNum), max(vs.lastSeq, edit.LastSeq)
	vs.mu.Unlock()

	edit.NextFileNum = base.FileNum(vs.nextFileNum.Load())
	var err error
	if vs.manifest == nil || vs.manifest.Size() > vs.rotateAt {
		err = vs.writeSnapshot(files, logNum, lastSeq)
	} else {
		err = vs.appendEdit(edit)
	}
	if err != nil {
		var nl *notLoggedError
		if errors.As(err, &nl) {
			// Nothing any Load could read changed; after a failed append
			// the file's tail is torn, so the next edit starts a new
			// manifest instead of writing after it.
			if nl.torn {
				vs.manifest = nil
			}
		} else {
			vs.writeErr = err
		}
		vs.writeMu.Unlock()
		return err
	}

	nv := vs.newVersion(files)
	vs.mu.Lock()
	old := vs.current
	vs.current = nv
	vs.logNum, vs.lastSeq = logNum, lastSeq
	vs.mu.Unlock()
	vs.writeMu.Unlock()
	// Outside both locks: this may report obsolete files.
	old.Unref()
	return nil
}

func (vs *VersionSet) appendEdit(edit *VersionEdit) error {
	if err := vs.manifest.WriteRecord(edit.Encode()); err != nil {
		return &notLoggedError{err: fmt.Errorf("manifest: writing edit: %w", err), torn: true}
	}
	if err := vs.manifest.Flush(); err != nil {
		// A failed write leaves at most a prefix of the record, which
		// Load takes for a torn tail: the edit is not logged.
		return &notLoggedError{err: fmt.Errorf("manifest: writing edit: %w", err), torn: true}
	}
	if err := vs.manifestFile.Sync(); err != nil {
		return fmt.Errorf("manifest: syncing: %w", err)
	}
	return nil
}

// writeSnapshot starts a new manifest holding one edit that describes the
// whole state, makes it durable, switches CURRENT to it and removes the
// old manifest. Until CURRENT's rename is durable a crash leaves the old
// manifest in charge, which is why the old one is removed last.
func (vs *VersionSet) writeSnapshot(files [NumLevels][]*FileMetadata, logNum base.FileNum, lastSeq base.SeqNum) error {
	num := vs.NewFileNum()
	snap := VersionEdit{LogNum: logNum, NextFileNum: base.FileNum(vs.nextFileNum.Load()), LastSeq: lastSeq}
	for level, fs := range files {
		for _, f := range fs {
			snap.NewFiles = append(snap.NewFiles, NewFile{Level: level, Meta: f})
		}
	}
	name := vs.path(base.MakeFilename(base.FileTypeManifest, num))
	f, err := vs.fs.Create(name)
	if err != nil {
		return &notLoggedError{err: fmt.Errorf("manifest: %w", err)}
	}
	w := record.NewWriter(f)
	renamed, err := vs.initManifest(f, w, snap.Encode(), num)
	if err != nil {
		f.Close()
		if !renamed {
			// CURRENT still names the old manifest, so the new one is
			// garbage; once renamed it may be the live one.
			vs.fs.Remove(name)
			return &notLoggedError{err: err}
		}
		return err
	}
	if vs.manifestFile != nil {
		vs.manifestFile.Close()
	}
	if old := base.FileNum(vs.manifestNum.Load()); old != 0 {
		// The old manifest is no longer named by the durable CURRENT; if
		// removing it fails it is only wasted space that a later open can
		// reclaim.
		vs.fs.Remove(vs.path(base.MakeFilename(base.FileTypeManifest, old)))
	}
	vs.manifestFile, vs.manifest = f, w
	vs.manifestNum.Store(uint64(num))
	// Rotating again as soon as the log reaches the snapshot's own size
	// would rewrite a large DB's state on every edit.
	vs.rotateAt = max(vs.opts.MaxManifestSize, 2*w.Size())
	return nil
}

// initManifest writes and syncs a new manifest's first record and makes
// CURRENT name it. renamed reports whether CURRENT may have been replaced.
func (vs *VersionSet) initManifest(f vfs.File, w *record.Writer, rec []byte, num base.FileNum) (renamed bool, err error) {
	if err := w.WriteRecord(rec); err != nil {
		return false, fmt.Errorf("manifest: writing snapshot: %w", err)
	}
	if err := w.Flush(); err != nil {
		return false, fmt.Errorf("manifest: writing snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("manifest: syncing snapshot: %w", err)
	}
	if err := vs.syncDir(); err != nil {
		return false, err
	}
	return vs.setCurrent(num)
}

// setCurrent atomically replaces CURRENT with one naming manifest num:
// write a temp file, sync it, rename it over CURRENT, sync the directory.
func (vs *VersionSet) setCurrent(num base.FileNum) (renamed bool, err error) {
	tmp := vs.path(base.MakeFilename(base.FileTypeTemp, num))
	f, err := vs.fs.Create(tmp)
	if err != nil {
		return false, fmt.Errorf("manifest: %w", err)
	}
	_, err = io.WriteString(f, base.MakeFilename(base.FileTypeManifest, num)+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = vs.fs.Rename(tmp, vs.path(base.MakeFilename(base.FileTypeCurrent, 0)))
	}
	if err != nil {
		vs.fs.Remove(tmp)
		return false, fmt.Errorf("manifest: setting CURRENT: %w", err)
	}
	return true, vs.syncDir()
}

func (vs *VersionSet) syncDir() error {
	if err := vfs.SyncDir(vs.fs, vs.dir); err != nil {
		return fmt.Errorf("manifest: syncing directory: %w", err)
	}
	return nil
}

// NewFileNum allocates a file number no other caller and no file named in
// the manifest has. Safe for concurrent use.
func (vs *VersionSet) NewFileNum() base.FileNum {
	return base.FileNum(vs.nextFileNum.Add(1) - 1)
}

// MarkFileNumUsed ensures NewFileNum never returns n or anything below it;
// recovery calls it for WAL files found on disk.
func (vs *VersionSet) MarkFileNumUsed(n base.FileNum) {
	for {
		cur := vs.nextFileNum.Load()
		if cur > uint64(n) || vs.nextFileNum.CompareAndSwap(cur, uint64(n)+1) {
			return
		}
	}
}

// LogNum returns the smallest WAL number still needed for recovery.
func (vs *VersionSet) LogNum() base.FileNum {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.logNum
}

// LastSeq returns the largest sequence number recorded in the manifest.
func (vs *VersionSet) LastSeq() base.SeqNum {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.lastSeq
}

// ManifestFileNum returns the number of the manifest CURRENT names; any
// other MANIFEST file in the directory is obsolete.
func (vs *VersionSet) ManifestFileNum() base.FileNum {
	return base.FileNum(vs.manifestNum.Load())
}

// LiveBlobFiles returns the blob files that the tables of any live Version
// point into.
func (vs *VersionSet) LiveBlobFiles() map[base.FileNum]bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	live := make(map[base.FileNum]bool)
	for v := vs.live.next; v != &vs.live; v = v.next {
		for _, files := range v.Files {
			for _, f := range files {
				for _, r := range f.BlobRefs {
					live[r.FileNum] = true
				}
			}
		}
	}
	return live
}

// LiveFiles returns the table files referenced by any live Version.
func (vs *VersionSet) LiveFiles() map[base.FileNum]bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	live := make(map[base.FileNum]bool)
	for v := vs.live.next; v != &vs.live; v = v.next {
		for _, files := range v.Files {
			for _, f := range files {
				live[f.FileNum] = true
			}
		}
	}
	return live
}

// Close closes the manifest file. Versions still referenced stay readable,
// but files they release are no longer reported as obsolete: the DB is
// going away and finds stray files at the next open. Close keeps the
// VersionSet's own reference on the current Version, so its files are
// never reported.
func (vs *VersionSet) Close() error {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.closed {
		return nil
	}
	vs.closed = true
	vs.mu.Lock()
	vs.noCallbacks = true
	vs.mu.Unlock()
	if vs.manifestFile == nil {
		return nil
	}
	return vs.manifestFile.Close()
}

// newVersion makes a Version holding the VersionSet's reference, takes a
// reference on each of its files and links it into the live list.
func (vs *VersionSet) newVersion(files [NumLevels][]*FileMetadata) *Version {
	v := &Version{Files: files, vs: vs}
	v.refs.Store(1)
	for _, fs := range files {
		for _, f := range fs {
			atomic.AddInt32(&f.refs, 1)
		}
	}
	vs.mu.Lock()
	v.prev, v.next = vs.live.prev, &vs.live
	v.prev.next, v.next.prev = v, v
	vs.mu.Unlock()
	return v
}

// release runs when v's last reference is gone.
func (vs *VersionSet) release(v *Version) {
	vs.mu.Lock()
	v.prev.next, v.next.prev = v.next, v.prev
	v.prev, v.next = nil, nil
	report := vs.opts.OnObsoleteFile != nil && !vs.noCallbacks
	vs.mu.Unlock()
	for _, fs := range v.Files {
		for _, f := range fs {
			if atomic.AddInt32(&f.refs, -1) == 0 && report {
				vs.opts.OnObsoleteFile(f.FileNum)
			}
		}
	}
}

// builder accumulates edits on top of a Version.
type builder struct {
	files map[base.FileNum]placedFile
}

type placedFile struct {
	level int
	meta  *FileMetadata
}

func newBuilder(v *Version) *builder {
	b := &builder{files: make(map[base.FileNum]placedFile)}
	if v != nil {
		for level, fs := range v.Files {
			for _, f := range fs {
				b.files[f.FileNum] = placedFile{level, f}
			}
		}
	}
	return b
}

// apply deletes then adds the edit's files. On error the builder is left
// half-applied and must be discarded.
func (b *builder) apply(e *VersionEdit) error {
	var moved map[base.FileNum]*FileMetadata
	for _, d := range e.DeletedFiles {
		p, ok := b.files[d.FileNum]
		if !ok || p.level != d.Level {
			return fmt.Errorf("deletes file %d from L%d, which does not hold it", d.FileNum, d.Level)
		}
		delete(b.files, d.FileNum)
		if moved == nil {
			moved = make(map[base.FileNum]*FileMetadata)
		}
		moved[d.FileNum] = p.meta
	}
	for _, n := range e.NewFiles {
		m := n.Meta
		switch {
		case m == nil:
			return errors.New("adds a file without metadata")
		case n.Level < 0 || n.Level >= NumLevels:
			return fmt.Errorf("adds file %d to level %d, which does not exist", m.FileNum, n.Level)
		}
		if err := m.validate(); err != nil {
			return fmt.Errorf("adds an invalid file: %w", err)
		}
		if p, ok := b.files[m.FileNum]; ok {
			return fmt.Errorf("adds file %d to L%d, but L%d already holds it", m.FileNum, n.Level, p.level)
		}
		if old := moved[m.FileNum]; old != nil && old != m {
			if !sameFile(old, m) {
				return fmt.Errorf("moves file %d but changes its metadata", m.FileNum)
			}
			m = old
		}
		b.files[m.FileNum] = placedFile{n.Level, m}
	}
	return nil
}

func sameFile(a, b *FileMetadata) bool {
	return a.Size == b.Size && a.SmallestSeq == b.SmallestSeq && a.LargestSeq == b.LargestSeq &&
		base.CompareInternal(a.Smallest, b.Smallest) == 0 && base.CompareInternal(a.Largest, b.Largest) == 0 &&
		slices.Equal(a.BlobRefs, b.BlobRefs)
}

// levels returns the accumulated files in Version order.
func (b *builder) levels() [NumLevels][]*FileMetadata {
	var out [NumLevels][]*FileMetadata
	for _, p := range b.files {
		out[p.level] = append(out[p.level], p.meta)
	}
	sort.Slice(out[0], func(i, j int) bool { return l0Before(out[0][i], out[0][j]) })
	for level := 1; level < NumLevels; level++ {
		fs := out[level]
		sort.Slice(fs, func(i, j int) bool {
			if c := base.CompareInternal(fs[i].Smallest, fs[j].Smallest); c != 0 {
				return c < 0
			}
			return fs[i].FileNum < fs[j].FileNum
		})
	}
	return out
}

// ErrNotLogged is matched by a LogAndApply error after which the edit is
// certainly in no manifest a later Load reads: the write failed before
// anything it wrote could be taken for the edit (a torn record, or a new
// manifest that CURRENT never named). The caller may then delete the
// files the edit would have added, and retry. Such a failure is not
// sticky; any other is, because after it the manifest's state is unknown
// (see ResetWriteError).
var ErrNotLogged = errors.New("manifest: edit not logged")

// notLoggedError wraps a failure that matches ErrNotLogged; torn says the
// current manifest's tail may hold a prefix of the record.
type notLoggedError struct {
	err  error
	torn bool
}

func (e *notLoggedError) Error() string   { return e.err.Error() }
func (e *notLoggedError) Unwrap() []error { return []error{ErrNotLogged, e.err} }

// ResetWriteError clears a sticky write error and makes the next
// LogAndApply write the whole current version into a new manifest and
// point CURRENT at it, so nothing depends on the old manifest's unknown
// tail. It is for DB.Resume, after the operator has dealt with the cause.
func (vs *VersionSet) ResetWriteError() {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.writeErr != nil {
		vs.writeErr = nil
		vs.manifest = nil
	}
}
