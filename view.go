package lsmgo

import (
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// View is a short-lived, consistent read of the DB: reads through it see
// exactly the writes acknowledged before NewView returned. It is the
// cheap-to-take, expensive-to-hold counterpart of Snapshot.
//
// A View pins the memtables and tables of its moment once, instead of
// registering with compaction as a Snapshot does, so taking one costs an
// atomic reference instead of the DB's lock, and its Gets skip the
// pinning every DB.Get and Snapshot.Get does: a server answering a
// pipeline of reads takes one View for the run (BenchmarkPipelinedGets
// compares the three ways to pin such a run). The price is what it holds:
// while a View is open, the memtables of its moment stay in memory and the
// tables of its moment stay on disk, even after flushes and compactions
// replaced them. So close a View within the request that took it; hold a
// Snapshot for anything longer.
//
// An iterator from NewIter holds its own reference and stays valid after
// the View closes. A View is not safe for concurrent use; close it before
// the DB.
type View struct {
	db  *DB
	rs  *readState
	seq base.SeqNum
}

// NewView pins the DB's current state for reads.
func (db *DB) NewView() (*View, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	rs, seq, err := db.loadReadStateAt(readSeqLatest)
	if err != nil {
		return nil, err
	}
	return &View{db: db, rs: rs, seq: seq}, nil
}

// Get is DB.Get as of the view.
func (v *View) Get(key []byte) ([]byte, error) {
	val, _, err := v.GetWithExpiry(key)
	return val, err
}

// GetWithExpiry is DB.GetWithExpiry as of the view. Expiry is judged by
// the clock now, as for a Snapshot.
func (v *View) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if v.rs == nil || v.db.closed.Load() {
		return nil, time.Time{}, ErrClosed
	}
	return v.db.getIn(v.rs, nil, key, v.seq)
}

// NewIter returns an iterator over the view's state.
func (v *View) NewIter(o *IterOptions) (*Iterator, error) {
	if v.rs == nil || v.db.closed.Load() {
		return nil, ErrClosed
	}
	// The view's own reference keeps the count above zero, so this one
	// cannot race the state's teardown.
	v.rs.refs.Add(1)
	return v.db.newIterIn(o, v.rs, v.seq)
}

// Close releases the view. Closing twice is an error.
func (v *View) Close() error {
	if v.rs == nil {
		return ErrClosed
	}
	v.rs.unref()
	v.rs = nil
	return nil
}
