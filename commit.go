package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/internal/wal"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// maxGroupBytes caps one commit group so a leader does not hold followers
// behind an unbounded write.
const maxGroupBytes = 1 << 20

// memEntryOverhead bounds the arena bytes a skiplist node adds to a key
// and value; rotation decisions use it so an insert never finds the
// memtable full after its WAL record is written.
const memEntryOverhead = 128

// walState is the WAL being written. Only the commit leader writes it;
// syncs happen under walSyncMu. Positions in the WAL are logical: base is
// the position of this file's first byte in the stream of every WAL the
// DB has written since Open, so one number orders bytes across files.
type walState struct {
	num  base.FileNum
	file vfs.File
	w    *wal.Writer
	base uint64
	// zeroed is how far the file has been extended with zeros ahead of
	// the records (see preallocateWAL).
	zeroed int64
}

// commitWriter is one Apply call on its way through the commit pipeline.
type commitWriter struct {
	repr []byte
	sync bool
	// rotate asks the leader to make the memtable immutable instead of
	// writing (Flush); rotatedID reports which memtable it rotated.
	rotate    bool
	rotatedID uint64
	// written is set when the leader has finished with the writer: its
	// batch is in the WAL at logical end position walPos, or err says why
	// not.
	written bool
	err     error
	walPos  uint64
	// mem, seq and count are set when the batch is registered: it then
	// holds a reservation in mem and a place in the publication queue,
	// both of which finishCommit releases.
	mem     *memTable
	seq     base.SeqNum
	count   uint32
	applied bool // guarded by db.pub.mu
	cond    sync.Cond
}

// Apply commits the batch atomically. It returns once the batch is in the
// WAL (and fsynced when the sync mode or wo asks) and visible to reads.
// A batch that refused a write (Batch.Err) is not written at all: Apply
// returns that error.
//
// The commit pipeline has three stages. (1) Writers queue; the writer at
// the head leads: it takes the queued batches (a commit group), assigns
// their sequence numbers, writes them to the WAL with one write(2), and
// hands leadership on, so the next group's write overlaps this group's
// fsync. (2) Each writer that needs durability waits until an fsync covers
// its WAL position; whoever finds the WAL unsynced syncs everything written
// so far, so concurrent groups share fsyncs (group commit). (3) Each writer
// inserts its own batch into the memtable, concurrently with the others,
// and the visible sequence number advances past a batch only once every
// earlier batch is inserted too, so readers never see a gap.
func (db *DB) Apply(b *Batch, wo *WriteOptions) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if b.err != nil {
		return b.err
	}
	if b.Count() == 0 {
		return nil
	}
	w := commitWriterPool.Get().(*commitWriter)
	w.repr, w.sync = b.repr, db.opts.Sync.kind == syncAlways || (wo != nil && wo.Sync)
	db.mu.Lock()
	db.enqueueLocked(w)
	db.mu.Unlock()
	err := db.finishCommit(w)
	*w = commitWriter{}
	commitWriterPool.Put(w)
	return err
}

// finishCommit runs stages 2 and 3 for a writer the leader is done with.
func (db *DB) finishCommit(w *commitWriter) error {
	err := w.err
	if w.mem == nil {
		// Never registered: nothing reserved, nothing to publish.
		return err
	}
	if err == nil && w.sync {
		err = db.waitSynced(w.walPos)
	}
	if err == nil {
		err = applyBatch(w.mem.mt, w.repr)
	}
	if err != nil && w.err == nil {
		db.mu.Lock()
		db.setBackgroundErrorLocked(err)
		err = db.mu.bgErr
		db.mu.Unlock()
	}
	w.mem.inflight.Done()
	db.publish(w)
	return err
}

