package lsmgo

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

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
		db.mu.Lock()
		snapshots := db.mu.snapshots.seqs()
		db.mu.Unlock()

		metas, err := db.writeTables(m.mt.NewIter(), snapshots, false, nil, nil)
		if err == nil {
			edit := &manifest.VersionEdit{LogNum: nextLog, LastSeq: m.maxSeq}
			for _, f := range metas {
				edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: 0, Meta: f})
			}
			// A failed LogAndApply may have written the edit and failed
			// only to sync it; the next Open may then read it, so the
			// tables stay. That Open removes them if nothing names them.
			err = db.vs.LogAndApply(edit)
		}
		db.mu.Lock()
		if errors.Is(err, errClosing) {
			// The memtable's writes stay in its WAL for the next Open.
			break
		}
		if err != nil {
			db.setBackgroundErrorLocked(fmt.Errorf("lsmgo: flush: %w", err))
			break
		}
		db.mu.imm = db.mu.imm[1:]
		db.mu.flushedID = m.id
		db.m.flushes.Add(1)
		for _, f := range metas {
			db.m.flushBytes.Add(int64(f.Size))
		}
		db.updateReadStateLocked()
		m.unref() // the list's reference; reads may still hold theirs
		db.removeFile(base.FileTypeLog, m.logNum)
		db.mu.cond.Broadcast()
		db.maybeScheduleCompaction()
	}
	db.mu.flushing = false
	db.mu.cond.Broadcast()
}

// maybeScheduleCompaction starts compactions, most urgent first, while
// the worker pool has room. db.mu must be held.
func (db *DB) maybeScheduleCompaction() {
	if db.mu.closing || db.mu.bgErr != nil {
		return
	}
	for db.mu.compacting < db.opts.MaxConcurrentCompactions {
		v := db.rs.Load().version
		c := db.picker.Pick(v)
		if c == nil {
			// Blob garbage collection waits for the tree's own work.
			if c = db.pickBlobRewrite(v); c == nil {
				return
			}
		}
		db.startCompactionLocked(c)
		go func() {
			err := db.runCompaction(c)
			db.mu.Lock()
			db.finishCompactionLocked(c, err)
			db.mu.Unlock()
		}()
	}
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
}

func (db *DB) finishCompactionLocked(c *compaction.Compaction, err error) {
	for _, f := range c.AllInputs() {
		f.Compacting = false
	}
	db.mu.compacting--
	if err != nil && !errors.Is(err, errClosing) {
		db.setBackgroundErrorLocked(fmt.Errorf("lsmgo: compaction %s: %w", c, err))
	}
	db.mu.cond.Broadcast()
	db.maybeScheduleCompaction()
}

// runCompaction merges the inputs into new tables of the output level and
// installs the result. A single input file with nothing to merge below it
// just moves down a level.
func (db *DB) runCompaction(c *compaction.Compaction) error {
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
		return db.installCompaction(edit)
	}

	db.mu.Lock()
	snapshots := db.mu.snapshots.seqs()
	db.mu.Unlock()
	input, err := db.compactionInput(c)
	if err != nil {
		return err
	}
	splitter := compaction.NewOutputSplitter(c, db.opts.TargetFileSize)
	gc := db.newBlobGC(db.rs.Load().version)
	metas, err := db.writeTables(input, snapshots, c.Bottommost, splitter, gc)
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
	// On failure the outputs stay, for the reason flushLoop keeps its
	// tables; so does the pin on the blob file, which the edit may name.
	if err := db.installCompaction(edit); err != nil {
		return err
	}
	gc.release(true)
	return nil
}

func (db *DB) installCompaction(edit *manifest.VersionEdit) error {
	if err := db.vs.LogAndApply(edit); err != nil {
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
				it, err := db.tables.newIter(f, nil, nil)
				if err != nil {
					closeAll()
					return nil, err
				}
				children = append(children, it)
			}
		} else if len(files) > 0 {
			children = append(children, db.newLevelIter(files, nil, nil))
		}
	}
	return iter.NewMergingIter(children...), nil
}

func (db *DB) newLevelIter(files []*manifest.FileMetadata, lower, upper []byte) base.InternalIterator {
	return iter.NewLevelIter(files,
		func(f *manifest.FileMetadata) ([]byte, []byte) { return f.Smallest.UserKey, f.Largest.UserKey },
		func(f *manifest.FileMetadata) (base.InternalIterator, error) {
			return db.tables.newIter(f, lower, upper)
		})
}

// writeTables writes what the compaction filter keeps of input into new
// tables, cut where splitter says (one table when splitter is nil), and
// makes their directory entries durable. On error it removes what it wrote.
//
// A non-nil gc relocates the values of blob files being collected.
func (db *DB) writeTables(input base.InternalIterator, snapshots []base.SeqNum, bottommost bool, splitter *compaction.OutputSplitter, gc *blobGC) (metas []*manifest.FileMetadata, err error) {
	it := compaction.NewIter(input, snapshots, bottommost, db.opts.Now().UnixMilli())
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
			refs[p.FileNum] += p.Length
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
