package memtable

import (
	"math"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// iterator walks a memtable. It may or may not observe entries added after
// it was positioned, but it only ever lands on fully linked nodes.
type iterator struct {
	m     *Memtable
	nd    uint32 // current node; 0 when not positioned on an entry
	key   base.InternalKey
	value []byte
}

// NewIter returns an iterator over every version of every key. SeekGE and
// SeekLT take user keys. Key and Value alias the arena and, unlike the
// general base.InternalIterator contract, stay valid after the iterator
// moves, for as long as the Memtable is referenced.
func (m *Memtable) NewIter() base.InternalIterator { return &iterator{m: m} }

// setNode positions the iterator on nd, where the head means "before the
// first entry", i.e. invalid.
func (it *iterator) setNode(nd uint32) bool {
	if nd == it.m.head {
		nd = 0
	}
	it.nd = nd
	if nd == 0 {
		it.key, it.value = base.InternalKey{}, nil
		return false
	}
	k, v := it.m.entry(nd)
	it.key, it.value = decodeKey(k), v
	return true
}

// SeekGE moves to the newest version of the first user key >= key.
func (it *iterator) SeekGE(key []byte) bool {
	sk := makeSearchKey(key, math.MaxUint64)
	return it.setNode(it.m.findGE(&sk))
}

// SeekLT moves to the oldest version of the last user key < key.
func (it *iterator) SeekLT(key []byte) bool {
	sk := makeSearchKey(key, math.MaxUint64)
	return it.setNode(it.m.findLT(&sk))
}

// First moves to the first entry.
func (it *iterator) First() bool { return it.setNode(it.m.link(it.m.head, 0).Load()) }

// Last moves to the last entry.
func (it *iterator) Last() bool { return it.setNode(it.m.findLast()) }

// Next moves to the following entry.
func (it *iterator) Next() bool {
	if it.nd == 0 {
		return false
	}
	return it.setNode(it.m.link(it.nd, 0).Load())
}

// Prev searches for the predecessor from the top of the list, since nodes
// carry no back links; that costs a logarithmic search per step.
func (it *iterator) Prev() bool {
	if it.nd == 0 {
		return false
	}
	sk := makeSearchKey(it.key.UserKey, it.key.Trailer)
	return it.setNode(it.m.findLT(&sk))
}

// Valid reports whether the iterator is on an entry.
func (it *iterator) Valid() bool { return it.nd != 0 }

// Key returns the current internal key; its UserKey aliases the arena.
func (it *iterator) Key() base.InternalKey { return it.key }

// Value returns the current value, aliasing the arena.
func (it *iterator) Value() []byte { return it.value }

// Error is always nil: the memtable holds no data from disk.
func (it *iterator) Error() error { return nil }

// Close invalidates the iterator; it holds no resources.
func (it *iterator) Close() error {
	it.setNode(0)
	return nil
}