// publish marks w's batch as inserted (or abandoned), advances the visible
// sequence number past every leading batch that is done, and returns only
// once w's own batch is past it. It waits even for an abandoned batch: the
// queue holds w until then, and w is recycled as soon as Apply returns.
func (db *DB) publish(w *commitWriter) {
	db.pub.mu.Lock()
	defer db.pub.mu.Unlock()
	w.applied = true
	q := db.pub.queue
	n := 0
	for n < len(q) && q[n].applied {
		n++
	}
	if n > 0 {
		last := q[n-1]
		db.visibleSeq.Store(uint64(last.seq) + uint64(last.count))
		clear(q[:n])
		db.pub.queue = q[n:]
		db.pub.cond.Broadcast()
	}
	end := uint64(w.seq) + uint64(w.count)
	for db.visibleSeq.Load() < end {
		db.pub.cond.Wait()
	}
}

// waitVisible waits until the visible sequence number is past seq.
func (db *DB) waitVisible(seq base.SeqNum) {
	db.pub.mu.Lock()
	for db.visibleSeq.Load() <= uint64(seq) {
		db.pub.cond.Wait()
	}
	db.pub.mu.Unlock()
}

// waitPublished waits until every registered batch has been published;
// Close uses it after the commit queue drains.
func (db *DB) waitPublished() {
	db.pub.mu.Lock()
	for len(db.pub.queue) > 0 {
		db.pub.cond.Wait()
	}
	db.pub.mu.Unlock()
}

