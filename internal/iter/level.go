package iter

import (
	"sort"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// levelIter concatenates the tables of one level. At most one table
// iterator is open at a time: cur, for files[idx]. It stays open after the
// level runs off either end so that turning back into the same table costs
// no reopen.
type levelIter[F any] struct {
	files  []F
	bounds func(F) (smallest, largest []byte)
	open   func(F) (base.InternalIterator, error)

	idx   int // index of the file cur iterates; -1 when none is open
	cur   base.InternalIterator
	valid bool
	err   error
}

// NewLevelIter concatenates the tables of one level. files must be sorted by
// smallest user key with disjoint user-key ranges; bounds returns a file's
// smallest and largest user keys, both inclusive. A table is opened, with
// open, only when positioning reaches it; seeks pick the table by binary
// search on the bounds, so a seek that lands outside every table opens
// nothing. The level iterator closes a table's iterator when it moves to
// another table and on Close. An error from open, or from a table's
// iterator or its Close, becomes the level iterator's sticky error.
func NewLevelIter[F any](files []F, bounds func(F) (smallest, largest []byte), open func(F) (base.InternalIterator, error)) base.InternalIterator {
	return &levelIter[F]{files: files, bounds: bounds, open: open, idx: -1}
}

// searchLargestGE returns the index of the first file whose largest user
// key is >= key, or len(files) when there is none.
func (l *levelIter[F]) searchLargestGE(key []byte) int {
	return sort.Search(len(l.files), func(i int) bool {
		_, largest := l.bounds(l.files[i])
		return base.CompareUser(largest, key) >= 0
	})
}

// searchSmallestGE returns the index of the first file whose smallest user
// key is >= key, or len(files) when there is none.
func (l *levelIter[F]) searchSmallestGE(key []byte) int {
	return sort.Search(len(l.files), func(i int) bool {
		smallest, _ := l.bounds(l.files[i])
		return base.CompareUser(smallest, key) >= 0
	})
}

// load makes files[i] the current table, reusing its iterator when it is
// already open. It reports false after recording an error.
func (l *levelIter[F]) load(i int) bool {
	if i == l.idx {
		return true
	}
	if l.cur != nil {
		err := l.cur.Close()
		l.cur, l.idx = nil, -1
		if err != nil {
			l.err = err
			return false
		}
	}
	it, err := l.open(l.files[i])
	if err != nil {
		l.err = err
		return false
	}
	l.cur, l.idx = it, i
	return true
}

// settle finishes a move of cur that produced valid; when cur ran out it
// continues into the neighbouring tables in the direction of travel,
// skipping empty ones, until an entry, an error or the end of the level.
func (l *levelIter[F]) settle(valid, reverse bool) bool {
	for !valid {
		if err := l.cur.Error(); err != nil {
			l.err = err
			break
		}
		next := l.idx + 1
		if reverse {
			next = l.idx - 1
		}
		if next < 0 || next >= len(l.files) || !l.load(next) {
			break
		}
		if reverse {
			valid = l.cur.Last()
		} else {
			valid = l.cur.First()
		}
	}
	l.valid = valid
	return valid
}

// enter makes files[i] the current table before a seek, or reports false
// when i is out of range or an error is (or becomes) sticky.
func (l *levelIter[F]) enter(i int) bool {
	l.valid = false
	return l.err == nil && i >= 0 && i < len(l.files) && l.load(i)
}

func (l *levelIter[F]) SeekGE(key []byte) bool {
	if !l.enter(l.searchLargestGE(key)) {
		return false
	}
	return l.settle(l.cur.SeekGE(key), false)
}

func (l *levelIter[F]) SeekLT(key []byte) bool {
	if !l.enter(l.searchSmallestGE(key) - 1) {
		return false
	}
	return l.settle(l.cur.SeekLT(key), true)
}

func (l *levelIter[F]) First() bool {
	if !l.enter(0) {
		return false
	}
	return l.settle(l.cur.First(), false)
}

func (l *levelIter[F]) Last() bool {
	if !l.enter(len(l.files) - 1) {
		return false
	}
	return l.settle(l.cur.Last(), true)
}

func (l *levelIter[F]) Next() bool {
	if !l.valid {
		return false
	}
	return l.settle(l.cur.Next(), false)
}

func (l *levelIter[F]) Prev() bool {
	if !l.valid {
		return false
	}
	return l.settle(l.cur.Prev(), true)
}

func (l *levelIter[F]) Valid() bool           { return l.valid }
func (l *levelIter[F]) Key() base.InternalKey { return l.cur.Key() }
func (l *levelIter[F]) Value() []byte         { return l.cur.Value() }
func (l *levelIter[F]) Error() error          { return l.err }

// Close closes the open table iterator, if any, and returns the sticky
// error if there was one, else that Close's error.
func (l *levelIter[F]) Close() error {
	err := l.err
	if l.cur != nil {
		if cerr := l.cur.Close(); cerr != nil && err == nil {
			err = cerr
		}
		l.cur, l.idx = nil, -1
	}
	l.valid = false
	return err
}
