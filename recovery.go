package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/internal/wal"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// recover replays the WAL files the manifest still needs into L0 tables,
// records them with one version edit, and starts a fresh WAL. names is the
// directory listing.
//
// A WAL's replay ends early at a torn tail and, unless
// Options.StrictWALRecovery, at the first damaged record: the bytes from
// there on are dropped, with a warning, so the DB holds exactly the writes
// up to a point in time (doc/durability.md has the rules).
//
// Flushing everything at Open (rather than keeping the replayed writes in
// a memtable) means the old WAL files can be deleted at once, and a torn
// or dropped tail never has to be written over: writes after Open, which
// reuse the dropped records' sequence numbers, go to a new WAL, and the
// edit that names it puts the old ones below the log number recovery
// reads from. Until that edit is durable, another Open replays the same
// WALs to the same point.
func (db *DB) recover(names []string) error {
	if errs := missingManifestFiles(db.fs, db.dirname, db.vs, names); len(errs) > 0 {
		return errs[0]
	}
	var logs []base.FileNum
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		db.vs.MarkFileNumUsed(num)
		if t == base.FileTypeLog && num >= db.vs.LogNum() {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)

	maxSeq := db.vs.LastSeq()
	mt := memtable.New(db.opts.MemTableSize)
	var metas []*manifest.FileMetadata
	flush := func() error {
		if mt.Empty() {
			return nil
		}
		out, err := db.writeTables(mt.NewIter(), nil, false, nil)
		if err != nil {
			return err
		}
		metas = append(metas, out...)
		mt = memtable.New(db.opts.MemTableSize)
		return nil
	}
	fail := func(err error) error {
		db.removeTables(metas)
		return err
	}
	// stop is where replay ended early: a torn tail or, unless
	// StrictWALRecovery, the first damaged record. Older WALs were synced
	// before a newer one was created (rotateMemtableLocked), so only the
	// last WAL that holds records may end early; WALs after it can only be
	// ones an interrupted Open created, which hold nothing.
	var stop *walStop
	var ends []walStop
	for _, num := range logs {
		name := db.path(base.MakeFilename(base.FileTypeLog, num))
		f, err := db.fs.Open(name)
		if err != nil {
			return fail(fmt.Errorf("lsmgo: open WAL: %w", err))
		}
		r := wal.NewReader(f, name)
		var end *walStop
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil && stop == nil && !db.opts.StrictWALRecovery {
				if off, ok := r.Damage(); ok {
					end = &walStop{file: name, off: off, err: err, damaged: true}
					break
				}
			}
			if stop != nil && (err == nil || errors.Is(err, ErrCorruption)) {
				// Records (or damage, which proves records) follow
				// where an earlier WAL ended early.
				f.Close()
				return fail(stop.err)
			}
			if err != nil {
				f.Close()
				return fail(err)
			}
			seq, count, err := checkBatch(rec)
			if err != nil {
				f.Close()
				return fail(walRecordError(name, r.Offset(), err))
			}
			if need := memSizeEstimate(rec); mt.Size()+need > mt.Capacity() {
				if err := flush(); err != nil {
					f.Close()
					return fail(err)
				}
				if need > mt.Capacity() {
					mt = memtable.New(2 * need)
				}
			}
			if err := applyBatch(mt, rec); err != nil {
				f.Close()
				return fail(base.Corruptf(name, r.Offset(), "WAL record: %v", err))
			}
			if last := seq + base.SeqNum(count) - 1; count > 0 && last > maxSeq {
				maxSeq = last
			}
		}
		if off, ok := r.TornTail(); ok {
			end = &walStop{file: name, off: off, err: base.Corruptf(name, off, "damaged records in a WAL followed by a newer WAL")}
		}
		if end != nil {
			dataEnd, err := nonZeroEnd(f)
			if err != nil {
				f.Close()
				return fail(fmt.Errorf("lsmgo: read WAL %s: %w", name, err))
			}
			end.dropped = max(dataEnd-end.off, 0)
			ends = append(ends, *end)
			if stop == nil {
				stop = end
			}
		}
		f.Close()
	}
	if err := flush(); err != nil {
		return fail(err)
	}

	newLog := db.vs.NewFileNum()
	log, err := db.createWAL(newLog)
	if err != nil {
		return fail(err)
	}
	edit := &manifest.VersionEdit{LogNum: newLog, LastSeq: maxSeq}
	for _, f := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: 0, Meta: f})
	}
	if err := db.vs.LogAndApply(edit); err != nil {
		// The edit may have reached the manifest even though this failed
		// (say, only its fsync did), and it names the tables: they stay
		// for the next Open, which removes them if nothing names them.
		log.file.Close()
		return err
	}
	for _, num := range logs {
		db.removeFile(base.FileTypeLog, num)
	}
	for _, e := range ends {
		db.m.walRecoveryDropped.Add(e.dropped)
		if e.damaged {
			db.opts.Logger.Warn("lsmgo: WAL damaged; recovered the records before the damage and dropped the rest "+
				"(the unsynced end of the log, partly written back when the power failed, or lost data: "+
				"Options.StrictWALRecovery refuses to open instead)",
				"file", e.file, "offset", e.off, "dropped_bytes", e.dropped, "err", e.err)
		} else {
			db.opts.Logger.Warn("lsmgo: WAL ends in a torn write; recovered up to it",
				"file", e.file, "offset", e.off, "dropped_bytes", e.dropped)
		}
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	db.mu.log = log
	db.mu.nextSeq = maxSeq + 1
	db.visibleSeq.Store(uint64(maxSeq + 1))
	db.mu.mem = db.newMemTable(newLog, 0)
	db.updateReadStateLocked()
	return nil
}

