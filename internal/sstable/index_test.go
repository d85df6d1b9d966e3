package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// randomUserKey draws from a small alphabet with a shared prefix, lengths
// around the 8-byte head, so heads tie, keys are prefixes of each other and
// some keys are empty.
func randomUserKey(rng *rand.Rand, prefix []byte) []byte {
	k := append([]byte(nil), prefix[:rng.IntN(len(prefix)+1)]...)
	for n := rng.IntN(14); n > 0; n-- {
		k = append(k, "\x00ab\xff"[rng.IntN(4)])
	}
	return k
}

// TestIndexSeekGE checks tableIndex.seekGE against a linear search over
// random sorted separators, for targets inside, around and far from them.
func TestIndexSeekGE(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := 0; round < 300; round++ {
		prefix := []byte("user:0000")[:rng.IntN(10)]
		var keys [][]byte
		for n := rng.IntN(60); n > 0; n-- {
			seq := base.SeqNum(rng.IntN(4))
			keys = append(keys, base.MakeInternalKey(randomUserKey(rng, prefix), seq, base.KindSet).Append(nil))
		}
		slices.SortFunc(keys, base.CompareEncoded)
		keys = slices.CompactFunc(keys, func(a, b []byte) bool { return bytes.Equal(a, b) })
		w := blockWriter{restartInterval: 1}
		for i, k := range keys {
			w.add(k, blockHandle{uint64(i) * 100, 90}.append(nil))
		}
		x, err := decodeIndex(w.finish(), "test", 0)
		if err != nil {
			t.Fatal(err)
		}
		if x.len() != len(keys) {
			t.Fatalf("decoded %d separators, wrote %d", x.len(), len(keys))
		}
		for i, k := range keys {
			if !bytes.Equal(x.key(i), k) || x.handles[i].offset != uint64(i)*100 {
				t.Fatalf("separator %d = %q %v, wrote %q", i, x.key(i), x.handles[i], k)
			}
		}
		for probe := 0; probe < 200; probe++ {
			var target []byte
			if len(keys) > 0 && rng.IntN(3) == 0 {
				target = keys[rng.IntN(len(keys))]
			} else {
				target = base.MakeInternalKey(randomUserKey(rng, []byte("user:0000")), base.SeqNum(rng.IntN(5)), base.Kind(rng.IntN(3))).Append(nil)
			}
			want := len(keys)
			for i, k := range keys {
				if base.CompareEncoded(k, target) >= 0 {
					want = i
					break
				}
			}
			if got := x.seekGE(target); got != want {
				t.Fatalf("seed %d: seekGE(%q) = %d, want %d over %q", seed, target, got, want, keys)
			}
		}
	}
}

// TestIndexErrors feeds index blocks with bad entries to decodeIndex.
func TestIndexErrors(t *testing.T) {
	for _, tc := range []struct {
		key, val []byte
	}{
		{[]byte("short"), blockHandle{0, 1}.append(nil)},
		{base.MakeInternalKey([]byte("k"), 1, base.KindSet).Append(nil), []byte{0x80}},
		{base.MakeInternalKey([]byte("k"), 1, base.KindSet).Append(nil), append(blockHandle{0, 1}.append(nil), 0)},
	} {
		w := blockWriter{restartInterval: 1}
		w.add(tc.key, tc.val)
		if _, err := decodeIndex(w.finish(), "test", 7); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("decodeIndex(%q -> %x) = %v, want corruption", tc.key, tc.val, err)
		}
	}
}
