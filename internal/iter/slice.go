package iter

import (
	"sort"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// Entry is one internal key and its value, the element of a slice iterator.
type Entry struct {
	Key   base.InternalKey
	Value []byte
}

// sliceIter walks a caller-owned slice; pos is -1 or len(entries) when
// unpositioned.
type sliceIter struct {
	entries []Entry
	pos     int
}

// NewSliceIter returns an iterator over entries, which must be sorted by
// base.CompareInternal and must not change while the iterator is in use.
// Key and Value return the caller's slices without copying. It never
// fails; Error and Close return nil.
func NewSliceIter(entries []Entry) base.InternalIterator {
	return &sliceIter{entries: entries, pos: -1}
}

// searchGE returns the index of the first entry whose user key is >= key.
func (s *sliceIter) searchGE(key []byte) int {
	return sort.Search(len(s.entries), func(i int) bool {
		return base.CompareUser(s.entries[i].Key.UserKey, key) >= 0
	})
}

func (s *sliceIter) setPos(pos int) bool {
	if pos < 0 || pos >= len(s.entries) {
		s.pos = -1
		return false
	}
	s.pos = pos
	return true
}

func (s *sliceIter) SeekGE(key []byte) bool { return s.setPos(s.searchGE(key)) }
func (s *sliceIter) SeekLT(key []byte) bool { return s.setPos(s.searchGE(key) - 1) }
func (s *sliceIter) First() bool            { return s.setPos(0) }
func (s *sliceIter) Last() bool             { return s.setPos(len(s.entries) - 1) }

func (s *sliceIter) Next() bool {
	if s.pos < 0 {
		return false
	}
	return s.setPos(s.pos + 1)
}

func (s *sliceIter) Prev() bool {
	if s.pos < 0 {
		return false
	}
	return s.setPos(s.pos - 1)
}

func (s *sliceIter) Valid() bool           { return s.pos >= 0 }
func (s *sliceIter) Key() base.InternalKey { return s.entries[s.pos].Key }
func (s *sliceIter) Value() []byte         { return s.entries[s.pos].Value }
func (s *sliceIter) Error() error          { return nil }
func (s *sliceIter) Close() error          { return nil }