// waitSynced returns once an fsync covers WAL position pos. One waiter
// at a time syncs everything written so far; the others sleep until it is
// done and then either find themselves covered or elect the next syncer.
func (db *DB) waitSynced(pos uint64) error {
	sw := &db.syncWait
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for db.walSynced.Load() < pos {
		if sw.syncing {
			sw.cond.Wait()
			continue
		}
		sw.syncing = true
		sw.mu.Unlock()
		err := db.syncWAL()
		sw.mu.Lock()
		sw.syncing = false
		sw.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// commitWriterPool saves an allocation per write; a writer is recycled
// only after it has left the queue.
var commitWriterPool = sync.Pool{New: func() any { return new(commitWriter) }}

// enqueueLocked puts w in the commit queue and returns when it is done,
// leading a group itself when it reaches the head. db.mu is held.
func (db *DB) enqueueLocked(w *commitWriter) {
	w.cond.L = &db.mu.Mutex
	db.mu.writers = append(db.mu.writers, w)
	for !w.written && db.mu.writers[0] != w {
		w.cond.Wait()
	}
	if !w.written {
		db.leadCommitLocked(w)
	}
}

// leadCommitLocked runs one commit group with leader at the queue's head;
// db.mu is held on entry and exit but released during I/O.
func (db *DB) leadCommitLocked(leader *commitWriter) {
	group := db.mu.writers[:1]
	var err error
	if leader.rotate {
		err = db.rotateForFlushLocked(leader)
		db.finishGroupLocked(leader, group, err)
		return
	}
	need := memSizeEstimate(leader.repr)
	err = db.makeRoomForWriteLocked(need)
	if err == nil {
		room := db.mu.mem.mt.Capacity() - db.mu.mem.reserved
		size := len(leader.repr)
		for _, w := range db.mu.writers[1:] {
			if w.rotate {
				break
			}
			n := memSizeEstimate(w.repr)
			if size+len(w.repr) > maxGroupBytes || need+n > room {
				break
			}
			size += len(w.repr)
			need += n
			group = db.mu.writers[:len(group)+1]
		}
		err = db.writeGroupLocked(group)
	}
	db.finishGroupLocked(leader, group, err)
}

// finishGroupLocked completes a group, removes it from the queue and hands
// leadership to the next writer.
func (db *DB) finishGroupLocked(leader *commitWriter, group []*commitWriter, err error) {
	for _, w := range group {
		w.err = err
		w.written = true
		if w != leader {
			w.cond.Signal()
		}
	}
	n := copy(db.mu.writers, db.mu.writers[len(group):])
	clear(db.mu.writers[n:])
	db.mu.writers = db.mu.writers[:n]
	if n > 0 {
		db.mu.writers[0].cond.Signal()
	} else if db.mu.closing {
		db.mu.cond.Broadcast()
	}
}

// writeGroupLocked assigns sequence numbers, registers the group for
// publication and in the memtable, and writes it to the WAL. db.mu is
// released during the write; the commit queue keeps every other leader out
// meanwhile.
func (db *DB) writeGroupLocked(group []*commitWriter) error {
	seq := db.mu.nextSeq
	mem := db.mu.mem
	db.pub.mu.Lock()
	for _, w := range group {
		batchrepr.SetSeq(w.repr, seq)
		w.seq, w.count, w.mem = seq, batchrepr.Count(w.repr), mem
		seq += base.SeqNum(w.count)
		mem.reserved += memSizeEstimate(w.repr)
		mem.inflight.Add(1)
		db.pub.queue = append(db.pub.queue, w)
	}
	db.pub.mu.Unlock()
	db.mu.nextSeq = seq
	mem.maxSeq = seq - 1
	log := &db.mu.log
	db.mu.Unlock()

	pos, err := db.writeWAL(log, group)
	db.mu.Lock()
	if err != nil {
		db.setBackgroundErrorLocked(err)
		return db.mu.bgErr
	}
	for _, w := range group {
		w.walPos = pos
	}
	db.m.commitGroups.Add(1)
	db.m.commits.Add(int64(len(group)))
	return nil
}

// writeWAL appends the group's batches to the WAL with one write and
// returns the logical WAL position after them.
func (db *DB) writeWAL(log *walState, group []*commitWriter) (uint64, error) {
	for _, w := range group {
		if err := log.w.WriteRecord(w.repr); err != nil {
			return 0, fmt.Errorf("lsmgo: WAL %s: %w", base.MakeFilename(base.FileTypeLog, log.num), err)
		}
	}
	n := log.w.Buffered()
	if err := db.preallocateWAL(log); err != nil {
		return 0, err
	}
	if err := log.w.Flush(); err != nil {
		return 0, fmt.Errorf("lsmgo: WAL write %s: %w", base.MakeFilename(base.FileTypeLog, log.num), err)
	}
	db.m.walBytes.Add(int64(n))
	pos := log.base + uint64(log.w.Size())
	db.walWritten.Store(pos)
	return pos, nil
}

// maxWALZeroChunk is the most a WAL is extended with zeros at a time. The
// commit leader writes the zeros, so a chunk is a pause of 32 page writes
// (about a tenth of a millisecond) for the group it leads, once per 128
// KiB of records; the next fsync also commits the new size to the
// journal, once per chunk.
const maxWALZeroChunk = 128 << 10

// walZeroWrite is the size of each write of zeros: one page. A larger
// write lets the kernel cache the range as one large folio, and a record
// that later dirties a few bytes of it then makes every fsync write back
// the whole folio (measured: 1 MiB per fsync for 1 MiB writes).
const walZeroWrite = 4 << 10

// zeros is read-only.
var zeros [walZeroWrite]byte

// preallocateWAL extends the WAL with zeros, a chunk ahead of the records
// about to be written, when the DB syncs every write. An fsync after an
// append that grew the file must also commit the new size to the
// filesystem's journal; an fsync after records overwrote zeros already in
// the file need only write the data, which measured about a quarter
// faster on ext4. A reader takes a zero tail for the log's end (see
// internal/wal), so a crash anywhere leaves a readable WAL.
func (db *DB) preallocateWAL(log *walState) error {
	chunk := db.walZeroChunk
	end := log.w.Size()
	if chunk == 0 || end <= log.zeroed {
		return nil
	}
	wa, ok := log.file.(io.WriterAt)
	if !ok {
		return nil
	}
	target := (end/chunk + 1) * chunk
	for off := log.zeroed; off < target; {
		n := min(target-off, int64(len(zeros)))
		if _, err := wa.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("lsmgo: WAL preallocate %s: %w", base.MakeFilename(base.FileTypeLog, log.num), err)
		}
		off += n
	}
	log.zeroed = target
	return nil
}

// applyBatch inserts a batch's records at their sequence numbers.
func applyBatch(mt *memtable.Memtable, repr []byte) error {
	r, err := batchrepr.NewReader(repr)
	if err != nil {
		return err
	}
	seq := batchrepr.Seq(repr)
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := mt.Add(base.MakeInternalKey(key, seq, kind), value); err != nil {
			if errors.Is(err, memtable.ErrFull) {
				return fmt.Errorf("lsmgo: memtable overflow despite the size estimate: %w", err)
			}
			return err
		}
		seq++
	}
}

