package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

func userKey(i int) string { return fmt.Sprintf("k%04d", i) }

func TestOverlapsMatchesBruteForce(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for iter := range 200 {
		var v Version
		// L0: arbitrary ranges. L1: disjoint ranges with gaps.
		for i := range rng.IntN(6) {
			a, b := rng.IntN(100), rng.IntN(100)
			v.Files[0] = append(v.Files[0], meta(base.FileNum(i+1), userKey(min(a, b)), userKey(max(a, b)), base.SeqNum(100-i), base.SeqNum(100-i)))
		}
		for k := rng.IntN(5); k < 100; k += 2 + rng.IntN(10) {
			end := k + rng.IntN(5)
			v.Files[1] = append(v.Files[1], meta(base.FileNum(100+k), userKey(k), userKey(end), 1, 1))
			k = end
		}
		if err := v.CheckOrdering(); err != nil {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}
		for range 50 {
			var start, end []byte
			if rng.IntN(5) > 0 {
				start = []byte(userKey(rng.IntN(110)))
			}
			if rng.IntN(5) > 0 {
				end = []byte(userKey(rng.IntN(110)))
			}
			for level := range 2 {
				var want []*FileMetadata
				for _, f := range v.Files[level] {
					if (start == nil || bytes.Compare(f.Largest.UserKey, start) >= 0) &&
						(end == nil || bytes.Compare(f.Smallest.UserKey, end) <= 0) {
						want = append(want, f)
					}
				}
				if got := v.Overlaps(level, start, end); !slices.Equal(got, want) {
					t.Fatalf("seed %d iter %d: L%d Overlaps(%q, %q) = %v, want %v", seed, iter, level, start, end, got, want)
				}
			}
		}
	}
}

func TestCheckOrdering(t *testing.T) {
	tests := []struct {
		name  string
		level int
		files []*FileMetadata
		ok    bool
	}{
		{"L1 disjoint", 1, []*FileMetadata{meta(1, "a", "b", 1, 1), meta(2, "c", "d", 1, 1)}, true},
		{"L1 overlapping", 1, []*FileMetadata{meta(1, "a", "c", 1, 1), meta(2, "b", "d", 1, 1)}, false},
		{"L1 sharing a boundary key", 1, []*FileMetadata{meta(1, "a", "b", 1, 1), meta(2, "b", "d", 1, 1)}, false},
		{"L1 unsorted", 1, []*FileMetadata{meta(2, "c", "d", 1, 1), meta(1, "a", "b", 1, 1)}, false},
		{"L0 newest first", 0, []*FileMetadata{meta(2, "a", "z", 5, 9), meta(1, "a", "z", 1, 4)}, true},
		{"L0 oldest first", 0, []*FileMetadata{meta(1, "a", "z", 1, 4), meta(2, "a", "z", 5, 9)}, false},
		{"inverted bounds", 3, []*FileMetadata{meta(1, "z", "a", 1, 1)}, false},
	}
	for _, tc := range tests {
		var v Version
		v.Files[tc.level] = tc.files
		if err := v.CheckOrdering(); (err == nil) != tc.ok {
			t.Errorf("%s: CheckOrdering = %v", tc.name, err)
		}
	}
}

func TestVersionStringAndSizes(t *testing.T) {
	var v Version
	if v.String() != "(empty)\n" {
		t.Fatalf("empty version prints %q", v.String())
	}
	v.Files[0] = []*FileMetadata{meta(3, "a", "b", 1, 2)}
	v.Files[2] = []*FileMetadata{meta(4, "c", "d", 1, 2), meta(5, "e", "f", 1, 2)}
	s := v.String()
	for _, want := range []string{"L0:\n  000003.sst:[\"a\"#2,SET-\"b\"#1,SET] size=300 seq=[1,2]\n", "L2:\n", "000005.sst"} {
		if !strings.Contains(s, want) {
			t.Fatalf("String() = %q lacks %q", s, want)
		}
	}
	if v.LevelSize(2) != 900 || v.LevelSize(1) != 0 {
		t.Fatalf("LevelSize(2) = %d, LevelSize(1) = %d", v.LevelSize(2), v.LevelSize(1))
	}
}
