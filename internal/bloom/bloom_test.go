package bloom

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestBitsPerKeyToProbes(t *testing.T) {
	for _, tc := range []struct{ bits, probes int }{{-1, 1}, {0, 1}, {1, 1}, {2, 1}, {5, 3}, {10, 7}, {16, 11}, {20, 14}, {100, 30}} {
		if got := BitsPerKeyToProbes(tc.bits); got != tc.probes {
			t.Errorf("BitsPerKeyToProbes(%d) = %d, want %d", tc.bits, got, tc.probes)
		}
	}
}

// TestFalsePositiveRate checks that no added key is ever reported absent
// and that the false-positive rate is close to theory (0.82% at 10 bits
// per key and 7 probes) for several filter sizes.
func TestFalsePositiveRate(t *testing.T) {
	for _, tc := range []struct {
		bitsPerKey int
		keys       int
		maxRate    float64
	}{
		{10, 100, 0.03},
		{10, 10000, 0.0125},
		{10, 200000, 0.0125},
		{20, 10000, 0.001},
		{5, 10000, 0.12},
	} {
		t.Run(fmt.Sprintf("bits%d-keys%d", tc.bitsPerKey, tc.keys), func(t *testing.T) {
			b := NewBuilder(tc.bitsPerKey)
			for i := 0; i < tc.keys; i++ {
				b.AddKey(fmt.Appendf(nil, "user-key-%d", i))
			}
			f := b.Finish()
			for i := 0; i < tc.keys; i++ {
				if !MayContain(f, fmt.Appendf(nil, "user-key-%d", i)) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			const probes = 100000
			fp := 0
			for i := 0; i < probes; i++ {
				if MayContain(f, fmt.Appendf(nil, "other-key-%d", i)) {
					fp++
				}
			}
			rate := float64(fp) / probes
			t.Logf("%d bytes, false positive rate %.4f", len(f), rate)
			if rate > tc.maxRate {
				t.Fatalf("false positive rate %.4f above %.4f", rate, tc.maxRate)
			}
		})
	}
}

func TestEmptyAndReuse(t *testing.T) {
	b := NewBuilder(10)
	empty := b.Finish()
	if MayContain(empty, []byte("x")) {
		t.Fatal("empty filter reports a key")
	}
	b.AddKey([]byte("a"))
	b.AddKey([]byte("a"))
	if b.NumKeys() != 1 {
		t.Fatalf("repeated key counted %d times", b.NumKeys())
	}
	f := b.Finish()
	if !MayContain(f, []byte("a")) || b.NumKeys() != 0 {
		t.Fatal("Finish lost the key or did not reset")
	}
}

// TestMalformed checks that filters MayContain cannot interpret answer
// "may contain".
func TestMalformed(t *testing.T) {
	for _, f := range [][]byte{nil, {}, {7}, {0xff, 0}, {0, 0, 31}, {0, 0, 255}} {
		if !MayContain(f, []byte("k")) {
			t.Errorf("MayContain(%x) = false", f)
		}
	}
}

// TestHashStable pins Hash: filters on disk depend on these exact values.
func TestHashStable(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{"", 0xe220a8397b1dcdaf},
		{"a", 0xb76c972d964bbece},
		{"user-key-1", 0xc6165616b82c04c4},
		{"0123456789abcdef0123", 0xa2bfe4b8a47ed384},
	} {
		if got := Hash([]byte(tc.key)); got != tc.want {
			t.Errorf("Hash(%q) = %#x, want %#x", tc.key, got, tc.want)
		}
	}
}

// TestHashDistribution checks that each output bit flips about half the
// time when one input bit flips, the property double hashing relies on.
func TestHashDistribution(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var flips [64]int
	const trials = 20000
	for n := 0; n < trials; n++ {
		k := make([]byte, 1+rng.IntN(24))
		for i := range k {
			k[i] = byte(rng.IntN(256))
		}
		h := Hash(k)
		bit := rng.IntN(len(k) * 8)
		k[bit/8] ^= 1 << (bit % 8)
		d := h ^ Hash(k)
		for i := range flips {
			flips[i] += int(d >> i & 1)
		}
	}
	for i, f := range flips {
		if r := float64(f) / trials; r < 0.45 || r > 0.55 {
			t.Errorf("output bit %d flips with probability %.3f", i, r)
		}
	}
}

func FuzzMayContain(f *testing.F) {
	b := NewBuilder(10)
	b.AddKey([]byte("a"))
	f.Add(b.Finish(), []byte("a"))
	f.Add([]byte{}, []byte("b"))
	f.Add([]byte{1, 2, 3, 200}, []byte(""))
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		MayContain(filter, key)
	})
}

func BenchmarkMayContain(b *testing.B) {
	bl := NewBuilder(10)
	for i := 0; i < 100000; i++ {
		bl.AddKey(fmt.Appendf(nil, "user-key-%d", i))
	}
	f := bl.Finish()
	key := []byte("user-key-12345-absent")
	b.ResetTimer()
	for b.Loop() {
		MayContain(f, key)
	}
}

// TestFilterStable pins a whole encoded filter, probe placement included.
func TestFilterStable(t *testing.T) {
	b := NewBuilder(10)
	for _, k := range []string{"apple", "banana", "cherry"} {
		b.AddKey([]byte(k))
	}
	if got, want := fmt.Sprintf("%x", b.Finish()), "448002115788396407"; got != want {
		t.Fatalf("filter %s, want %s", got, want)
	}
}
