package lsmgo

import (
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// View is a short-lived, consistent read of the DB: point reads through it
// see exactly the writes acknowledged before NewView returned. It pins the
// memtables and tables of that moment instead of registering with
// compaction like a Snapshot, so it costs one reference instead of a lock,
// and each Get through it skips pinning the DB's state again: a server
// answering a pipeline of reads holds one View for the batch. Holding a
// View keeps its memtables' memory and its tables' files alive; close it
// promptly. A View is not safe for concurrent use.
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

// GetWithExpiry is DB.GetWithExpiry as of the view.
func (v *View) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if v.rs == nil {
		return nil, time.Time{}, ErrClosed
	}
	return v.db.getIn(v.rs, key, v.seq)
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