// memSizeEstimate bounds the memtable bytes a batch needs.
func memSizeEstimate(repr []byte) int {
	return len(repr) + int(batchrepr.Count(repr))*memEntryOverhead
}

// makeRoomForWriteLocked makes sure the mutable memtable can take need
// more bytes: it rotates a full memtable and stalls (waits) while too many
// memtables or L0 files are queued. db.mu is held; it may be released.
func (db *DB) makeRoomForWriteLocked(need int) error {
	slowed := false
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.mu.closing {
			// Close stops background work, so a stalled write would
			// never wake.
			return ErrClosed
		}
		l0 := len(db.rs.Load().version.Files[0])
		if !slowed && l0 >= db.opts.L0SlowdownWritesThreshold {
			slowed = true
			db.m.slowdowns.Add(1)
			db.mu.Unlock()
			time.Sleep(time.Millisecond)
			db.mu.Lock()
			continue
		}
		if m := db.mu.mem; m.reserved+need <= m.mt.Capacity() {
			return nil
		}
		if len(db.mu.imm)+1 >= db.opts.MemTableStopWritesThreshold || l0 >= db.opts.L0StopWritesThreshold {
			db.stallLocked()
			continue
		}
		if err := db.rotateMemtableLocked(need); err != nil {
			db.setBackgroundErrorLocked(err)
			return db.mu.bgErr
		}
	}
}

// rotateForFlushLocked makes the mutable memtable immutable for Flush,
// waiting while too many memtables are queued. It records which memtable
// it rotated (0 when it was empty).
func (db *DB) rotateForFlushLocked(w *commitWriter) error {
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.mu.closing {
			return ErrClosed
		}
		if db.mu.mem.mt.Empty() {
			return nil
		}
		if len(db.mu.imm)+1 < db.opts.MemTableStopWritesThreshold {
			break
		}
		db.stallLocked()
	}
	w.rotatedID = db.mu.mem.id
	if err := db.rotateMemtableLocked(0); err != nil {
		db.setBackgroundErrorLocked(err)
		return db.mu.bgErr
	}
	return nil
}

// stallLocked waits for a flush or compaction to finish.
func (db *DB) stallLocked() {
	start := time.Now()
	db.m.stalls.Add(1)
	db.maybeScheduleFlushLocked()
	db.maybeScheduleCompaction()
	db.mu.cond.Wait()
	db.m.stallNanos.Add(int64(time.Since(start)))
}

// rotateMemtableLocked makes the mutable memtable immutable, starts a new
// WAL and a new memtable large enough for need, and schedules a flush.
func (db *DB) rotateMemtableLocked(need int) error {
	// The old WAL is synced before the new one exists, so after a power
	// loss the surviving writes are always a prefix, and a damaged tail
	// can only be in the newest WAL.
	if err := db.syncWAL(); err != nil {
		return err
	}
	num := db.vs.NewFileNum()
	newLog, err := db.createWAL(num)
	if err != nil {
		return err
	}
	if err := db.retireWAL(&newLog); err != nil {
		newLog.file.Close()
		return err
	}
	// Even an empty memtable goes through a flush: the flush's manifest
	// edit is what retires its WAL safely.
	db.mu.imm = append(db.mu.imm, db.mu.mem)
	db.mu.mem = db.newMemTable(num, need)
	db.updateReadStateLocked()
	db.maybeScheduleFlushLocked()
	return nil
}

