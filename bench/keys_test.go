package bench

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestKeysSortLikeIndexesAndMissingKeysInterleave(t *testing.T) {
	for _, size := range []int{8, 16, 32} {
		prev := make([]byte, size)
		key, missing := make([]byte, size), make([]byte, size)
		for i := uint64(0); i < 1000; i++ {
			putKey(key, i*977)
			putMissingKey(missing, i*977)
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				t.Fatalf("size %d: key %d does not sort after key %d", size, i*977, (i-1)*977)
			}
			if bytes.Compare(key, missing) >= 0 {
				t.Fatalf("size %d: missing twin of %d does not sort after it", size, i*977)
			}
			putKey(prev, i*977+1)
			if bytes.Compare(missing, prev) >= 0 {
				t.Fatalf("size %d: missing twin of %d does not sort before key %d", size, i*977, i*977+1)
			}
			if got := binary.BigEndian.Uint64(key); got != 2*i*977 {
				t.Fatalf("key %d holds the number %d, want %d", i*977, got, 2*i*977)
			}
			copy(prev, key)
		}
	}
}

func TestPermutationVisitsEveryKeyOnceAndIsFixedBySeed(t *testing.T) {
	const n = 10007
	p := permutation(n, 42)
	seen := make([]bool, n)
	for _, v := range p {
		if seen[v] {
			t.Fatalf("index %d twice", v)
		}
		seen[v] = true
	}
	q := permutation(n, 42)
	r := permutation(n, 43)
	same, differs := true, false
	for i := range p {
		same = same && p[i] == q[i]
		differs = differs || p[i] != r[i]
	}
	if !same || !differs {
		t.Fatalf("permutation not determined by its seed (same seed equal: %t, other seed differs: %t)", same, differs)
	}
}

func TestKeyChooserDistributions(t *testing.T) {
	const n, draws = 1000, 200000
	z := newZipf(n)
	for _, d := range []Distribution{Uniform, Zipfian, Latest} {
		c := keyChooser{rng: newRand(7), n: n, dist: d, z: z}
		counts := make([]int, n)
		for range draws {
			k := c.next()
			if k >= n {
				t.Fatalf("%s: key %d out of [0, %d)", d, k, n)
			}
			counts[k]++
		}
		top := 0
		for _, v := range counts {
			top = max(top, v)
		}
		switch d {
		case Uniform:
			// 200 expected per key; 400 is about 14 standard deviations.
			if top > 2*draws/n {
				t.Errorf("uniform: hottest key drawn %d times, want about %d", top, draws/n)
			}
		case Zipfian, Latest:
			// With theta 0.99 over 1000 keys the hottest key gets ~13%.
			if top < draws/20 {
				t.Errorf("%s: hottest key drawn only %d of %d times", d, top, draws)
			}
		}
		if d == Latest && counts[n-1] != top {
			t.Errorf("latest: the last key is not the hottest")
		}
	}
}

func TestValuesCompressToTheConfiguredRatio(t *testing.T) {
	for _, ratio := range []float64{0.25, 0.5, 1} {
		pool := valuePool(1, ratio, defaultValueSize)
		s := newValueStream(pool, 128, 0)
		var block []byte
		for len(block) < 4096 {
			block = append(block, s.next()...)
		}
		got := float64(len(snappy.Encode(nil, block))) / float64(len(block))
		if got < ratio-0.15 || got > ratio+0.15 {
			t.Errorf("compressibility %g: a 4 KiB block of values compresses to %.2f", ratio, got)
		}
	}
	a, b := valuePool(9, 0.5, defaultValueSize), valuePool(9, 0.5, defaultValueSize)
	if !bytes.Equal(a, b) {
		t.Error("value pool not determined by its seed")
	}
}

// TestLargeValuesIncompressible checks that values far larger than the
// default pool still get a pool of many distinct values, and that with
// compressibility 1 a run of them does not shrink: a compressor must not
// find one value repeated in the next.
func TestLargeValuesIncompressible(t *testing.T) {
	const size = 100 << 10
	pool := valuePool(1, 1, size)
	if len(pool) < poolValues*size {
		t.Fatalf("pool of %d bytes for %d-byte values, want at least %d", len(pool), size, poolValues*size)
	}
	s := newValueStream(pool, size, 3)
	seen := map[string]bool{}
	var run []byte
	for range poolValues / 2 {
		v := s.next()
		if len(v) != size {
			t.Fatalf("value of %d bytes, want %d", len(v), size)
		}
		if seen[string(v)] {
			t.Fatal("a value repeats within half a pool's worth of values")
		}
		seen[string(v)] = true
		run = append(run, v...)
	}
	if got := float64(len(snappy.Encode(nil, run))) / float64(len(run)); got < 0.95 {
		t.Errorf("%d incompressible values compress to %.2f", poolValues/2, got)
	}
}
