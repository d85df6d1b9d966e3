package server

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestSlowlogRingAgainstModel adds entries to the slow log under maximum
// lengths that change at random (as CONFIG SET slowlog-max-len does, both
// through the next add and through trim) and checks every read against a
// newest-first slice trimmed the simple way.
func TestSlowlogRingAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l slowlog
	var model []int64 // ids, newest first
	var nextID int64
	maxLen := 4
	for i := range 5000 {
		switch r := rng.IntN(100); {
		case r < 3:
			maxLen = rng.IntN(10)
			l.trim(maxLen)
			model = model[:min(len(model), maxLen)]
		case r < 5:
			maxLen = rng.IntN(10)
		case r < 6:
			l.reset()
			model = nil
		default:
			l.addFrom("addr", "", [][]byte{[]byte("set"), []byte(strconv.Itoa(i))}, 0, maxLen)
			model = append([]int64{nextID}, model...)
			nextID++
			model = model[:min(len(model), maxLen)]
		}
		n := rng.IntN(12) - 1
		got := l.get(n)
		want := model
		if n >= 0 {
			want = model[:min(n, len(model))]
		}
		if len(got) != len(want) || l.len() != len(model) {
			t.Fatalf("step %d: get(%d) gave %d entries, len %d; want %d of %d", i, n, len(got), l.len(), len(want), len(model))
		}
		for j, e := range got {
			if e.id != want[j] {
				t.Fatalf("step %d: entry %d has id %d, want %d", i, j, e.id, want[j])
			}
		}
	}
}
