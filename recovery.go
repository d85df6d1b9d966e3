package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/internal/record"
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
	logs := logsToReplay(db.vs, names)
	r := &walReplay{db: db, maxSeq: db.vs.LastSeq(), next: db.vs.LastSeq() + 1, mt: memtable.New(db.opts.MemTableSize)}
	defer r.release()
	err := r.replay(logs)
	if err != nil {
		db.removeTables(r.metas)
	}
	// The replayed pointers go into tables, and the WALs that proved them
	// away: the values they point to must be durable first.
	if err == nil {
		if err = db.blobs.syncFiles(r.blobFiles); err != nil {
			db.removeTables(r.metas)
		}
	}
	var log walFile
	if err == nil {
		log, err = db.commitRecovery(r.metas, r.maxSeq)
	}
	if retryable(err) {
		return db.recoverInMemory(logs, err)
	}
	if err != nil {
		return err
	}
	blobs := slices.Collect(maps.Keys(r.blobFiles))
	for _, num := range logs {
		db.retireLog(num, blobs)
	}
	r.reportDropped()
	db.resumeWrites(log, r.maxSeq, nil)
	return nil
}

// recoverInMemory is recovery on a disk too full to flush the replayed
// WALs (flushErr says why): it replays each WAL into a memtable of its
// own and serves with them queued for flush, as if they had been rotated
// just before a crash. The WALs stay until their memtables are flushed,
// which the flush loop retries until space is back; the manifest is not
// touched. Each WAL has its own memtable so that the flush of one retires
// exactly its WAL, as in normal operation.
//
// A WAL whose replay ended early is cut where the replay stopped: writes
// after Open go to a newer WAL, and a damaged tail followed by records in
// a newer WAL is what the next Open must refuse.
func (db *DB) recoverInMemory(logs []base.FileNum, flushErr error) error {
	db.opts.Logger.Warn("lsmgo: disk full at Open; serving the WALs' writes from memory until they can be flushed",
		"dir", db.dirname, "err", flushErr)
	r := &walReplay{db: db, maxSeq: db.vs.LastSeq(), next: db.vs.LastSeq() + 1, inMemory: true}
	if err := r.replay(logs); err != nil {
		return err
	}
	if r.stop != nil {
		if err := cutWAL(db.fs, r.stop.file, r.stop.off); err != nil {
			return fmt.Errorf("lsmgo: disk full (%v), and the damaged end of WAL %s cannot be cut: %w", flushErr, r.stop.file, err)
		}
	}
	newLog := db.vs.NewFileNum()
	log, err := db.wal.create(newLog)
	if err != nil {
		return err
	}
	r.reportDropped()
	db.resumeWrites(log, r.maxSeq, r.mems)
	return nil
}

