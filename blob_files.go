package lsmgo

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// maxBlobFileSize is the size past which the active blob file is retired
// and the next separated value starts a new one, unless a small memtable
// asks for smaller files (blobTargetFileSize). A single larger value
// makes a file of its own.
const maxBlobFileSize = 256 << 20

// blobTargetFileSize scales blob files with the memtable, as tables
// scale with it: 8 memtables, from 64 KiB to maxBlobFileSize (reached at
// the default 32 MiB memtable). A file is reclaimed whole, so a DB
// configured small gets files its garbage collection can reclaim.
func blobTargetFileSize(memTableSize int) int64 {
	return min(maxBlobFileSize, max(64<<10, 8*int64(memTableSize)))
}

// blobFiles is the DB's set of blob files (doc/blob.md): the active file
// that separated values are appended to, and the open readers that
// pointers are resolved through.
//
// Locking: appendMu orders appends (Apply holds it while it writes a
// batch's separated values, outside the commit queue, so a large value
// stalls only other large writes). syncMu is held while the active file is
// fsynced or retired, so the WAL's syncs (which call sync first) never
// touch a closed file. Rotation holds both.
type blobFiles struct {
	fs         vfs.FS
	dir        string
	m          *dbMetrics
	newFile    func() base.FileNum
	targetSize int64

	appendMu sync.Mutex
	active   *activeBlob // guarded by appendMu and syncMu together
	closed   bool        // guarded by appendMu

	// life tracks which blob files exist and who needs them besides the
	// tables of live versions (see removeObsolete).
	life struct {
		mu sync.Mutex
		// files are the blob files on disk, with their sizes once
		// retired (0 while being written).
		files map[base.FileNum]int64
		// pins counts the holders of each file other than tables: its
		// writer (the active file's, a compaction's) from its creation
		// on, a batch between writing its values and its memtable
		// insert, a memtable holding pointers into it.
		pins map[base.FileNum]int
		// retained counts the retained WAL files (wal_retain.go) whose
		// pointers may use each file. They are kept apart from pins so
		// that the bytes only retention keeps on disk can be told from
		// those the DB needs anyway (retainedOnly).
		retained map[base.FileNum]int
		// ready is set once Open has recovered: before that, the tables
		// of the replayed WALs are in no version yet.
		ready bool
		// held counts the ValueReaders reading each file, and deferred
		// marks the files removeObsolete found obsolete but held: those
		// are removed when their last reader closes. Readers are kept
		// apart from pins because they come and go with every read of
		// a value in place, and only a release that leaves an obsolete
		// file unheld has anything for removeObsolete to do.
		held     map[base.FileNum]int
		deferred map[base.FileNum]bool
	}
	// liveInTables returns the blob files the tables of live versions
	// point into (VersionSet.LiveBlobFiles).
	liveInTables func() map[base.FileNum]bool
	logger       *slog.Logger

	syncMu sync.Mutex
	// written and synced count the bytes handed to and made durable in
	// blob files since Open, across files: the active one holds every
	// unsynced byte, since a file is synced when it is retired.
	written atomic.Int64
	synced  int64 // guarded by syncMu
	syncErr error // guarded by syncMu

	readers struct {
		mu    sync.Mutex
		files map[base.FileNum]*blobReader
	}
	// verified remembers the values a ValueReader has checked
	// (value_reader.go).
	verified verifiedValues
}

// activeBlob is the blob file being appended to.
type activeBlob struct {
	num  base.FileNum
	file vfs.File
	w    *blob.Writer
	// handed is how much of the file flushActive has counted in written.
	handed int64
}

// blobReader is an open blob file and a reader over the bytes it held when
// last examined; reads past that re-examine its size, since the active
// file grows. spare keeps the extra descriptors of the file that
// ValueReader.SendTo used, for the next one (blob_reader_files.go).
type blobReader struct {
	file  vfs.File
	r     atomic.Pointer[blob.Reader]
	spare spareFiles
}

func (b *blobFiles) init(fs vfs.FS, dir string, m *dbMetrics, newFile func() base.FileNum) {
	b.fs, b.dir, b.m, b.newFile = fs, dir, m, newFile
	b.readers.files = make(map[base.FileNum]*blobReader)
	b.life.files = make(map[base.FileNum]int64)
	b.life.pins = make(map[base.FileNum]int)
	b.life.retained = make(map[base.FileNum]int)
	b.life.held = make(map[base.FileNum]int)
	b.life.deferred = make(map[base.FileNum]bool)
	b.verified.set = make(map[blob.Pointer]struct{})
}

