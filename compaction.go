package lsmgo

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/compaction"
	"github.com/lsmgo-dev/lsmgo/internal/iter"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
)

// errClosing aborts background work when the DB closes; it is not a
// background error.
var errClosing = errors.New("lsmgo: closing")

// maybeScheduleFlushLocked starts the flush goroutine when memtables wait.
func (db *DB) maybeScheduleFlushLocked() {
	if db.mu.flushing || len(db.mu.imm) == 0 || db.mu.bgErr != nil {
		return
	}
	db.mu.flushing = true
	go db.flushLoop()
}

// flushLoop writes immutable memtables to L0, oldest first, until none
// is left. Flushes continue during Close so nothing waits on a deleted WAL.
func (db *DB) flushLoop() {
	db.mu.Lock()
	defer db.mu.Unlock()
	for len(db.mu.imm) > 0 && db.mu.bgErr == nil {
		m := db.mu.imm[0]
		nextLog := db.mu.mem.logNum
		if len(db.mu.imm) > 1 {
			nextLog = db.mu.imm[1].logNum
		}
		db.mu.Unlock()
		// Every batch registered in m must be inserted, and visible,
		// before the snapshot list is read: a snapshot taken later then
		// sees all of m, so the newest version of each key serves it.
		m.inflight.Wait()
		db.waitVisible(m.maxSeq)
		// The filter's state holds m's batches (they are visible now),
		// so it sees the writes that came with each entry of m.
		drop, release := db.compactionFilter()
		db.mu.Lock()
		snapshots := db.mu.snapshots.seqs()
		db.mu.Unlock()

		metas, err := db.writeTables(m.mt.NewIter(), snapshots, false, nil, nil, drop)
		release()
		if err == nil {
			edit := &manifest.VersionEdit{LogNum: nextLog, LastSeq: m.maxSeq}
			for _, f := range metas {
				edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: 0, Meta: f})
			}
			err = db.logAndApply(edit, metas)
		}
		db.mu.Lock()
		if errors.Is(err, errClosing) {
			// The memtable's writes stay in its WAL for the next Open.
			break
		}
		if err != nil && retryable(err) {
			// The memtable stays queued, readable and backed by its WAL;
			// once too many queue up behind it, writes are refused with
			// ErrNoSpace (noSpaceStallLocked).
			db.mu.flushNoSpace = err
			d := db.noSpaceLocked("flush", err, &db.mu.flushBackoff)
			if !db.sleepLocked(d) {
				break
			}
			continue
		}
		if err != nil {
			db.setBackgroundErrorLocked(fmt.Errorf("lsmgo: flush: %w", err))
			break
		}
		db.mu.flushNoSpace = nil
		db.mu.flushBackoff = 0
		db.mu.imm = db.mu.imm[1:]
		db.mu.flushedID = m.id
		db.m.flushes.Add(1)
		for _, f := range metas {
			db.m.flushBytes.Add(int64(f.Size))
		}
		db.updateReadStateLocked()
		// A retained WAL pins the blob files of its pointers before the
		// memtable lets them go.
		db.retireLog(m.logNum, m.blobPins)
		m.unref() // the list's reference; reads may still hold theirs
		db.mu.cond.Broadcast()
		db.maybeScheduleCompaction()
	}
	db.mu.flushing = false
	db.mu.cond.Broadcast()
}

// maybeScheduleCompaction starts compactions, most urgent first, while
// the worker pool has room. db.mu must be held.
func (db *DB) maybeScheduleCompaction() {
	if db.mu.closing || db.mu.bgErr != nil || time.Now().Before(db.mu.compactRetryAt) {
		return
	}
	for db.mu.compacting < db.opts.MaxConcurrentCompactions {
		v := db.rs.Load().version
		c := db.picker.Pick(v)
		// blobFrom is what a blob rewrite collects; nil lets the
		// compaction choose (newBlobGC).
		var blobFrom map[base.FileNum]bool
		if c == nil {
			// Blob garbage collection waits for the tree's own work:
			// first the merges that make the blob references exact, then
			// the rewrites that collect the files they show to be mostly
			// dead.
			if c = db.pickBlobMerge(v); c == nil {
				quiet := len(db.mu.imm) == 0 && db.mu.mem != nil && db.mu.mem.blobBytes == 0
				if c, blobFrom = db.pickBlobRewrite(v, quiet); c == nil {
					return
				}
			}
		}
		if !db.compactionFitsLocked(c) {
			db.postponeCompactionsLocked(fmt.Errorf("%s: its output would not fit in the free space", c))
			return
		}
		db.startCompactionLocked(c)
		go func() {
			err := db.runCompaction(c, blobFrom)
			db.mu.Lock()
			db.finishCompactionLocked(c, err)
			db.mu.Unlock()
		}()
	}
}

