package lsmgo

import (
	"bytes"
	"errors"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
)

// Overlay reads a View's state with a Batch's writes on top, as if the
// batch had been applied: a transaction that collects its writes in one
// batch, to commit them atomically, reads its own writes through it.
//
// Each Get sees the batch as it is at that moment, and each iterator the
// batch as it was when NewIter returned: writes added later, even while
// the iterator is open, are not seen by it. The batch may only grow while
// the overlay is used; after a Reset, reads see the batch afresh. Reads
// of the state below the batch are the View's, so the overlay is valid
// while the View is open, and an iterator from it as long as any.
// An Overlay is not safe for concurrent use.
type Overlay struct {
	v *View
	b *Batch
	// top indexes b's records, in order, at sequence numbers from v.seq
	// up: above every entry the view sees, and later writes of a key
	// above earlier ones.
	top *overlayTop
}

// overlayTop is the index of an Overlay's batch: a memtable of its
// records, where an iterator can merge them with the DB's sources.
type overlayTop struct {
	mt *memtable.Memtable
	// offset and count locate the next record of the batch to index, and
	// blobs its next separated value; readSeq is one past the sequence
	// number of the last record indexed. resets is the batch's Reset
	// count when indexing began.
	offset  int
	count   uint32
	blobs   int
	readSeq base.SeqNum
	resets  uint64
}

// Overlay returns a reader of the view's state with b's writes on top.
func (v *View) Overlay(b *Batch) *Overlay { return &Overlay{v: v, b: b} }

var _ Reader = (*Overlay)(nil)

// Get is View.Get with the batch's writes on top.
func (o *Overlay) Get(key []byte) ([]byte, error) {
	val, _, err := o.GetWithExpiry(key)
	return val, err
}

// GetWithExpiry is View.GetWithExpiry with the batch's writes on top.
func (o *Overlay) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if o.v.rs == nil || o.v.db.closed.Load() {
		return nil, time.Time{}, ErrClosed
	}
	if n := o.b.Count(); n > 0 && n <= overlayScanMax && o.b.err == nil {
		kind, value, found, err := o.scan(key)
		if err != nil {
			return nil, time.Time{}, err
		}
		if found {
			return o.v.db.resolveValue(nil, kind, value)
		}
		return o.v.GetWithExpiry(key)
	}
	top, err := o.index()
	if err != nil {
		return nil, time.Time{}, err
	}
	if top != nil {
		if value, kind, found := top.mt.Get(key, top.readSeq); found {
			return o.v.db.resolveValue(nil, kind, value)
		}
	}
	return o.v.GetWithExpiry(key)
}

// NewIter returns an iterator over the view's state with the batch's
// writes, as they are now, on top.
func (o *Overlay) NewIter(opts *IterOptions) (*Iterator, error) {
	if o.v.rs == nil || o.v.db.closed.Load() {
		return nil, ErrClosed
	}
	top, err := o.index()
	if err != nil {
		return nil, err
	}
	if top == nil {
		return o.v.NewIter(opts)
	}
	o.v.rs.refs.Add(1)
	// The top's copy is fixed for the iterator: a later index call may
	// replace the memtable or raise readSeq, neither of which it must see.
	fixed := *top
	return o.v.db.newIterOver(opts, o.v.rs, o.v.seq, &fixed)
}

// overlayScanMax is the longest batch that Get reads record by record
// instead of through the index. A script or transaction writes a few
// records and reads its keys back, and a server pipeline of 16 commands
// collects 16-64: indexing them cost an arena and a skiplist each time
// (a tenth of a three-command EVALSHA's CPU; 6.7 of the 8.2 KB allocated
// per pipeline of 16 HSETs), where scanning costs a key comparison per
// record.
const overlayScanMax = 64

// scan finds key's newest record in the batch by reading every record.
func (o *Overlay) scan(key []byte) (kind base.Kind, value []byte, found bool, err error) {
	b := o.b
	r, err := batchrepr.NewReader(b.repr)
	if err != nil {
		return 0, nil, false, err
	}
	blobs, blob := 0, 0
	for {
		k, rk, v, ok, err := r.Next()
		if err != nil {
			return 0, nil, false, err
		}
		if !ok {
			break
		}
		if bytes.Equal(rk, key) {
			kind, value, found, blob = k, v, true, blobs
		}
		if k.IsBlob() {
			blobs++
		}
	}
	if found && kind.IsBlob() {
		kind, value = inlineBlob(nil, kind, value, b.blobs[blob])
	}
	return kind, value, found, nil
}

