package iter

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// mergeChild is one source of a merging iterator. key caches the child's
// current key so heap comparisons cost a bytes.Compare, not two interface
// calls; it is refreshed after every move of the child.
type mergeChild struct {
	iter  base.InternalIterator
	key   base.InternalKey
	index int
}

// mergingIter merges children with a binary heap of the valid ones: a
// min-heap going forward, a max-heap going backward. Ties between
// identical internal keys break by child index so the merged order is
// total and both directions agree on it.
//
// Direction invariant, which is what makes switching direction exact: when
// moving forward every child not on top sits on its first entry after the
// top in merged order (or is exhausted, when it has none); when moving
// backward on its last entry before the top (or is exhausted). So one step
// of each non-top child the other way, First or Last for exhausted ones,
// re-establishes the invariant for the opposite direction.
type mergingIter struct {
	children []mergeChild
	heap     []*mergeChild
	reverse  bool
	err      error
}

// NewMergingIter merges child iterators into one stream ordered by
// base.CompareInternal. Every entry of every child comes out, with no
// deduplication of user keys; identical internal keys in two children come
// out lower child index first. It takes ownership of the children: Close
// closes them all. The first error any child reports makes the merging
// iterator invalid and is returned by Error and Close.
func NewMergingIter(children ...base.InternalIterator) base.InternalIterator {
	m := &mergingIter{
		children: make([]mergeChild, len(children)),
		heap:     make([]*mergeChild, 0, len(children)),
	}
	for i, c := range children {
		m.children[i] = mergeChild{iter: c, index: i}
	}
	return m
}

// less orders heap entries: the top of the heap is the next entry to yield
// in the current direction.
func (m *mergingIter) less(a, b *mergeChild) bool {
	c := bytes.Compare(a.key.UserKey, b.key.UserKey)
	if c == 0 {
		// Trailers sort descending within a user key.
		switch {
		case a.key.Trailer > b.key.Trailer:
			c = -1
		case a.key.Trailer < b.key.Trailer:
			c = 1
		default:
			c = a.index - b.index
		}
	}
	if m.reverse {
		return c > 0
	}
	return c < 0
}

func (m *mergingIter) siftDown(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// admit records the outcome of a move of child c: a valid child enters the
// heap under construction, an invalid one is checked for an error.
func (m *mergingIter) admit(c *mergeChild, valid bool) {
	if valid {
		c.key = c.iter.Key()
		m.heap = append(m.heap, c)
		return
	}
	if err := c.iter.Error(); err != nil && m.err == nil {
		m.err = err
	}
}

// build finishes a positioning call that moved every child: it heapifies
// what admit collected, or empties the heap after an error.
func (m *mergingIter) build(reverse bool) bool {
	m.reverse = reverse
	if m.err != nil {
		m.heap = m.heap[:0]
		return false
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.siftDown(i)
	}
	return len(m.heap) > 0
}

func (m *mergingIter) SeekGE(key []byte) bool {
	if m.err != nil {
		return false
	}
	m.heap = m.heap[:0]
	for i := range m.children {
		c := &m.children[i]
		m.admit(c, c.iter.SeekGE(key))
	}
	return m.build(false)
}

func (m *mergingIter) SeekLT(key []byte) bool {
	if m.err != nil {
		return false
	}
	m.heap = m.heap[:0]
	for i := range m.children {
		c := &m.children[i]
		m.admit(c, c.iter.SeekLT(key))
	}
	return m.build(true)
}

func (m *mergingIter) First() bool {
	if m.err != nil {
		return false
	}
	m.heap = m.heap[:0]
	for i := range m.children {
		c := &m.children[i]
		m.admit(c, c.iter.First())
	}
	return m.build(false)
}

func (m *mergingIter) Last() bool {
	if m.err != nil {
		return false
	}
	m.heap = m.heap[:0]
	for i := range m.children {
		c := &m.children[i]
		m.admit(c, c.iter.Last())
	}
	return m.build(true)
}

// switchDirection turns the iterator around while it sits on top, moving
// every other child one step towards the new direction (see mergingIter).
// The top child itself is then advanced by the caller as usual.
func (m *mergingIter) switchDirection(reverse bool) bool {
	top := m.heap[0]
	m.heap = m.heap[:0]
	m.heap = append(m.heap, top)
	for i := range m.children {
		c := &m.children[i]
		if c == top {
			continue
		}
		var valid bool
		switch {
		case reverse && c.iter.Valid():
			valid = c.iter.Prev()
		case reverse:
			valid = c.iter.Last()
		case c.iter.Valid():
			valid = c.iter.Next()
		default:
			valid = c.iter.First()
		}
		m.admit(c, valid)
	}
	return m.build(reverse)
}

// step advances the top child in the current direction and restores the
// heap.
func (m *mergingIter) step() bool {
	top := m.heap[0]
	var valid bool
	if m.reverse {
		valid = top.iter.Prev()
	} else {
		valid = top.iter.Next()
	}
	if valid {
		top.key = top.iter.Key()
	} else {
		if err := top.iter.Error(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap[last] = nil
		m.heap = m.heap[:last]
		if last == 0 {
			return false
		}
	}
	m.siftDown(0)
	return true
}

func (m *mergingIter) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.reverse && !m.switchDirection(false) {
		return false
	}
	return m.step()
}

func (m *mergingIter) Prev() bool {
	if len(m.heap) == 0 {
		return false
	}
	if !m.reverse && !m.switchDirection(true) {
		return false
	}
	return m.step()
}

func (m *mergingIter) Valid() bool           { return len(m.heap) > 0 }
func (m *mergingIter) Key() base.InternalKey { return m.heap[0].key }
func (m *mergingIter) Value() []byte         { return m.heap[0].iter.Value() }
func (m *mergingIter) Error() error          { return m.err }

// Close closes every child and returns the iteration error if there was
// one, else the first error a child's Close returned.
func (m *mergingIter) Close() error {
	err := m.err
	for i := range m.children {
		if cerr := m.children[i].iter.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	m.heap = m.heap[:0]
	return err
}