// cutWAL truncates WAL file name to size and syncs it.
func cutWAL(fs vfs.FS, name string, size int64) error {
	if err := vfs.Truncate(fs, name, size); err != nil {
		return err
	}
	f, err := fs.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// logsToReplay marks every file number in the directory listing names as
// used, so no new file takes one, and returns the WALs at or after the
// manifest's log number, oldest first: those hold the writes no table does.
func logsToReplay(vs *manifest.VersionSet, names []string) []base.FileNum {
	var logs []base.FileNum
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		vs.MarkFileNumUsed(num)
		if t == base.FileTypeLog && num >= vs.LogNum() {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)
	return logs
}

// walReplay is one recovery's replay of WAL files into memtables, each
// flushed to an L0 table as it fills.
type walReplay struct {
	db *DB
	mt *memtable.Memtable
	// metas are the tables written so far; recovery removes them if it
	// fails before an edit names them.
	metas []*manifest.FileMetadata
	// maxSeq is the largest sequence number replayed (or the manifest's).
	maxSeq base.SeqNum
	// stop is where replay ended early: a torn tail or, unless
	// StrictWALRecovery, the first damaged record. Older WALs were synced
	// before a newer one was created (walWriter.rotate), so only the last
	// WAL that holds records may end early; WALs after it can only be
	// ones an interrupted Open created, which hold nothing.
	stop *walStop
	// ends lists every WAL whose replay ended early, for the warnings.
	ends []*walStop
	// next is the sequence number after the last record replayed (after
	// the manifest's last one before any): a close marker with a larger
	// one proves the entries in between lost (wal_close.go), and losses
	// lists each such proof.
	next   base.SeqNum
	losses []walLoss
	// inMemory replays each WAL into a memtable of its own, collected in
	// mems, and never writes a table (recoverInMemory).
	inMemory bool
	mems     []*memTable
	// blobFiles are the blob files the replayed records point into.
	blobFiles map[base.FileNum]bool
	// blobW writes the values replay separates (separate), into a file
	// pinned until recovery is done (release).
	blobW   *blob.Writer
	blobNum base.FileNum
}

// replay replays the WAL files logs in order and flushes what remains in
// the memtable.
func (r *walReplay) replay(logs []base.FileNum) error {
	for _, num := range logs {
		if err := r.replayFile(num); err != nil {
			return err
		}
	}
	if r.inMemory {
		return nil
	}
	return r.flush()
}

// replayFile applies the records of WAL file num, up to a torn tail or
// (unless StrictWALRecovery) a damaged record, which it records in r.ends.
func (r *walReplay) replayFile(num base.FileNum) error {
	db := r.db
	if r.inMemory {
		r.mt = memtable.New(db.opts.MemTableSize)
		defer r.keepMemtable(num)
	}
	name := db.path(base.MakeFilename(base.FileTypeLog, num))
	f, err := db.fs.Open(name)
	if err != nil {
		return fmt.Errorf("lsmgo: open WAL: %w", err)
	}
	defer f.Close()
	lr := record.NewReader(f, name)
	var end *walStop
	for {
		rec, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && r.stop == nil && !db.opts.StrictWALRecovery {
			if off, ok := lr.Damage(); ok {
				end = &walStop{file: name, off: off, err: err, damaged: true}
				break
			}
		}
		if err == nil && isValidCloseMarker(rec) {
			// Adds nothing, so it may follow an early end; it says
			// whether that end lost acknowledged writes.
			if lerr := r.closeMarker(name, lr.Offset(), rec); lerr != nil {
				return lerr
			}
			continue
		}
		if r.stop != nil && (err == nil || errors.Is(err, ErrCorruption)) {
			// Records (or damage, which proves records) follow where an
			// earlier WAL ended early.
			return r.stop.err
		}
		if err != nil {
			return err
		}
		if err := r.apply(name, lr.Offset(), rec); err != nil {
			var bad *badPointerError
			if !errors.As(err, &bad) {
				return err
			}
			// The record's blob bytes never reached the disk: what a
			// crash leaves of a write that was never acknowledged as
			// durable (doc/blob.md). It ends replay like damage.
			off := lr.Offset()
			if db.opts.StrictWALRecovery {
				if _, nerr := lr.Next(); nerr == nil {
					return bad.err
				}
			}
			end = &walStop{file: name, off: off, err: bad.err, damaged: true}
			break
		}
	}
	if off, ok := lr.TornTail(); ok {
		end = &walStop{file: name, off: off, err: base.Corruptf(name, off, "damaged records in a WAL followed by a newer WAL")}
	}
	if end == nil {
		return nil
	}
	dataEnd, err := nonZeroEnd(f)
	if err != nil {
		return fmt.Errorf("lsmgo: read WAL %s: %w", name, err)
	}
	end.dropped = max(dataEnd-end.off, 0)
	if from, ok := lr.IntactAfter(); ok {
		end.intactFollows = true
		end.intact = droppedRecords(f, name, from)
	}
	r.ends = append(r.ends, end)
	if r.stop == nil {
		r.stop = end
	}
	return nil
}

// apply checks the WAL record rec, read at offset off of WAL file name, as
// a batch and inserts it into the memtable, flushing the memtable first
// when the batch does not fit.
func (r *walReplay) apply(name string, off int64, rec []byte) error {
	if r.db.opts.ValueThreshold > 0 {
		sep, err := r.separate(rec)
		if err != nil {
			return err
		}
		if sep != nil {
			rec = sep
		}
	}
	seq, count, err := checkBatch(rec)
	if err != nil {
		return walRecordError(name, off, err)
	}
	if err := r.checkPointers(name, off, rec); err != nil {
		return err
	}
	if need := memSizeEstimate(rec); r.mt.Size()+need > r.mt.Capacity() {
		if r.inMemory {
			if err := r.grow(need); err != nil {
				return err
			}
		} else {
			if err := r.flush(); err != nil {
				return err
			}
			if need > r.mt.Capacity() {
				r.mt = memtable.New(2 * need)
			}
		}
	}
	if err := applyBatch(r.mt, rec); err != nil {
		return base.Corruptf(name, off, "WAL record: %v", err)
	}
	if last := seq + base.SeqNum(count) - 1; count > 0 && last > r.maxSeq {
		r.maxSeq = last
	}
	r.next = seq + base.SeqNum(count)
	return nil
}

// closeMarker takes note of the close marker rec, read at offset off of
// WAL name: entries between the last record replayed and the marker's
// sequence number were acknowledged and are lost, and the early end
// replay met before it, if any, is a loss rather than a crash's torn
// write. StrictWALRecovery refuses to open then.
func (r *walReplay) closeMarker(name string, off int64, rec []byte) error {
	seq := batchrepr.Seq(rec)
	if r.stop != nil {
		r.stop.closed = true
	}
	if seq <= r.next {
		return nil
	}
	loss := walLoss{marker: name, from: r.next, to: seq}
	if r.db.opts.StrictWALRecovery {
		return base.Corruptf(name, off, "%s", loss.reason())
	}
	r.losses = append(r.losses, loss)
	r.next = seq
	return nil
}

// separate returns the WAL record rec with every inline value of at least
// ValueThreshold bytes moved to a blob file, as Apply would have stored
// it, or nil when it holds none (or does not decode: checkBatch reports
// that). So a WAL written without separation, or by a version that let an
// entry too large for a table through, is recovered with separation on.
func (r *walReplay) separate(rec []byte) ([]byte, error) {
	out, err := separateRecord(rec, r.db.opts.ValueThreshold, func(key, value []byte) (blob.Pointer, error) {
		if r.blobW == nil {
			num, f, err := r.db.blobs.create()
			if err != nil {
				return blob.Pointer{}, err
			}
			r.blobNum, r.blobW = num, blob.NewWriter(f, num, r.db.blobs.path(num))
		}
		return r.blobW.Add(key, value)
	})
	if err != nil || out == nil {
		return nil, err
	}
	// checkPointers reads the values back from the file.
	if err := r.blobW.Flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// separateRecord returns the WAL record rec with every inline set value of
// at least threshold bytes replaced by the pointer add stores it under, or
// nil when rec holds no such value or does not decode.
func separateRecord(rec []byte, threshold int, add func(key, value []byte) (blob.Pointer, error)) ([]byte, error) {
	br, err := batchrepr.NewReader(rec)
	if err != nil {
		return nil, nil
	}
	var out []byte
	var v []byte
	for i := 0; ; i++ {
		kind, key, value, ok, err := br.Next()
		if err != nil {
			return nil, nil
		}
		if !ok {
			break
		}
		prefix := 0
		if kind.HasExpiry() {
			prefix = base.ExpiryLen
		}
		large := (kind == base.KindSet || kind == base.KindSetExpiry) && len(value)-prefix >= threshold
		if out == nil {
			if !large {
				continue
			}
			// Copy the records before this one as they are.
			out = batchrepr.New()
			batchrepr.SetSeq(out, batchrepr.Seq(rec))
			pr, _ := batchrepr.NewReader(rec)
			for range i {
				k, key, value, _, _ := pr.Next()
				out = batchrepr.Append(out, k, key, value)
			}
		}
		if large {
			p, err := add(key, value[prefix:])
			if err != nil {
				return nil, err
			}
			kind = base.KindSetBlob
			if prefix > 0 {
				kind = base.KindSetExpiryBlob
			}
			v = p.Append(append(v[:0], value[:prefix]...))
			value = v
		}
		out = batchrepr.Append(out, kind, key, value)
	}
	return out, nil
}

// release closes the file separate wrote and drops its pin: after the
// recovery edit, tables point into it; after a failure nothing does.
func (r *walReplay) release() {
	if r.blobW == nil {
		return
	}
	size := r.blobW.Size()
	if err := r.blobW.Close(); err == nil {
		r.db.blobs.setSize(r.blobNum, size)
	}
	r.blobW = nil
	r.db.blobs.unpin([]base.FileNum{r.blobNum})
}

// badPointerError is a WAL record whose blob value is missing or damaged.
type badPointerError struct{ err error }

func (e *badPointerError) Error() string { return e.err.Error() }

// checkPointers reads and verifies every value a WAL record (rec, checked
// by checkBatch, at offset off of WAL name) points to in blob files, and
// notes the files.
func (r *walReplay) checkPointers(name string, off int64, rec []byte) error {
	br, err := batchrepr.NewReader(rec)
	if err != nil {
		return err
	}
	var buf []byte
	for {
		kind, key, value, ok, err := br.Next()
		if err != nil || !ok {
			return err
		}
		if !kind.IsBlob() {
			continue
		}
		p, err := entryPointer(kind, value)
		if err != nil {
			return base.Corruptf(name, off, "WAL record: key %s: blob pointer: %v", quoteKey(key), err)
		}
		if buf, err = r.db.blobs.readPointer(p, buf[:0]); err != nil {
			if !errors.Is(err, ErrCorruption) {
				return err
			}
			return &badPointerError{err: fmt.Errorf("lsmgo: WAL %s, record at offset %d: key %s: %w", name, off, quoteKey(key), err)}
		}
		if r.blobFiles == nil {
			r.blobFiles = make(map[base.FileNum]bool)
		}
		r.blobFiles[p.FileNum] = true
	}
}

// flush writes the memtable, if it holds anything, to L0 tables and starts
// an empty one.
func (r *walReplay) flush() error {
	if r.mt.Empty() {
		return nil
	}
	out, err := r.db.writeTables(r.mt.NewIter(), nil, false, nil, nil, nil)
	if err != nil {
		return err
	}
	r.metas = append(r.metas, out...)
	r.mt = memtable.New(r.db.opts.MemTableSize)
	return nil
}

// grow replaces the memtable with one twice as large plus need, holding
// the same entries: in memory, one WAL must stay one memtable.
func (r *walReplay) grow(need int) error {
	mt := memtable.New(2*r.mt.Capacity() + need)
	it := r.mt.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := mt.Add(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	r.mt = mt
	return nil
}

// keepMemtable queues the memtable WAL num was replayed into, unless the
// WAL held nothing.
func (r *walReplay) keepMemtable(num base.FileNum) {
	if r.mt.Empty() {
		return
	}
	m := &memTable{mt: r.mt, logNum: num, maxSeq: r.maxSeq}
	m.reserved = m.mt.Capacity()
	m.refs.Store(1)
	r.mems = append(r.mems, m)
}

// reportDropped counts and reports, once recovery has committed, what
// each WAL's early end dropped: a warning for the torn tail of the last
// WAL, which a crash leaves; an ERROR for records that were not one
// (damage followed by intact records, or an early end that a close marker
// proves was more than a crash), with what is known of the entries.
func (r *walReplay) reportDropped() {
	db := r.db
	log := db.opts.Logger
	for _, e := range r.ends {
		db.m.walRecoveryDropped.Add(e.dropped)
		args := []any{"file", e.file, "offset", e.off, "dropped_bytes", e.dropped}
		if e.intact.records > 0 {
			args = append(args, "intact_records_dropped", e.intact.records, "intact_entries_dropped", e.intact.entries,
				"keys", quoteKey(e.intact.first)+".."+quoteKey(e.intact.last))
		}
		switch {
		case e.closed:
			// The close marker's loss, reported below, counts the entries.
			if e.damaged {
				args = append(args, "err", e.err)
			}
			log.Error("lsmgo: WAL ends early though the DB was closed cleanly after it: acknowledged writes are lost; recovered the records before the offset", args...)
		case e.damaged && e.intactFollows:
			db.m.walRecoveryLost.Add(e.intact.entries)
			log.Error("lsmgo: WAL damaged before intact records; recovered the records before the damage and dropped the rest "+
				"(a power failure can leave the unsynced end of the log so, but so does lost data: "+
				"Options.StrictWALRecovery refuses to open instead)", append(args, "err", e.err)...)
		case e.damaged:
			// A record whose blob value never reached the disk: the
			// unsynced end of the log after a power failure.
			log.Warn("lsmgo: WAL damaged; recovered the records before the damage and dropped the rest",
				append(args, "err", e.err)...)
		default:
			log.Warn("lsmgo: WAL ends in a torn write; recovered up to it", args...)
		}
	}
	for _, l := range r.losses {
		db.m.walRecoveryLost.Add(int64(l.to - l.from))
		log.Error("lsmgo: "+l.reason(), "close_marker", l.marker, "lost_entries", int64(l.to-l.from),
			"lost_seqnums", fmt.Sprintf("%d..%d", l.from, l.to-1))
	}
}

// walLoss is what a close marker proved lost: the entries with sequence
// numbers from..to-1.
type walLoss struct {
	marker   string
	from, to base.SeqNum
}

func (l walLoss) reason() string {
	return fmt.Sprintf("the DB was closed cleanly after the WAL records up to seqnum %d, but they end at seqnum %d: "+
		"%d acknowledged entries are lost (a WAL was cut short or damaged)", l.to-1, l.from-1, l.to-l.from)
}

// droppedRecords reads the records of WAL f (called name) from offset
// from, where intact records follow damage, to the end: what recovery
// drops beyond the damage. Further damage is skipped the same way.
func droppedRecords(f vfs.File, name string, from int64) droppedRange {
	var d droppedRange
	for {
		lr := record.NewReaderFrom(f, name, from)
		for {
			rec, err := lr.Next()
			if err != nil {
				break
			}
			if _, _, err := checkBatch(rec); err != nil || isCloseMarker(rec) {
				continue
			}
			d.add(rec)
		}
		next, ok := lr.IntactAfter()
		if !ok || next <= from {
			return d
		}
		from = next
	}
}

// droppedRange counts intact WAL records that recovery drops, and the
// smallest and largest user key in them.
type droppedRange struct {
	records, entries int64
	first, last      []byte
}

func (d *droppedRange) add(rec []byte) {
	br, err := batchrepr.NewReader(rec)
	if err != nil {
		return
	}
	d.records++
	for {
		_, key, _, ok, err := br.Next()
		if err != nil || !ok {
			return
		}
		d.entries++
		if d.first == nil || bytes.Compare(key, d.first) < 0 {
			d.first = bytes.Clone(key)
		}
		if d.last == nil || bytes.Compare(key, d.last) > 0 {
			d.last = bytes.Clone(key)
		}
	}
}

// commitRecovery creates the WAL that writes after Open go to and logs the
// version edit that adds the replayed tables metas at L0, names that WAL
// (so the replayed ones are no longer needed) and records maxSeq. When it
// fails before the edit is logged it removes metas.
func (db *DB) commitRecovery(metas []*manifest.FileMetadata, maxSeq base.SeqNum) (walFile, error) {
	newLog := db.vs.NewFileNum()
	log, err := db.wal.create(newLog)
	if err != nil {
		db.removeTables(metas)
		return walFile{}, err
	}
	edit := &manifest.VersionEdit{LogNum: newLog, LastSeq: maxSeq}
	for _, f := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: 0, Meta: f})
	}
	if err := db.logAndApply(edit, metas); err != nil {
		// The edit may have reached the manifest even though this failed
		// (say, only its fsync did), and it names the tables: unless it
		// certainly did not, they stay for the next Open, which removes
		// them if nothing names them.
		log.close()
		db.removeFile(base.FileTypeLog, newLog)
		return walFile{}, err
	}
	return log, nil
}