// inlineBlob turns a batch's separated-value record into a plain one,
// appended to buf: its value (the expiry, if any) followed by the user
// value, which the batch holds beside its records.
func inlineBlob(buf []byte, kind base.Kind, value, blob []byte) (base.Kind, []byte) {
	buf = append(append(buf[:0], value...), blob...)
	if kind.HasExpiry() {
		return base.KindSetExpiry, buf
	}
	return base.KindSet, buf
}

// index brings the memtable up to date with the batch's records and
// returns it, or nil while the batch is empty (reads then go to the view
// alone, and a read-only transaction costs no memtable). A batch that was
// reset, or that no longer fits the memtable, is indexed afresh into a
// new one.
func (o *Overlay) index() (*overlayTop, error) {
	b := o.b
	if b.err != nil {
		return nil, b.err
	}
	if b.Count() == 0 {
		o.top = nil
		return nil, nil
	}
	top := o.top
	if top == nil || top.resets != b.resets || len(b.repr) < top.offset || batchrepr.Count(b.repr) < top.count || len(b.blobs) < top.blobs {
		top = o.fresh(0)
	}
	for {
		err := top.add(b)
		if !errors.Is(err, memtable.ErrFull) {
			if err != nil {
				return nil, err
			}
			o.top = top
			return top, nil
		}
		top = o.fresh(2 * top.mt.Capacity())
	}
}

// overlayMinIndex is the smallest index an Overlay allocates: a server
// overlays each pipeline's pending writes, often a few records, and a
// bigger first arena cost more to allocate and clear than the doublings
// that a longer batch takes (index re-indexes into twice the room).
const overlayMinIndex = 2 << 10

// fresh returns an empty index of at least capacity bytes, enough for the
// batch as it is now.
func (o *Overlay) fresh(capacity int) *overlayTop {
	need := memSizeEstimate(o.b.repr) + o.b.blobBytes + base.ExpiryLen*o.b.Count()
	capacity = max(capacity, 2*need, overlayMinIndex)
	return &overlayTop{mt: memtable.New(capacity), offset: batchrepr.HeaderLen, readSeq: o.v.seq, resets: o.b.resets}
}

// add indexes the batch's records after the last one indexed. A
// separated value is indexed as a plain one: the index holds the value
// itself, not a pointer to a blob file the batch has not written yet.
func (t *overlayTop) add(b *Batch) error {
	r, err := batchrepr.NewReaderAt(b.repr, t.offset, t.count)
	if err != nil {
		return err
	}
	var buf []byte
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if kind.IsBlob() {
			kind, buf = inlineBlob(buf, kind, value, b.blobs[t.blobs])
			value = buf
			t.blobs++
		}
		if err := t.mt.Add(base.MakeInternalKey(key, t.readSeq, kind), value); err != nil {
			return err
		}
		t.offset, t.count = r.Offset(), t.count+1
		t.readSeq++
	}
}

// seqFilter hides the entries of an internal iterator at or above below,
// so that an Overlay's batch, indexed from below up, is the only source
// of newer entries.
type seqFilter struct {
	base.InternalIterator
	below base.SeqNum
}

func (f *seqFilter) forward(ok bool) bool {
	for ok && !base.Visible(f.Key().Seq(), f.below) {
		ok = f.InternalIterator.Next()
	}
	return ok
}

func (f *seqFilter) backward(ok bool) bool {
	for ok && !base.Visible(f.Key().Seq(), f.below) {
		ok = f.InternalIterator.Prev()
	}
	return ok
}

func (f *seqFilter) SeekGE(key []byte) bool { return f.forward(f.InternalIterator.SeekGE(key)) }
func (f *seqFilter) SeekLT(key []byte) bool { return f.backward(f.InternalIterator.SeekLT(key)) }
func (f *seqFilter) First() bool            { return f.forward(f.InternalIterator.First()) }
func (f *seqFilter) Last() bool             { return f.backward(f.InternalIterator.Last()) }
func (f *seqFilter) Next() bool             { return f.forward(f.InternalIterator.Next()) }
func (f *seqFilter) Prev() bool             { return f.backward(f.InternalIterator.Prev()) }
