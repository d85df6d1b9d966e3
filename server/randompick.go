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

// walkCost is what reading a collection's elements cost in the engine:
// the live elements the iterators stopped at and the dead ones (deleted,
// their deletions not yet dropped by compaction) they passed over.
type walkCost struct{ live, dead int64 }

func (w *walkCost) add(o walkCost) { w.live, w.dead = w.live+o.live, w.dead+o.dead }

// mostlyDead reports whether the walks passed over so many dead elements
// that a writer does better to move the collection's live elements to a
// fresh version (conn.freshColl) than to walk them again: each pick after
// random deletions passes over about dead/live of them, and SPOP, which
// adds one each time, would otherwise slow down as the set drains (a pass
// over a 1,000-member set that had been 63,000 members long stepped over
// 62,000 deletions per pop). Moving costs the live elements once, paid
// for by the at least 2·live deletions since the last move.
func (w walkCost) mostlyDead() bool { return w.dead > 64 && w.dead > 2*w.live }

// pickElems picks random elements under sub of m at key: count > 0
// distinct ones (all when count ≥ the collection's size), or -count with
// repetition. The picks come in random order. A few picks out of many are
// made by seeking (keyspace.randomElem, with the memo nodes when not nil);
// more are made in one pass over the elements. cost is what the picks
// cost in the engine.
func (ks *keyspace) pickElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64, nodes *pickNodes) (elems, vals [][]byte, cost walkCost, err error) {
	if count >= m.count {
		// Every element: nothing is left to walk again.
		if elems, vals, err = ks.readElems(r, key, m, sub); err == nil {
			shuffle(elems, vals)
		}
		return elems, vals, cost, err
	}
	if n := max(count, -count); m.count >= seekMinSize && n*seekPicks <= m.count {
		return ks.seekElems(r, key, m, sub, count, nodes)
	}
	return ks.passElems(r, key, m, sub, count)
}

// passElems makes pickElems' picks in one pass over the elements: random
// positions first, then the elements at them.
func (ks *keyspace) passElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, cost walkCost, err error) {
	positions := randomPositions(m.count, count)
	pos := int64(0)
	cost.dead, err = ks.walkElems(r, key, m, sub, nil, func(elem, val []byte) bool {
		for len(positions) > 0 && positions[0] == pos {
			elems = append(elems, bytes.Clone(elem))
			vals = append(vals, bytes.Clone(val))
			positions = positions[1:]
		}
		pos++
		return len(positions) > 0
	})
	if err != nil {
		return nil, nil, cost, err
	}
	cost.live = pos
	shuffle(elems, vals)
	return elems, vals, cost, nil
}

// seekElems picks count elements by seeking: -count with repetition, or
// count distinct ones, redrawing a repeat (count is small against the
// collection's size, so repeats are rare unless the element names make
// the picks very uneven: after many redraws it gives up and makes the
// picks in one pass).
func (ks *keyspace) seekElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte, count int64, nodes *pickNodes) (elems, vals [][]byte, cost walkCost, err error) {
	var seen map[string]bool
	if count > 0 {
		seen = make(map[string]bool, count)
	}
	for n, draws := max(count, -count), int64(0); int64(len(elems)) < n; draws++ {
		if draws > 4*n+16 {
			elems, vals, pass, err := ks.passElems(r, key, m, sub, count)
			cost.add(pass)
			return elems, vals, cost, err
		}
		elem, val, c, err := ks.randomElem(r, key, m, sub, nodes)
		cost.add(c)
		if err != nil {
			return nil, nil, cost, err
		}
		if seen != nil {
			if seen[string(elem)] {
				continue
			}
			seen[string(elem)] = true
		}
		elems, vals = append(elems, elem), append(vals, val)
	}
	return elems, vals, cost, nil
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
