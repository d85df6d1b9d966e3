package lsmgo

import (
	"slices"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// Snapshot is a consistent, read-only view of the DB at the moment it was
// taken, and a Reader. Compaction keeps every version a live snapshot can
// see, so close snapshots when done with them. A snapshot is cheap to
// hold; for a burst of reads closed at once, a View is cheaper to take
// and read through (the package documentation compares them).
type Snapshot struct {
	db     *DB
	seq    base.SeqNum
	closed bool
}

// NewSnapshot captures the DB's current state.
func (db *DB) NewSnapshot() *Snapshot {
	db.mu.Lock()
	defer db.mu.Unlock()
	s := &Snapshot{db: db, seq: base.SeqNum(db.visibleSeq.Load())}
	db.mu.snapshots.add(s.seq)
	return s
}

// Get reads key as of the snapshot. Expiry is judged by the clock now, not
// at the snapshot's time.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	v, _, err := s.GetWithExpiry(key)
	return v, err
}

// GetWithExpiry is Get plus the key's expiry time (zero when none).
func (s *Snapshot) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if s.closed {
		return nil, time.Time{}, ErrClosed
	}
	if s.db.closed.Load() {
		return nil, time.Time{}, ErrClosed
	}
	return s.db.get(nil, key, s.seq)
}

// NewIter returns an iterator over the snapshot.
func (s *Snapshot) NewIter(o *IterOptions) (*Iterator, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.db.newIter(o, s.seq)
}

// Close releases the snapshot. Closing twice is an error.
func (s *Snapshot) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.db.mu.Lock()
	s.db.mu.snapshots.remove(s.seq)
	s.db.mu.Unlock()
	return nil
}

// snapshotList counts live snapshots per sequence number.
type snapshotList struct{ counts map[base.SeqNum]int }

func (l *snapshotList) add(seq base.SeqNum) {
	if l.counts == nil {
		l.counts = make(map[base.SeqNum]int)
	}
	l.counts[seq]++
}

func (l *snapshotList) remove(seq base.SeqNum) {
	if l.counts[seq]--; l.counts[seq] <= 0 {
		delete(l.counts, seq)
	}
}

func (l *snapshotList) count() int {
	n := 0
	for _, c := range l.counts {
		n += c
	}
	return n
}

// seqs returns the distinct snapshot sequence numbers, ascending, as the
// compaction filter wants them.
func (l *snapshotList) seqs() []base.SeqNum {
	if len(l.counts) == 0 {
		return nil
	}
	s := make([]base.SeqNum, 0, len(l.counts))
	for seq := range l.counts {
		s = append(s, seq)
	}
	slices.Sort(s)
	return s
}