func (b *blobFiles) path(num base.FileNum) string {
	return b.fs.PathJoin(b.dir, base.MakeFilename(base.FileTypeBlob, num))
}

// separate writes a batch's separated values to the active blob file and
// returns the batch's encoding with a pointer in place of each, and the
// files written to, pinned: the caller unpins them once the memtable that
// takes the batch has pinned them itself. The values reach the OS
// (write(2)) before it returns, so a WAL record holding the pointers can
// never be in the OS without them.
func (b *blobFiles) separate(batch *Batch) (repr []byte, pinned []base.FileNum, err error) {
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	if b.closed {
		return nil, nil, ErrClosed
	}
	repr, err = batch.withPointers(func(key, value []byte) (blob.Pointer, error) {
		p, err := b.add(key, value)
		if err == nil && (len(pinned) == 0 || pinned[len(pinned)-1] != p.FileNum) {
			b.pin(p.FileNum)
			pinned = append(pinned, p.FileNum)
		}
		return p, err
	})
	if err == nil {
		err = b.flushActive()
	}
	if err != nil {
		b.unpin(pinned)
		if base.IsNoSpace(err) {
			return nil, nil, b.abandonActive(err)
		}
		return nil, nil, err
	}
	return repr, pinned, nil
}

// abandonActive handles a blob write that failed for lack of space, as
// the WAL handles one (doc/durability.md): the batch was never
// acknowledged, so the partial record is cut off the active file, which
// is synced (it holds acknowledged values) and retired; the next write
// starts a new file once space is back. A failed fsync, or an FS that
// cannot cut the file, leaves the error as it is: the DB turns read-only.
// appendMu is held.
func (b *blobFiles) abandonActive(cause error) error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if b.syncErr != nil {
		return b.syncErr
	}
	a := b.active
	if a == nil {
		// Creating the next file failed: nothing was written.
		return &noSpaceError{cause}
	}
	if err := vfs.Truncate(b.fs, b.path(a.num), a.handed); err != nil {
		return errors.Join(cause, err)
	}
	if err := b.syncLocked(); err != nil {
		return err
	}
	b.active = nil
	// The writer's error is sticky and its file already cut: only the
	// handle is left to release.
	a.file.Close()
	b.setSize(a.num, a.handed)
	b.unpin([]base.FileNum{a.num})
	return &noSpaceError{cause}
}

// flushActive hands what the active file's writer buffers to the OS and
// only then counts it in written: a sync reads written as what an fsync
// of the active file covers, so bytes still in the buffer must not count
// (they would be taken for synced and never be). appendMu is held.
func (b *blobFiles) flushActive() error {
	a := b.active
	if err := a.w.Flush(); err != nil {
		return err
	}
	n := a.w.Size() - a.handed
	a.handed = a.w.Size()
	b.written.Add(n)
	b.m.blobBytesWritten.Add(n)
	return nil
}

// add appends one value; appendMu is held.
func (b *blobFiles) add(key, value []byte) (blob.Pointer, error) {
	if b.active == nil || b.active.w.Size() >= b.targetSize {
		if err := b.rotate(); err != nil {
			return blob.Pointer{}, err
		}
	}
	p, err := b.active.w.Add(key, value)
	if err != nil {
		return blob.Pointer{}, err
	}
	b.m.blobValuesWritten.Add(1)
	return p, nil
}

// rotate retires the active file, if any (synced, then closed), and
// creates the next one, whose directory entry is made durable before any
// pointer to it is written, as for a new WAL. appendMu is held.
func (b *blobFiles) rotate() error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if err := b.retireLocked(); err != nil {
		return err
	}
	num, f, err := b.create()
	if err != nil {
		return err
	}
	b.active = &activeBlob{num: num, file: f, w: blob.NewWriter(f, num, b.path(num))}
	return nil
}

