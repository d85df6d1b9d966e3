package lsmgo

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
)

// maxGroupBytes caps one commit group so a leader does not hold followers
// behind an unbounded write.
const maxGroupBytes = 1 << 20

// commitWriter is one Apply call on its way through the commit pipeline.
type commitWriter struct {
	repr []byte
	sync bool
	// async is set for CommitAsync: the writer publishes its batch
	// without waiting for the fsync sync asks for, which Pending.Wait
	// does instead.
	async bool
	// blobBytes is how many value bytes the batch wrote to blob files,
	// and blobFiles which files.
	blobBytes int64
	blobFiles []base.FileNum
	// rotate asks the leader to make the memtable immutable instead of
	// writing (Flush); rotatedID reports which memtable it rotated.
	rotate    bool
	rotatedID uint64
	// resume asks the leader to run Resume instead of writing.
	resume bool
	// wantSeq, when set, is the sequence number a replicated batch must
	// start at (ApplyReplicated); such a batch always leads its group.
	wantSeq base.SeqNum
	// replicated is the batch's portable encoding when it differs from
	// repr (separated values), for Options.OnCommit, in a buffer of
	// replicatedPool; replicatedParts replace it for the batches of
	// ApplyReplicatedBatches.
	replicated      *[]byte
	replicatedParts [][]byte
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
	// waiting is set, under db.pub.mu, while the writer sleeps in
	// publish until its batch is visible.
	waiting bool
	cond    sync.Cond
	// wake is how a writer asleep in publish or in walWriter.waitSynced
	// is woken: whoever finishes what it waits for sends on it, so that
	// many writers released at once each run at once, instead of all
	// waking on one condition and then queueing for its mutex one after
	// the other (measured: under appendfsync always with 512 clients,
	// that queue was a sixth of the time writers spent blocked). It has
	// room for one token, and each wait is matched by exactly one send.
	wake chan struct{}
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
	return db.apply(b, wo, 0)
}

// apply is Apply, for a replicated batch when wantSeq is set.
func (db *DB) apply(b *Batch, wo *WriteOptions, wantSeq base.SeqNum) error {
	_, err := db.commit(b, wo, wantSeq, false)
	return err
}

// commit runs b through the commit pipeline. Without async it is Apply;
// with async it skips stage 2 (see CommitAsync) and returns what Wait
// needs for it.
func (db *DB) commit(b *Batch, wo *WriteOptions, wantSeq base.SeqNum, async bool) (Pending, error) {
	if db.closed.Load() {
		return Pending{}, ErrClosed
	}
	if b.err != nil {
		return Pending{}, b.err
	}
	if b.Count() == 0 {
		return Pending{}, nil
	}
	repr := b.repr
	var pinned []base.FileNum
	if len(b.blobs) > 0 {
		var err error
		if repr, pinned, err = db.writeBlobs(b); err != nil {
			return Pending{}, err
		}
	}
	w := commitWriterPool.Get().(*commitWriter)
	w.repr, w.sync = repr, db.opts.Sync.kind == syncAlways || (wo != nil && wo.Sync)
	w.async = async
	w.blobBytes, w.blobFiles = int64(b.blobBytes), pinned
	w.wantSeq = wantSeq
	if db.opts.OnCommit != nil {
		if w.replicatedParts = b.replicatedParts; w.replicatedParts == nil {
			w.replicated = b.replicated()
		}
	}
	db.mu.Lock()
	db.enqueueLocked(w)
	db.mu.Unlock()
	err := db.finishCommit(w)
	if err == nil {
		b.seq = uint64(w.seq)
	}
	var p Pending
	if err == nil && async && w.sync {
		p = Pending{db: db, walPos: w.walPos}
	}
	// The memtable holds its own pins now, if the batch got that far.
	db.blobs.unpin(pinned)
	putReplicated(w.replicated)
	*w = commitWriter{wake: w.wake}
	commitWriterPool.Put(w)
	return p, err
}

// writeBlobs writes the batch's separated values to the active blob file,
// before the batch joins the commit queue (so a large value holds up no
// small write), and returns the encoding to commit, with the pointers. A
// failed write makes the DB read-only, as a failed WAL write does: how
// much reached the file is unknown.
func (db *DB) writeBlobs(b *Batch) ([]byte, []base.FileNum, error) {
	db.mu.Lock()
	err := db.mu.bgErr
	db.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	repr, pinned, err := db.blobs.separate(b)
	var noSpace *noSpaceError
	switch {
	case err == nil, errors.Is(err, ErrClosed):
	case errors.As(err, &noSpace):
		// Only this batch failed, and nothing of it is visible.
		db.m.noSpaceWrites.Add(1)
	default:
		db.mu.Lock()
		db.setBackgroundErrorLocked(err)
		err = db.mu.bgErr
		db.mu.Unlock()
	}
	return repr, pinned, err
}

