package lsmgo

import "time"

// Reader is the read side of the API: point reads and ordered iteration
// over one consistent state. DB reads the newest state, Snapshot and View
// the state of the moment they were taken; code that only reads can take
// a Reader and be handed any of them.
//
// Reader has no Close: whoever took a Snapshot or View closes it, not the
// code it lends it to. Batch is not a Reader: it is write-only (an
// encoded list of operations, with no index to read through), so a
// transaction that must read its own writes reads them from its own
// bookkeeping.
type Reader interface {
	// Get returns a copy of the value of key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// GetWithExpiry is Get plus the key's expiry time (the zero time when
	// it has none).
	GetWithExpiry(key []byte) ([]byte, time.Time, error)
	// NewIter returns an iterator over the reader's state; close it.
	NewIter(o *IterOptions) (*Iterator, error)
}

var (
	_ Reader = (*DB)(nil)
	_ Reader = (*Snapshot)(nil)
	_ Reader = (*View)(nil)
)