// retireLocked retires the active file, if any: synced, closed, its size
// recorded; it never changes again. appendMu and syncMu are held.
func (b *blobFiles) retireLocked() error {
	old := b.active
	if old == nil {
		return nil
	}
	// The batch being written may have values in the buffer.
	if err := b.flushActive(); err != nil {
		return err
	}
	if err := b.syncLocked(); err != nil {
		return err
	}
	b.active = nil
	size := old.w.Size()
	if err := old.w.Close(); err != nil {
		return b.fail(fmt.Errorf("lsmgo: close blob file: %w", err))
	}
	b.setSize(old.num, size)
	// The batches that wrote into it hold pins of their own.
	b.unpin([]base.FileNum{old.num})
	return nil
}

// retireActive retires the active file, so that DB.Checkpoint can link it
// instead of copying what may be hundreds of MiB; the next separated
// value starts a new file.
func (b *blobFiles) retireActive() error {
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	return b.retireLocked()
}

// create creates a new blob file, known (so Open or removeObsolete can
// delete it) and durable in the directory before any pointer to it is
// written. The file comes pinned, for its writer, which unpins it once
// done.
func (b *blobFiles) create() (base.FileNum, vfs.File, error) {
	num := b.newFile()
	b.life.mu.Lock()
	b.life.files[num] = 0
	b.life.pins[num]++
	b.life.mu.Unlock()
	f, err := b.fs.Create(b.path(num))
	if err == nil {
		if err = syncDir(b.fs, b.dir); err != nil {
			f.Close()
		}
	}
	if err != nil {
		b.unpin([]base.FileNum{num})
		return 0, nil, fmt.Errorf("lsmgo: create blob file: %w", err)
	}
	b.m.blobFilesCreated.Add(1)
	return num, f, nil
}

// retiredSizes returns the sizes of the blob files no longer written.
func (b *blobFiles) retiredSizes() map[base.FileNum]int64 {
	b.life.mu.Lock()
	defer b.life.mu.Unlock()
	out := make(map[base.FileNum]int64, len(b.life.files))
	for num, size := range b.life.files {
		if size > 0 {
			out[num] = size
		}
	}
	return out
}

// diskUsage returns the number of blob files and their total size; files
// still being written are measured on disk.
func (b *blobFiles) diskUsage() (files int, bytes int64) {
	b.life.mu.Lock()
	sizes := maps.Clone(b.life.files)
	b.life.mu.Unlock()
	for num, size := range sizes {
		if size == 0 {
			if st, err := b.fs.Stat(b.path(num)); err == nil {
				size = st.Size()
			}
		}
		bytes += size
	}
	return len(sizes), bytes
}

// setSize records the final size of a blob file no longer written.
func (b *blobFiles) setSize(num base.FileNum, size int64) {
	b.life.mu.Lock()
	if _, ok := b.life.files[num]; ok {
		b.life.files[num] = size
	}
	b.life.mu.Unlock()
}

// pin keeps blob file num from removeObsolete until unpinned.
func (b *blobFiles) pin(nums ...base.FileNum) { b.countUp(b.life.pins, nums) }

// unpin drops pins; a file that loses its last one may be obsolete. With
// no files it does nothing, also on a DB without value separation (nil b).
func (b *blobFiles) unpin(nums []base.FileNum) {
	if len(nums) > 0 {
		b.countDown(b.life.pins, nums)
	}
}

// retain keeps blob files nums for a retained WAL until unretained.
func (b *blobFiles) retain(nums []base.FileNum) { b.countUp(b.life.retained, nums) }

// unretain drops what retain took; a file that loses its last retained
// WAL may be obsolete.
func (b *blobFiles) unretain(nums []base.FileNum) {
	if len(nums) > 0 {
		b.countDown(b.life.retained, nums)
	}
}

// countUp adds one holder of each of nums to counts (pins or retained).
func (b *blobFiles) countUp(counts map[base.FileNum]int, nums []base.FileNum) {
	b.life.mu.Lock()
	for _, num := range nums {
		counts[num]++
	}
	b.life.mu.Unlock()
}

// countDown drops one holder of each of nums from counts, and looks for
// obsolete files if any lost its last.
func (b *blobFiles) countDown(counts map[base.FileNum]int, nums []base.FileNum) {
	released := false
	b.life.mu.Lock()
	for _, num := range nums {
		if counts[num]--; counts[num] <= 0 {
			delete(counts, num)
			released = true
		}
	}
	b.life.mu.Unlock()
	if released {
		b.removeObsolete()
	}
}