// finishCommit runs stages 2 and 3 for a writer the leader is done with.
func (db *DB) finishCommit(w *commitWriter) error {
	err := w.err
	if w.mem == nil {
		// Never registered: nothing reserved, nothing to publish.
		return err
	}
	if err == nil && w.sync && !w.async {
		err = db.wal.waitSynced(w.walPos, w.wake)
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
// Whoever advances the sequence number wakes exactly the writers it
// published.
func (db *DB) publish(w *commitWriter) {
	db.pub.mu.Lock()
	w.applied = true
	q := db.pub.queue
	n := 0
	for n < len(q) && q[n].applied {
		n++
	}
	if n > 0 {
		last := q[n-1]
		db.visibleSeq.Store(uint64(last.seq) + uint64(last.count))
		for _, o := range q[:n] {
			if o.waiting {
				o.waiting = false
				o.wake <- struct{}{}
			}
		}
		clear(q[:n])
		db.pub.queue = q[n:]
		// For waitVisible and waitPublished.
		db.pub.cond.Broadcast()
	}
	if db.visibleSeq.Load() >= uint64(w.seq)+uint64(w.count) {
		db.pub.mu.Unlock()
		return
	}
	w.waiting = true
	db.pub.mu.Unlock()
	<-w.wake
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

// commitWriterPool saves an allocation per write; a writer is recycled
// only after it has left the queue.
var commitWriterPool = sync.Pool{New: func() any { return &commitWriter{wake: make(chan struct{}, 1)} }}

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
	if leader.rotate || leader.resume {
		if leader.rotate {
			err = db.rotateForFlushLocked(leader)
		} else {
			err = db.resumeLocked()
		}
		db.finishGroupLocked(leader, group, err)
		return
	}
	if leader.sync && !leader.async {
		// An fsync in progress cannot cover a group written now: the
		// group would wait for the next one anyway. Writing it when
		// that fsync is done instead lets every writer that arrives
		// meanwhile join it, so the next fsync is preceded by one
		// write(2) and one hand-over of the lead rather than one per
		// writer (as Redis writes its AOF once per event loop before
		// its fsync). The queue holds the other leaders back; db.mu is
		// free for writers to join. An async leader does not wait: its
		// writer may hold a lock until its batch is visible, and it
		// waits for the fsync after releasing it (Pending.Wait).
		db.mu.Unlock()
		db.wal.waitSyncDone(leader.wake)
		db.mu.Lock()
	}
	if leader.wantSeq != 0 && leader.wantSeq != db.mu.nextSeq {
		err = &SeqMismatchError{Want: uint64(db.mu.nextSeq), Got: uint64(leader.wantSeq)}
		db.finishGroupLocked(leader, group, err)
		return
	}
	need := memSizeEstimate(leader.repr)
	err = db.checkReserveLocked()
	if err == nil {
		err = db.makeRoomForWriteLocked(need)
	}
	if err == nil {
		room := db.mu.mem.mt.Capacity() - db.mu.mem.reserved
		size := len(leader.repr)
		for _, w := range db.mu.writers[1:] {
			if w.rotate || w.wantSeq != 0 {
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
		mem.blobBytes += w.blobBytes
		mem.pinBlobs(w.blobFiles)
		mem.inflight.Add(1)
		db.pub.queue = append(db.pub.queue, w)
	}
	db.pub.mu.Unlock()
	db.mu.nextSeq = seq
	mem.maxSeq = seq - 1
	db.mu.Unlock()

	pos, err := db.wal.write(group)
	db.mu.Lock()
	if err != nil && base.IsNoSpace(err) {
		// Nothing of the group was acknowledged, and the WAL may end in
		// part of it: the next write cuts that off and continues in a
		// new WAL (makeRoomForWriteLocked). The group's batches are
		// published without being inserted, so no reader sees them.
		db.mu.walFailed = err
		db.m.noSpaceWrites.Add(int64(len(group)))
		return &noSpaceError{err}
	}
	if err != nil {
		db.setBackgroundErrorLocked(err)
		return db.mu.bgErr
	}
	for _, w := range group {
		w.walPos = pos
		if w.async && w.sync {
			db.mu.asyncWalPos = pos
		}
	}
	db.mu.walSeq = seq
	db.notifyCommitLocked(group)
	db.m.commitGroups.Add(1)
	db.m.commits.Add(int64(len(group)))
	return nil
}

// applyBatch inserts a batch's records at their sequence numbers, less
// those a later record of the batch supersedes (findSuperseded).
func applyBatch(mt *memtable.Memtable, repr []byte) error {
	r, err := batchrepr.NewReader(repr)
	if err != nil {
		return err
	}
	skip, err := findSuperseded(repr)
	if err != nil {
		return err
	}
	defer skip.release()
	seq := batchrepr.Seq(repr)
	for i := 0; ; i++ {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if skip.skip(i) {
			seq++
			continue
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

// notifyCommitLocked hands each batch of a group written to the WAL to
// Options.OnCommit, in commit order: db.mu and the lead of the commit
// queue are held, so no later group is reported first.
func (db *DB) notifyCommitLocked(group []*commitWriter) {
	hook := db.opts.OnCommit
	if hook == nil {
		return
	}
	for _, w := range group {
		if w.replicatedParts != nil {
			// Their own encodings, at the sequence numbers they carry.
			for _, data := range w.replicatedParts {
				hook(uint64(batchrepr.Seq(data)), data)
			}
			continue
		}
		data := w.repr
		if w.replicated != nil {
			data = *w.replicated
			batchrepr.SetSeq(data, w.seq)
		}
		hook(uint64(w.seq), data)
	}
}