// resumeWrites makes the recovered DB ready for writes: log becomes the
// current WAL, and sequence numbers continue after maxSeq in a fresh
// memtable. imm are replayed memtables still to be flushed, oldest first.
func (db *DB) resumeWrites(log walFile, maxSeq base.SeqNum, imm []*memTable) {
	db.mu.Lock()
	defer db.mu.Unlock()
	// No syncer runs yet, and the WAL has no file to sync or close.
	db.wal.cur = log
	db.mu.nextSeq = maxSeq + 1
	db.mu.walSeq = maxSeq + 1
	db.visibleSeq.Store(uint64(maxSeq + 1))
	for _, m := range imm {
		db.mu.nextMemID++
		m.id = db.mu.nextMemID
	}
	db.mu.imm = imm
	db.mu.mem = db.newMemTable(log.num, 0)
	db.updateReadStateLocked()
}

// walStop is where the replay of a WAL ended before the end of the file.
type walStop struct {
	file string
	// off is where the dropped bytes begin: the start of the torn tail or
	// of the damaged record. Every record before it was replayed.
	off     int64
	dropped int64
	// damaged is set for damage followed by an intact record, or a
	// record whose blob value is missing, as opposed to a torn tail.
	// intactFollows is set for the first, and intact are the records
	// after the damage.
	damaged       bool
	intactFollows bool
	intact        droppedRange
	// closed is set when a close marker follows: the WAL was whole.
	closed bool
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
	// WALs from the MANIFEST's log number on are the current one and,
	// after an Open on a full disk, those its memtables still need.
	logNum := db.vs.LogNum()
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch {
		case t == base.FileTypeLog && num < logNum:
			db.retireLog(num, oldBlobs(names, logNum))
		case t == base.FileTypeTable && !live[num],
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