// postponeCompactionsLocked starts no compaction until a backoff has
// passed, after one failed or would not fit for lack of space (err says
// which); a timer then schedules again. Writes meanwhile stall on L0 and
// are refused with ErrNoSpace once it reaches the stop threshold.
// db.mu is held.
func (db *DB) postponeCompactionsLocked(err error) {
	d := db.noSpaceLocked("compaction", err, &db.mu.compactBackoff)
	db.mu.compactRetryAt = time.Now().Add(d)
	time.AfterFunc(d, func() {
		db.mu.Lock()
		db.maybeScheduleCompaction()
		db.mu.Unlock()
	})
}

// SetMaxConcurrentCompactions changes the bound of the compaction worker
// pool while the DB runs; n < 1 means the default. Running compactions
// finish.
func (db *DB) SetMaxConcurrentCompactions(n int) {
	o := Options{MaxConcurrentCompactions: n}
	n = o.withDefaults().MaxConcurrentCompactions
	db.mu.Lock()
	defer db.mu.Unlock()
	db.opts.MaxConcurrentCompactions = n
	db.maybeScheduleCompaction()
}

func (db *DB) startCompactionLocked(c *compaction.Compaction) {
	for _, f := range c.AllInputs() {
		f.Compacting = true
	}
	db.mu.compacting++
	db.mu.started++
	if db.mu.running == nil {
		db.mu.running = make(map[*compaction.Compaction]uint64)
	}
	db.mu.running[c] = db.mu.started
}

func (db *DB) finishCompactionLocked(c *compaction.Compaction, err error) {
	for _, f := range c.AllInputs() {
		f.Compacting = false
	}
	db.mu.compacting--
	delete(db.mu.running, c)
	switch {
	case err == nil:
		db.mu.compactBackoff = 0
	case errors.Is(err, errClosing):
	case retryable(err):
		db.postponeCompactionsLocked(err)
	default:
		db.noteCorruption(err)
		db.setBackgroundErrorLocked(fmt.Errorf("lsmgo: compaction %s: %w", c, err))
	}
	db.mu.cond.Broadcast()
	db.maybeScheduleCompaction()
}

// runCompaction merges the inputs into new tables of the output level and
// installs the result. A single input file with nothing to merge below it
// just moves down a level. blobFrom, if not nil, names the blob files
// whose values it is to copy out (newBlobGC).
func (db *DB) runCompaction(c *compaction.Compaction, blobFrom map[base.FileNum]bool) error {
	edit := &manifest.VersionEdit{}
	for i, files := range c.Inputs {
		level := c.StartLevel
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFile{Level: level, FileNum: f.FileNum})
		}
	}
	if c.TrivialMove() {
		edit.NewFiles = []manifest.NewFile{{Level: c.OutputLevel, Meta: c.Inputs[0][0]}}
		db.m.moves.Add(1)
		return db.installCompaction(edit, nil)
	}

	input, err := db.compactionInput(c)
	if err != nil {
		return err
	}
	drop, release := db.compactionFilter()
	db.mu.Lock()
	snapshots := db.mu.snapshots.seqs()
	db.mu.Unlock()
	splitter := compaction.NewOutputSplitter(c, db.opts.TargetFileSize)
	gc := db.newBlobGC(db.rs.Load().version, blobFrom)
	metas, err := db.writeTables(input, snapshots, c.Bottommost, splitter, gc, drop)
	release()
	if err == nil {
		err = gc.finish()
		if err != nil {
			db.removeTables(metas)
		}
	}
	if err != nil {
		gc.release(false)
		return err
	}
	for _, f := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: c.OutputLevel, Meta: f})
		db.m.compactWritten.Add(int64(f.Size))
	}
	for _, f := range c.AllInputs() {
		db.m.compactRead.Add(int64(f.Size))
	}
	db.m.compactions.Add(1)
	// On failure the pin on the blob file stays, since the edit may name
	// it (installCompaction says what happens to the output tables).
	if err := db.installCompaction(edit, metas); err != nil {
		return err
	}
	gc.release(true)
	if inputsPointToBlobs(c) {
		// Blob files the inputs pointed into may now be kept only by
		// retained WALs, and count in their bound.
		db.trimRetained()
	}
	return nil
}

// inputsPointToBlobs reports whether any input table of c points into
// blob files.
func inputsPointToBlobs(c *compaction.Compaction) bool {
	for _, f := range c.AllInputs() {
		if len(f.BlobRefs) > 0 {
			return true
		}
	}
	return false
}

// installCompaction logs edit, whose new tables not already in the
// version are outputs, and installs the new version.
func (db *DB) installCompaction(edit *manifest.VersionEdit, outputs []*manifest.FileMetadata) error {
	if err := db.logAndApply(edit, outputs); err != nil {
		return err
	}
	db.mu.Lock()
	db.updateReadStateLocked()
	db.mu.Unlock()
	return nil
}

