package lsmgo

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
)

// A replicated batch is a committed batch in its portable encoding: the
// batch encoding (internal/batchrepr) with its first sequence number in
// the header, and every value inline (a value the primary separated into
// a blob file is sent whole, since the replica has its own blob files).
// Options.OnCommit receives it and ApplyReplicated takes it; to anything
// else it is opaque bytes, which ReplicatedSeq reads the position of.

// SeqMismatchError is ApplyReplicated's refusal of a batch that does not
// start at the replica's next sequence number: Got > Want is a gap (some
// batch was lost), Got < Want a batch already applied. Either way the
// replica's content is unchanged, and a replica that cannot get the
// missing batches needs a new copy of the primary.
type SeqMismatchError struct {
	Want, Got uint64
}

func (e *SeqMismatchError) Error() string {
	what := "gap"
	if e.Got < e.Want {
		what = "duplicate"
	}
	return fmt.Sprintf("lsmgo: replicated batch at seqnum %d, want %d (%s)", e.Got, e.Want, what)
}

// ReplicatedSeq returns the first sequence number of a replicated batch
// and how many it spans (one per write), or an error if data is not one.
func ReplicatedSeq(data []byte) (seq uint64, count uint32, err error) {
	if _, err := batchrepr.NewReader(data); err != nil {
		return 0, 0, err
	}
	return uint64(batchrepr.Seq(data)), batchrepr.Count(data), nil
}

// LastSeq returns the sequence number of the last committed write (0 for
// a new DB). A DB opened from a Checkpoint starts where the checkpoint
// ends, so a replica made from a primary's checkpoint is at the
// primary's position then, and asks the primary for the batches from
// LastSeq()+1 on.
func (db *DB) LastSeq() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	return uint64(db.mu.nextSeq) - 1
}

// VisibleSeq returns the sequence number of the last write that reads
// see: every write up to it is visible to a read that starts after the
// call. It is at most LastSeq, which counts the writes of a commit in
// progress from the moment they get their sequence numbers, before they
// are visible (their WAL write and memtable insert may take a while for a
// large group). A position reported to clients (a replica's offset) is
// this one, so that a read after the report sees what it says.
func (db *DB) VisibleSeq() uint64 { return db.visibleSeq.Load() - 1 }

// ApplyReplicated commits a replicated batch atomically at the sequence
// numbers it carries, which must start at LastSeq()+1: otherwise it
// returns a *SeqMismatchError and writes nothing, so a replica never
// applies a batch twice nor skips one. The DB must receive no other
// writes (a replica's writes all come from its primary), since any other
// write takes the sequence numbers the next replicated batch needs.
// Malformed data is an error, never a partial write.
func (db *DB) ApplyReplicated(data []byte, wo *WriteOptions) error {
	return db.ApplyReplicatedBatches([][]byte{data}, wo)
}

// ApplyReplicatedBatches is ApplyReplicated for consecutive replicated
// batches, which it commits as one: one WAL record and one pass of the
// commit pipeline, so that a replica catching up on many small batches
// does not pay a commit for each (the replica's content moves from the
// primary's state before the first to its state after the last, both
// states of the primary). Each batch must start where the one before
// ends, the first at LastSeq()+1; otherwise the result is a
// *SeqMismatchError and nothing is written. Options.OnCommit still
// reports each batch as it was given, so that this DB's own replicas see
// the primary's batches.
func (db *DB) ApplyReplicatedBatches(batches [][]byte, wo *WriteOptions) error {
	if len(batches) == 0 {
		return nil
	}
	var first, next uint64
	b := db.NewBatch()
	// The records take about the room they take in the batches: one
	// allocation instead of a doubling every few records (9% of a
	// replica's CPU under a primary at -P 1). Not past 1 MiB, which
	// values this DB separates would not fill.
	size := 0
	for _, data := range batches {
		size += len(data)
	}
	b.repr = slices.Grow(b.repr, min(size, 1<<20))
	for _, data := range batches {
		seq, count, err := ReplicatedSeq(data)
		if err != nil {
			return err
		}
		if seq == 0 {
			return fmt.Errorf("lsmgo: replicated batch without a sequence number")
		}
		if first == 0 {
			first = seq
		} else if seq != next {
			return &SeqMismatchError{Want: next, Got: seq}
		}
		n := b.Count()
		if err := db.appendReplicated(b, data); err != nil {
			return err
		}
		if b.Count()-n != int(count) || count == 0 {
			return fmt.Errorf("lsmgo: replicated batch of %d records holds %d", count, b.Count()-n)
		}
		next = seq + uint64(count)
	}
	b.replicatedParts = batches
	return db.apply(b, wo, base.SeqNum(first))
}

// appendReplicated adds a replicated batch's records to b, through the
// Batch methods so that this DB's limits and value separation apply.
func (db *DB) appendReplicated(b *Batch, data []byte) error {
	r, err := batchrepr.NewReader(data)
	if err != nil {
		return err
	}
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return b.Err()
		}
		switch kind {
		case base.KindSet:
			b.Set(key, value)
		case base.KindDelete:
			b.Delete(key)
		case base.KindSetExpiry:
			ms, v, ok := base.DecodeExpiryValue(value)
			if !ok {
				return fmt.Errorf("lsmgo: replicated batch: short expiry value for key %s", quoteKey(key))
			}
			b.SetWithExpiry(key, v, time.UnixMilli(ms))
		default:
			return fmt.Errorf("lsmgo: replicated batch: record kind %d", kind)
		}
	}
}

// replicated returns the batch's portable encoding: nil when no value was
// separated (the batch's own encoding is that, and the commit sets the
// sequence number in it), else a copy with the separated values inline,
// built in a buffer from replicatedPool that the caller puts back once
// OnCommit has seen it.
func (b *Batch) replicated() *[]byte {
	if len(b.blobs) == 0 {
		return nil
	}
	r, err := batchrepr.NewReader(b.repr)
	if err != nil {
		return nil
	}
	bp := replicatedPool.Get().(*[]byte)
	out := append(slices.Grow((*bp)[:0], len(b.repr)+b.blobBytes+len(b.blobs)*4), make([]byte, batchrepr.HeaderLen)...)
	blobs := b.blobs
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			*bp = out
			return bp
		}
		switch kind {
		case base.KindSetBlob:
			kind, value = base.KindSet, blobs[0]
			blobs = blobs[1:]
		case base.KindSetExpiryBlob:
			kind, value = base.KindSetExpiry, append(append([]byte(nil), value...), blobs[0]...)
			blobs = blobs[1:]
		}
		out = batchrepr.Append(out, kind, key, value)
	}
}

// replicatedPool recycles the buffers of replicated: OnCommit gets the
// encoding only for the call, and a batch of large separated values
// otherwise costs an allocation as large, zeroed, and later returned to
// the OS (a tenth of an image upload's CPU, measured).
var replicatedPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledReplicated bounds the buffers replicatedPool keeps, so a rare
// huge batch does not stay pinned in memory.
const maxPooledReplicated = 8 << 20

// putReplicated returns a buffer of replicated to its pool.
func putReplicated(bp *[]byte) {
	if bp != nil && cap(*bp) <= maxPooledReplicated {
		*bp = (*bp)[:0]
		replicatedPool.Put(bp)
	}
}