// retainedOnly returns the sizes of the blob files that only retained WAL
// files keep: no table of a live version points into them and nothing
// else pins them, so they would be deleted but for retention. Before
// Open has recovered it returns nil: the tables of the replayed WALs are
// in no version yet, so what is live is not known.
func (b *blobFiles) retainedOnly() map[base.FileNum]int64 {
	b.life.mu.Lock()
	defer b.life.mu.Unlock()
	if !b.life.ready || len(b.life.retained) == 0 {
		return nil
	}
	live := b.liveInTables()
	only := make(map[base.FileNum]int64)
	for num := range b.life.retained {
		if size, ok := b.life.files[num]; ok && b.life.pins[num] == 0 && !live[num] {
			only[num] = size
		}
	}
	return only
}

// startRemoving lets removeObsolete delete files, and runs it.
func (b *blobFiles) startRemoving() {
	b.life.mu.Lock()
	b.life.ready = true
	b.life.mu.Unlock()
	b.removeObsolete()
}

// stopRemoving keeps removeObsolete from deleting anything: the DB is
// closing, and its unflushed memtables' pointers live on in their WALs.
func (b *blobFiles) stopRemoving() {
	b.life.mu.Lock()
	b.life.ready = false
	b.life.mu.Unlock()
}

// addExisting records the blob files a directory listing holds, at Open.
func (b *blobFiles) addExisting(names []string) {
	b.life.mu.Lock()
	defer b.life.mu.Unlock()
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeBlob {
			size := int64(0)
			if st, err := b.fs.Stat(b.path(num)); err == nil {
				size = st.Size()
			}
			b.life.files[num] = size
		}
	}
}

// removeObsolete deletes every blob file that nothing needs: it is not
// pinned (the active file is), and no table of a live version (which every read
// state and iterator pins) points into it. Once unneeded a file is never
// needed again: new pointers go only to the active file or to a file a
// compaction has pinned. It runs after Open's recovery, whenever a table
// becomes obsolete and whenever a pin is released.
func (b *blobFiles) removeObsolete() {
	b.life.mu.Lock()
	if !b.life.ready {
		b.life.mu.Unlock()
		return
	}
	// The versions are read with life.mu held: whoever trades a pin for a
	// table reference (a flushed memtable, a compaction's output) installs
	// the version before it unpins, so a file is either pinned or live
	// in what this sees.
	live := b.liveInTables()
	var remove []base.FileNum
	for num := range b.life.files {
		switch {
		case b.life.pins[num] > 0 || b.life.retained[num] > 0 || live[num]:
		case b.life.held[num] > 0:
			b.life.deferred[num] = true
		default:
			remove = append(remove, num)
			delete(b.life.files, num)
			delete(b.life.deferred, num)
		}
	}
	b.life.mu.Unlock()
	for _, num := range remove {
		b.readers.mu.Lock()
		if br := b.readers.files[num]; br != nil {
			br.file.Close()
			br.spare.close()
			delete(b.readers.files, num)
		}
		b.readers.mu.Unlock()
		if err := b.fs.Remove(b.path(num)); err != nil && b.logger != nil {
			b.logger.Warn("lsmgo: cannot remove obsolete blob file", "file", b.path(num), "err", err)
		}
		b.m.blobFilesDeleted.Add(1)
	}
}

// sync makes every blob byte written so far durable. The WAL calls it
// before each fsync of its own (doc/blob.md, "Sync order").
func (b *blobFiles) sync() error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	return b.syncLocked()
}

// syncLocked is sync with syncMu held. A failed fsync is sticky, as the
// WAL's is: the kernel may have dropped the pages it could not write.
func (b *blobFiles) syncLocked() error {
	if b.syncErr != nil {
		return b.syncErr
	}
	// Bytes counted in written are in the active file (or an older one,
	// synced when it was retired), which cannot change while syncMu is
	// held.
	target := b.written.Load()
	if b.active == nil || b.synced >= target {
		return nil
	}
	if err := b.active.file.Sync(); err != nil {
		return b.fail(fmt.Errorf("lsmgo: blob file sync %s: %w", b.path(b.active.num), err))
	}
	b.synced = target
	b.m.blobSyncs.Add(1)
	return nil
}