// compactionInput merges every input file: each L0 table alone (they
// overlap), each deeper level as one concatenation.
func (db *DB) compactionInput(c *compaction.Compaction) (base.InternalIterator, error) {
	var children []base.InternalIterator
	closeAll := func() {
		for _, it := range children {
			it.Close()
		}
	}
	for i, files := range c.Inputs {
		level := c.StartLevel
		if i == 1 {
			level = c.OutputLevel
		}
		if level == 0 {
			for _, f := range files {
				it, err := db.tables.newCompactionIter(f)
				if err != nil {
					closeAll()
					return nil, err
				}
				children = append(children, it)
			}
		} else if len(files) > 0 {
			children = append(children, newLevelIter(files, db.tables.newCompactionIter))
		}
	}
	return iter.NewMergingIter(children...), nil
}

// newLevelIter concatenates the tables of one level (L1 and below),
// opening each with open when the iterator reaches it.
func newLevelIter(files []*manifest.FileMetadata, open func(*manifest.FileMetadata) (base.InternalIterator, error)) base.InternalIterator {
	return iter.NewLevelIter(files,
		func(f *manifest.FileMetadata) ([]byte, []byte) { return f.Smallest.UserKey, f.Largest.UserKey },
		open)
}

// writeTables writes what the compaction filter keeps of input into new
// tables, cut where splitter says (one table when splitter is nil), and
// makes their directory entries durable. On error it removes what it wrote.
//
// A non-nil gc relocates the values of blob files being collected; a
// non-nil drop is the compaction filter (CompactionFilter). A version it
// turns into a deletion is written without its value, so the blob bytes
// it pointed to leave the table's references.
func (db *DB) writeTables(input base.InternalIterator, snapshots []base.SeqNum, bottommost bool, splitter *compaction.OutputSplitter, gc *blobGC, drop func([]byte) bool) (metas []*manifest.FileMetadata, err error) {
	it := compaction.NewIter(input, snapshots, bottommost, db.opts.Now().UnixMilli())
	it.SetFilter(drop)
	defer func() { db.m.filtered.Add(it.Filtered()) }()
	var w *sstable.Writer
	var num base.FileNum
	// written collects the finished tables. The error paths return nil
	// for metas before this deferred cleanup runs, so it cannot use metas.
	var written []*manifest.FileMetadata
	defer func() {
		if cerr := input.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			if w != nil {
				w.Close()
				db.removeFile(base.FileTypeTable, num)
			}
			db.removeTables(written)
		}
	}()
	// refs tallies the value bytes the table being written points to in
	// each blob file.
	refs := make(map[base.FileNum]uint64)
	finish := func() error {
		wm, err := w.Close()
		w = nil
		if err != nil {
			db.removeFile(base.FileTypeTable, num)
			return err
		}
		written = append(written, &manifest.FileMetadata{
			FileNum: num, Size: wm.Size,
			Smallest: wm.Smallest, Largest: wm.Largest,
			SmallestSeq: wm.SmallestSeq, LargestSeq: wm.LargestSeq,
			BlobRefs: blobRefs(refs),
		})
		clear(refs)
		return nil
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%1024 == 0 && db.closed.Load() {
			return nil, errClosing
		}
		key := it.Key()
		if splitter != nil {
			// The splitter sees every key, even before the first table
			// is open, so it can track grandparent overlap from the start.
			var size uint64
			if w != nil {
				size = w.EstimatedSize()
			}
			if splitter.ShouldCut(key, size) && w != nil {
				if err := finish(); err != nil {
					return nil, err
				}
			}
		}
		if w == nil {
			num = db.vs.NewFileNum()
			f, err := db.fs.Create(db.path(base.MakeFilename(base.FileTypeTable, num)))
			if err != nil {
				return nil, fmt.Errorf("lsmgo: create table: %w", err)
			}
			w = sstable.NewWriter(f, sstable.WriterOptions{
				BlockSize:       db.opts.BlockSize,
				BloomBitsPerKey: db.opts.BloomBitsPerKey,
				Compression:     db.opts.Compression.sstableCompression(),
			})
			if splitter != nil {
				splitter.Reset()
			}
		}
		value := it.Value()
		if key.Kind().IsBlob() {
			if gc != nil {
				if value, err = gc.relocate(key, value); err != nil {
					return nil, err
				}
			}
			p, err := entryPointer(key.Kind(), value)
			if err != nil {
				return nil, base.Corruptf("", -1, "key %s: blob pointer: %v", key, err)
			}
			refs[p.FileNum] += p.RecordLen(len(key.UserKey))
		}
		if err := w.Add(key, value); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if w != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	if len(written) > 0 {
		if err := syncDir(db.fs, db.dirname); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// blobRefs lists a table's tally of blob bytes in file number order, or
// nil when it points into no blob file.
func blobRefs(refs map[base.FileNum]uint64) []manifest.BlobRef {
	if len(refs) == 0 {
		return nil
	}
	out := make([]manifest.BlobRef, 0, len(refs))
	for num, n := range refs {
		out = append(out, manifest.BlobRef{FileNum: num, Bytes: n})
	}
	slices.SortFunc(out, func(a, b manifest.BlobRef) int { return cmp.Compare(a.FileNum, b.FileNum) })
	return out
}

// removeTables deletes tables that never made it into a version.
func (db *DB) removeTables(metas []*manifest.FileMetadata) {
	for _, f := range metas {
		db.removeFile(base.FileTypeTable, f.FileNum)
	}
}

// removeFile deletes a file the DB no longer needs; failure only leaks
// disk space until the next Open, so it is logged, not returned.
func (db *DB) removeFile(t base.FileType, num base.FileNum) {
	name := db.path(base.MakeFilename(t, num))
	if err := db.fs.Remove(name); err != nil {
		db.opts.Logger.Warn("lsmgo: cannot remove obsolete file", "file", name, "err", err)
	}
}

// deleteObsoleteTable is the version set's callback for a table no live
// version references.
func (db *DB) deleteObsoleteTable(num base.FileNum) {
	db.tables.evict(num)
	db.removeFile(base.FileTypeTable, num)
	// The table may have been the last to point into a blob file.
	db.blobs.removeObsolete()
}

// logAndApply logs edit in the manifest. When that fails and the edit is
// certainly in no manifest (manifest.ErrNotLogged), the new tables outputs
// are removed, which frees the space a full disk needs. Any other failure
// may have left the edit in the manifest, unsynced: the next Open may read
// it, so the tables stay (that Open removes them if nothing names them),
// and the error is marked as one that no retry can heal.
func (db *DB) logAndApply(edit *manifest.VersionEdit, outputs []*manifest.FileMetadata) error {
	err := db.vs.LogAndApply(edit)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, manifest.ErrNotLogged):
		db.removeTables(outputs)
		return err
	}
	return &unknownStateError{err}
}

