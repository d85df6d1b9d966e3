package compaction

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// gpFile is a grandparent covering user keys [lo, hi] with size bytes.
func gpFile(lo, hi string, size uint64) *manifest.FileMetadata {
	return &manifest.FileMetadata{
		Size:     size,
		Smallest: base.MakeInternalKey([]byte(lo), 1, base.KindSet),
		Largest:  base.MakeInternalKey([]byte(hi), 1, base.KindSet),
	}
}

// splitKeys feeds keys through a splitter as a table writer would, each
// key adding entrySize bytes, and returns the user key that starts every
// table after the first.
func splitKeys(s *OutputSplitter, keys []base.InternalKey, entrySize uint64) []string {
	var cuts []string
	var size uint64
	for _, k := range keys {
		if s.ShouldCut(k, size) {
			cuts = append(cuts, string(k.UserKey))
			s.Reset()
			size = 0
		}
		size += entrySize
	}
	return cuts
}

func TestOutputSplitterSize(t *testing.T) {
	var keys []base.InternalKey
	for _, uk := range []string{"a", "b", "c", "d", "e"} {
		// Three versions of each user key: 30 bytes per user key.
		for seq := base.SeqNum(3); seq > 0; seq-- {
			keys = append(keys, base.MakeInternalKey([]byte(uk), seq, base.KindSet))
		}
	}
	// Target 25 is reached inside "a" (after 3 entries) but the cut waits
	// for "b"; likewise for each later key.
	c := &Compaction{}
	if got := fmt.Sprint(splitKeys(NewOutputSplitter(c, 25), keys, 10)); got != "[b c d e]" {
		t.Fatalf("cuts %s, want [b c d e]", got)
	}
	if got := fmt.Sprint(splitKeys(NewOutputSplitter(c, 60), keys, 10)); got != "[c e]" {
		t.Fatalf("cuts %s, want [c e]", got)
	}
}

func TestOutputSplitterGrandparents(t *testing.T) {
	// Each grandparent is 4 target sizes; a table may overlap 10.
	c := &Compaction{Grandparents: []*manifest.FileMetadata{
		gpFile("a", "a", 400), gpFile("c", "c", 400), gpFile("e", "e", 400),
		gpFile("g", "g", 400), gpFile("i", "i", 400), gpFile("k", "k", 400),
		gpFile("m", "m", 400),
	}}
	var keys []base.InternalKey
	for _, uk := range []string{"b", "d", "f", "h", "j", "l", "n"} {
		keys = append(keys, base.MakeInternalKey([]byte(uk), 1, base.KindSet))
	}
	// "a" precedes the first key and is not counted. The first table
	// starts at "b" and passes c, e (800 bytes), then g (1200 > 1000) on
	// reaching "h": cut there. The second table starts at "h" and passes
	// i, k, m by "n".
	if got := fmt.Sprint(splitKeys(NewOutputSplitter(c, 100), keys, 1)); got != "[h n]" {
		t.Fatalf("cuts %s, want [h n]", got)
	}
}

// TestOutputSplitterUserKeys feeds random streams with many versions per
// user key, random sizes and grandparents, and checks that no cut falls
// between two versions of one user key, that every cut has a reason, and
// that no table grows past its target at a user-key change.
func TestOutputSplitterUserKeys(t *testing.T) {
	seed := uint64(99)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for iter := range 500 {
		const target = 100
		c := &Compaction{}
		for k := 0; k < 200; k += 1 + r.IntN(20) {
			c.Grandparents = append(c.Grandparents, gpFile(fmt.Sprintf("k%03d", k), fmt.Sprintf("k%03d", k+r.IntN(3)), uint64(r.IntN(600))))
			k += 3
		}
		s := NewOutputSplitter(c, target)
		var prev []byte
		var size, overlap uint64
		gp := 0
		for k := 0; k < 200; k += 1 + r.IntN(3) {
			uk := fmt.Appendf(nil, "k%03d", k)
			for seq := base.SeqNum(1 + r.IntN(5)); seq > 0; seq-- {
				key := base.MakeInternalKey(uk, seq, base.KindSet)
				newUserKey := prev != nil && !bytes.Equal(prev, uk)
				// Model: grandparents passed while this table is open.
				if newUserKey {
					for gp < len(c.Grandparents) && string(c.Grandparents[gp].Largest.UserKey) < string(uk) {
						overlap += c.Grandparents[gp].Size
						gp++
					}
				} else if prev == nil {
					for gp < len(c.Grandparents) && string(c.Grandparents[gp].Largest.UserKey) < string(uk) {
						gp++
					}
				}
				mustCut := newUserKey && (size >= target || overlap > 10*target)
				if cut := s.ShouldCut(key, size); cut != mustCut {
					t.Fatalf("iteration %d: ShouldCut(%s, %d) = %v with overlap %d, want %v", iter, key, size, cut, overlap, mustCut)
				} else if cut {
					s.Reset()
					size, overlap = 0, 0
				}
				prev = uk
				size += uint64(1 + r.IntN(40))
			}
		}
	}
}