// walStop is where the replay of a WAL ended before the end of the file.
type walStop struct {
	file string
	// off is where the dropped bytes begin: the start of the torn tail or
	// of the damaged record. Every record before it was replayed.
	off     int64
	dropped int64
	// damaged is set for damage followed by an intact record, as opposed
	// to a torn tail.
	damaged bool
	// err is what Open returns should a later WAL hold records.
	err error
}

// checkBatch validates a WAL record as a batch before any of it is applied,
// so a damaged record never half-applies.
func checkBatch(rec []byte) (seq base.SeqNum, count uint32, err error) {
	if err := checkWALBatch(rec); err != nil {
		return 0, 0, err
	}
	seq, count = batchrepr.Seq(rec), batchrepr.Count(rec)
	if seq == 0 || seq+base.SeqNum(count) > base.SeqNumMax {
		return 0, 0, errors.New("sequence number out of range")
	}
	return seq, count, nil
}

// removeObsoleteFiles deletes what a crash or an earlier run left behind:
// tables no version references, WALs and manifests no longer needed, and
// temporary files. It runs at Open, before any background work starts.
func (db *DB) removeObsoleteFiles() {
	names, err := db.fs.List(db.dirname)
	if err != nil {
		db.opts.Logger.Warn("lsmgo: cannot list directory for cleanup", "err", err)
		return
	}
	live := db.vs.LiveFiles()
	db.mu.Lock()
	curLog := db.mu.log.num
	db.mu.Unlock()
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch {
		case t == base.FileTypeTable && !live[num],
			t == base.FileTypeLog && num != curLog,
			t == base.FileTypeManifest && num != db.vs.ManifestFileNum(),
			t == base.FileTypeTemp:
			db.removeFile(t, num)
		}
	}
}

// nonZeroEnd returns the offset just past the last nonzero byte of f: the
// zeros a SyncAlways DB writes ahead of its records are not data, and a
// tail recovery drops is counted without them.
func nonZeroEnd(f vfs.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for end := st.Size(); end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		// A file shorter than Stat said ends where the read ended.
		b := buf[:n]
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