// unknownStateError marks a failure after which what is on disk is
// unknown, such as a failed fsync: the kernel may have dropped the dirty
// pages, so a retry that succeeds would prove nothing. It is never
// retried; only Resume, which rewrites what memory holds, clears it.
type unknownStateError struct{ err error }

func (e *unknownStateError) Error() string { return e.err.Error() }
func (e *unknownStateError) Unwrap() error { return e.err }

// retryable says whether a flush or compaction that failed with err may
// simply run again later: the disk was full (ENOSPC, EDQUOT) and the
// failed attempt left nothing behind (its output files are removed).
func retryable(err error) bool {
	var u *unknownStateError
	return base.IsNoSpace(err) && !errors.As(err, &u)
}

// Backoff bounds for work retried after the disk filled up: short enough
// that writes resume soon after space is freed, long enough that a disk
// that stays full is not probed hundreds of times a second.
const (
	minNoSpaceBackoff = 100 * time.Millisecond
	maxNoSpaceBackoff = 10 * time.Second
)

// noSpaceLocked records that background work (what) failed for lack of
// space and returns how long to wait before retrying it, doubling
// *backoff up to its cap. It logs the first failure of a streak only, so a
// full disk does not flood the log. db.mu is held.
func (db *DB) noSpaceLocked(what string, err error, backoff *time.Duration) time.Duration {
	db.m.noSpaceRetries.Add(1)
	db.mu.lastNoSpace = time.Now()
	// Waiters (a stalled write, Flush) decide again now.
	db.mu.cond.Broadcast()
	if *backoff == 0 {
		db.opts.Logger.Warn("lsmgo: disk full; retrying with backoff while reads go on (doc/operations.md)",
			"dir", db.dirname, "work", what, "err", err)
		*backoff = minNoSpaceBackoff
	} else {
		*backoff = min(2**backoff, maxNoSpaceBackoff)
	}
	return *backoff
}

// sleepLocked waits d with db.mu released, or less if the DB starts
// closing; it reports whether the DB is still open. db.mu is held.
func (db *DB) sleepLocked(d time.Duration) bool {
	woke := false
	t := time.AfterFunc(d, func() {
		db.mu.Lock()
		woke = true
		db.mu.cond.Broadcast()
		db.mu.Unlock()
	})
	for !woke && !db.mu.closing && !db.mu.retryNow {
		db.mu.cond.Wait()
	}
	db.mu.retryNow = false
	t.Stop()
	return !db.mu.closing
}