func (db *DB) newMemTable(logNum base.FileNum, need int) *memTable {
	db.mu.nextMemID++
	m := &memTable{logNum: logNum, id: db.mu.nextMemID}
	if 2*need <= db.opts.MemTableSize {
		m.pool = &db.memPool
		m.mt = m.pool.get()
	} else {
		// A batch too large for the standard size gets a memtable of
		// its own, which the pool does not keep.
		m.mt = memtable.New(2 * need)
	}
	m.reserved = m.mt.Size()
	// The DB's memtable list holds the first reference.
	m.refs.Store(1)
	return m
}

// createWAL creates a WAL file and makes its directory entry durable, so a
// write synced into it survives a crash.
func (db *DB) createWAL(num base.FileNum) (walState, error) {
	name := db.path(base.MakeFilename(base.FileTypeLog, num))
	f, err := db.fs.Create(name)
	if err != nil {
		return walState{}, fmt.Errorf("lsmgo: create WAL: %w", err)
	}
	if err := db.syncDir(); err != nil {
		f.Close()
		return walState{}, err
	}
	return walState{num: num, file: f, w: wal.NewWriter(f)}, nil
}

// retireWAL syncs and closes the current WAL, if any, and installs next
// (when not nil) in its place.
func (db *DB) retireWAL(next *walState) error {
	db.walSyncMu.Lock()
	defer db.walSyncMu.Unlock()
	log := &db.mu.log
	if log.file != nil {
		if err := db.syncWALLocked(); err != nil {
			return err
		}
		err := log.file.Close()
		log.file = nil
		if err != nil {
			return fmt.Errorf("lsmgo: WAL close: %w", err)
		}
	}
	if next != nil {
		*log = *next
		log.base = db.walWritten.Load()
	}
	return nil
}

// syncWAL fsyncs the current WAL if it has unsynced writes.
func (db *DB) syncWAL() error {
	db.walSyncMu.Lock()
	defer db.walSyncMu.Unlock()
	return db.syncWALLocked()
}

// syncWALLocked is syncWAL with walSyncMu held. A failed fsync is sticky:
// after one, the kernel may have dropped the dirty pages, so a later
// fsync that succeeds proves nothing.
func (db *DB) syncWALLocked() error {
	if db.walSyncErr != nil {
		return db.walSyncErr
	}
	// Every byte up to target is in the current file or an older one,
	// and older ones were synced when they were retired: the file cannot
	// change while walSyncMu is held.
	target := db.walWritten.Load()
	log := &db.mu.log
	if log.file == nil || db.walSynced.Load() >= target {
		return nil
	}
	if err := log.file.Sync(); err != nil {
		db.walSyncErr = fmt.Errorf("lsmgo: WAL sync %s: %w", base.MakeFilename(base.FileTypeLog, log.num), err)
		return db.walSyncErr
	}
	db.walSynced.Store(target)
	db.m.walSyncs.Add(1)
	return nil
}

// closeWAL syncs and closes the WAL at Close.
func (db *DB) closeWAL() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.bgErr != nil {
		if db.mu.log.file != nil {
			db.mu.log.file.Close()
			db.mu.log.file = nil
		}
		return nil
	}
	return db.retireWAL(nil)
}

func (db *DB) syncDir() error { return syncDirOf(db.fs, db.dirname) }

// syncDirOf makes dir's entries durable.
func syncDirOf(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("lsmgo: open dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("lsmgo: sync dir: %w", err)
	}
	return nil
}

// intervalSyncer fsyncs the WAL every SyncInterval under SyncInterval mode.
func (db *DB) intervalSyncer() {
	defer db.bgWG.Done()
	t := time.NewTicker(db.opts.Sync.interval)
	defer t.Stop()
	for {
		select {
		case <-db.syncerC:
			return
		case <-t.C:
		}
		if err := db.syncWAL(); err != nil {
			db.mu.Lock()
			db.setBackgroundErrorLocked(err)
			db.mu.Unlock()
		}
	}
}
