package iter

import "testing"

func TestSliceIter(t *testing.T) {
	r := newRand(t)
	for range 50 {
		keySpace := 1 + r.IntN(30)
		es := randEntries(r, r.IntN(40), keySpace, 8, "s")
		it := NewSliceIter(es)
		checkScans(t, it, es)
		randomWalk(t, r, it, es, keySpace, 200)
	}
}