// fail makes err sticky; syncMu is held.
func (b *blobFiles) fail(err error) error {
	if b.syncErr == nil {
		b.syncErr = err
	}
	return b.syncErr
}

// read appends the value ptr (an encoded blob.Pointer) points to to dst,
// verified against the pointer's checksum (blob.Reader.ReadValue).
func (b *blobFiles) read(dst, ptr []byte) ([]byte, error) {
	p, err := blob.DecodePointer(ptr)
	if err != nil {
		return nil, base.Corruptf("", -1, "blob pointer: %v", err)
	}
	return b.readPointer(p, dst)
}

// readPointer appends the value p points to to dst.
func (b *blobFiles) readPointer(p blob.Pointer, dst []byte) ([]byte, error) {
	_, r, err := b.readerFor(p)
	if err != nil {
		return nil, err
	}
	v, err := r.ReadValue(p, dst)
	if err == nil {
		b.m.blobReads.Add(1)
	}
	return v, err
}

// readerFor returns the open file p points into and a reader over it that
// has seen at least the bytes up to p's end, if the file holds them.
func (b *blobFiles) readerFor(p blob.Pointer) (*blobReader, *blob.Reader, error) {
	br, err := b.reader(p.FileNum)
	if err != nil {
		return nil, nil, err
	}
	r := br.r.Load()
	if p.Offset+p.Length > uint64(r.Size()) {
		// The active file has grown since the reader was made.
		if r, err = br.refresh(b.path(p.FileNum), p.FileNum); err != nil {
			return nil, nil, err
		}
	}
	return br, r, nil
}

// reader returns the open reader of blob file num, opening it if needed.
// A file that does not exist is corruption: a pointer refers to it.
func (b *blobFiles) reader(num base.FileNum) (*blobReader, error) {
	b.readers.mu.Lock()
	defer b.readers.mu.Unlock()
	if br := b.readers.files[num]; br != nil {
		return br, nil
	}
	name := b.path(num)
	f, err := b.fs.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.Corruptf(name, -1, "blob file missing: %v", err)
		}
		return nil, fmt.Errorf("lsmgo: open blob file: %w", err)
	}
	br := &blobReader{file: f}
	if _, err := br.refresh(name, num); err != nil {
		f.Close()
		return nil, err
	}
	b.readers.files[num] = br
	return br, nil
}

// refresh re-reads the file's size and installs a reader over it.
func (br *blobReader) refresh(name string, num base.FileNum) (*blob.Reader, error) {
	st, err := br.file.Stat()
	if err != nil {
		return nil, fmt.Errorf("lsmgo: stat blob file %s: %w", name, err)
	}
	r, err := blob.NewReader(br.file, st.Size(), blob.ReaderOptions{FileNum: num, FileName: name})
	if err != nil {
		return nil, err
	}
	br.r.Store(r)
	return r, nil
}

// close closes every file; appends after it fail with ErrClosed. It does
// not sync: the WAL's last sync synced every blob byte a record in it
// refers to, and the others are garbage.
func (b *blobFiles) close() error {
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	b.closed = true
	var err error
	b.syncMu.Lock()
	if b.active != nil {
		err = b.active.w.Close()
		b.active = nil
	}
	b.syncMu.Unlock()
	b.readers.mu.Lock()
	for num, br := range b.readers.files {
		err = errors.Join(err, br.file.Close())
		br.spare.close()
		delete(b.readers.files, num)
	}
	b.readers.mu.Unlock()
	return err
}

// syncFiles makes the blob files nums durable: recovery replays pointers
// into them from WALs that its edit then retires.
func (b *blobFiles) syncFiles(nums map[base.FileNum]bool) error {
	for num := range nums {
		br, err := b.reader(num)
		if err != nil {
			return err
		}
		if err := br.file.Sync(); err != nil {
			return fmt.Errorf("lsmgo: blob file sync %s: %w", b.path(num), err)
		}
	}
	return nil
}

// entryPointer decodes the pointer an entry of a blob kind holds.
func entryPointer(kind base.Kind, value []byte) (blob.Pointer, error) {
	if kind.HasExpiry() {
		if len(value) < base.ExpiryLen {
			return blob.Pointer{}, fmt.Errorf("value of %d bytes is shorter than its expiry", len(value))
		}
		value = value[base.ExpiryLen:]
	}
	return blob.DecodePointer(value)
}
