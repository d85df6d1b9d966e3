package server

import (
	"bytes"
	"math/rand/v2"
	"slices"

	"github.com/lsmgo-dev/lsmgo"
)

// Random picks from a collection (HRANDFIELD, SRANDMEMBER, SPOP,
// ZRANDMEMBER) as keyspace methods: an LSM tree keeps no positions, so a
// pick either seeks (randomElem) or walks the elements once.

// Picks are made by seeking in a collection of at least seekMinSize
// elements holding seekPicks elements or more per pick: a pick then costs
// a few seeks where a pass costs a step per element. Smaller collections
// get exactly uniform picks from a pass; seeking is uniform only for
// element names spread evenly over their bytes (see randomElem).
const (
	seekMinSize = 1024
	seekPicks   = 64
)

// pickElems picks random elements under sub of m at key: count > 0
// distinct ones (all when count ≥ the collection's size), or -count with
// repetition. The picks come in random order. A few picks out of many are
// made by seeking (keyspace.randomElem); more are made in one pass over
// the elements.
func (ks *keyspace) pickElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, err error) {
	if count >= m.count {
		if elems, vals, err = ks.readElems(r, key, m, sub); err == nil {
			shuffle(elems, vals)
		}
		return elems, vals, err
	}
	if n := max(count, -count); m.count >= seekMinSize && n*seekPicks <= m.count {
		return ks.seekElems(r, key, m, sub, count)
	}
	return ks.passElems(r, key, m, sub, count)
}

// passElems makes pickElems' picks in one pass over the elements: random
// positions first, then the elements at them.
func (ks *keyspace) passElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, err error) {
	positions := randomPositions(m.count, count)
	pos := int64(0)
	err = ks.scanElemsIn(r, key, m, sub, nil, func(elem, val []byte) bool {
		for len(positions) > 0 && positions[0] == pos {
			elems = append(elems, bytes.Clone(elem))
			vals = append(vals, bytes.Clone(val))
			positions = positions[1:]
		}
		pos++
		return len(positions) > 0
	})
	if err != nil {
		return nil, nil, err
	}
	shuffle(elems, vals)
	return elems, vals, nil
}

// seekElems picks count elements by seeking: -count with repetition, or
// count distinct ones, redrawing a repeat (count is small against the
// collection's size, so repeats are rare unless the element names make
// the picks very uneven: after many redraws it gives up and makes the
// picks in one pass).
func (ks *keyspace) seekElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, err error) {
	var seen map[string]bool
	if count > 0 {
		seen = make(map[string]bool, count)
	}
	for n, draws := max(count, -count), int64(0); int64(len(elems)) < n; draws++ {
		if draws > 4*n+16 {
			return ks.passElems(r, key, m, sub, count)
		}
		elem, val, err := ks.randomElem(r, key, m, sub)
		if err != nil {
			return nil, nil, err
		}
		if seen != nil {
			if seen[string(elem)] {
				continue
			}
			seen[string(elem)] = true
		}
		elems, vals = append(elems, elem), append(vals, val)
	}
	return elems, vals, nil
}

// randomPositions returns, sorted, -count positions below n drawn with
// repetition when count < 0, or count distinct ones (count < n) drawn by
// Floyd's method, which needs memory for the picks only.
func randomPositions(n, count int64) []int64 {
	var positions []int64
	if count < 0 {
		positions = make([]int64, -count)
		for i := range positions {
			positions[i] = rand.Int64N(n)
		}
	} else {
		picked := make(map[int64]struct{}, count)
		for j := n - count; j < n; j++ {
			t := rand.Int64N(j + 1)
			if _, dup := picked[t]; dup {
				t = j
			}
			picked[t] = struct{}{}
			positions = append(positions, t)
		}
	}
	slices.Sort(positions)
	return positions
}

func shuffle(elems, vals [][]byte) {
	rand.Shuffle(len(elems), func(i, j int) {
		elems[i], elems[j] = elems[j], elems[i]
		vals[i], vals[j] = vals[j], vals[i]
	})
}
