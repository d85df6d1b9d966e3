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

// TestFalsePositiveRate checks, for both layouts, that no added key is
// ever reported absent and that the false-positive rate is close to theory
// (legacy: 0.82% at 10 bits per key and 7 probes; blocked: about 1%) for
// several filter sizes.
func TestFalsePositiveRate(t *testing.T) {
	for _, tc := range []struct {
		blocked    bool
		bitsPerKey int
		keys       int
		maxRate    float64
	}{
		{true, 10, 100, 0.03},
		{true, 10, 10000, 0.0125},
		{true, 10, 200000, 0.0125},
		{true, 20, 10000, 0.001},
		{true, 5, 10000, 0.12},
		{true, 1, 1, 0.05},
		{false, 10, 100, 0.03},
		{false, 10, 10000, 0.0125},
		{false, 10, 200000, 0.0125},
		{false, 20, 10000, 0.001},
		{false, 5, 10000, 0.12},
	} {
		t.Run(fmt.Sprintf("blocked%v-bits%d-keys%d", tc.blocked, tc.bitsPerKey, tc.keys), func(t *testing.T) {
			var keys [][]byte
			for i := 0; i < tc.keys; i++ {
				keys = append(keys, fmt.Appendf(nil, "user-key-%d", i))
			}
			f, mayContain := buildLegacy(tc.bitsPerKey, keys), MayContainLegacy
			if tc.blocked {
				b := NewBuilder(tc.bitsPerKey)
				for _, k := range keys {
					b.AddKey(k)
				}
				f, mayContain = b.Finish(), MayContain
			}
			for i, k := range keys {
				if !mayContain(f, k) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			// -short (CI, under -race) probes a fifth as many keys: the
			// thresholds still sit over four standard deviations above
			// the expected rates.
			probes := 100000
			if testing.Short() {
				probes = 20000
			}
			fp := 0
			for i := 0; i < probes; i++ {
				if mayContain(f, fmt.Appendf(nil, "other-key-%d", i)) {
					fp++
				}
			}
			rate := float64(fp) / float64(probes)
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

// TestMalformed checks that filters MayContain and MayContainLegacy cannot
// interpret answer "may contain".
func TestMalformed(t *testing.T) {
	for _, f := range [][]byte{nil, {}, {7}, {0xff, 0}, {0, 0, 31}, {0, 0, 255}} {
		if !MayContainLegacy(f, []byte("k")) {
			t.Errorf("MayContainLegacy(%x) = false", f)
		}
	}
	zeros := func(n int, probes byte) []byte { return append(make([]byte, n), probes) }
	for _, f := range [][]byte{nil, {}, {7}, zeros(63, 6), zeros(65, 6), zeros(64, 0), zeros(128, 31), zeros(64, 255)} {
		if !MayContain(f, []byte("k")) {
			t.Errorf("MayContain(%d zero bytes, %d probes) = false", len(f)-1, f[len(f)-1:])
		}
	}
	if MayContain(zeros(64, 6), []byte("k")) {
		t.Error("all-zero blocked filter reports a key")
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
	f.Add(buildLegacy(10, [][]byte{[]byte("a")}), []byte("a"))
	f.Add([]byte{}, []byte("b"))
	f.Add([]byte{1, 2, 3, 200}, []byte(""))
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		MayContain(filter, key)
		MayContainLegacy(filter, key)
	})
}

// BenchmarkMayContain probes filters of 1M keys (1.2 MiB, beyond the CPU
// caches, as a table's filter is) with keys that are mostly absent.
func BenchmarkMayContain(b *testing.B) {
	var keys [][]byte
	for i := 0; i < 1000000; i++ {
		keys = append(keys, fmt.Appendf(nil, "user-key-%d", i))
	}
	bl := NewBuilder(10)
	for _, k := range keys {
		bl.AddKey(k)
	}
	for _, tc := range []struct {
		name       string
		filter     []byte
		mayContain func([]byte, []byte) bool
	}{{"blocked", bl.Finish(), MayContain}, {"legacy", buildLegacy(10, keys), MayContainLegacy}} {
		b.Run(tc.name, func(b *testing.B) {
			probe := make([][]byte, 4096)
			for i := range probe {
				probe[i] = fmt.Appendf(nil, "user-key-%d", i*997+i%2)
			}
			i := 0
			for b.Loop() {
				tc.mayContain(tc.filter, probe[i%len(probe)])
				i++
			}
		})
	}
}

// TestFilterStable pins whole encoded filters, probe placement included:
// the legacy one as tables written before the blocked layout hold it.
func TestFilterStable(t *testing.T) {
	keys := [][]byte{[]byte("apple"), []byte("banana"), []byte("cherry")}
	if got, want := fmt.Sprintf("%x", buildLegacy(10, keys)), "448002115788396407"; got != want {
		t.Fatalf("legacy filter %s, want %s", got, want)
	}
	b := NewBuilder(10)
	for _, k := range keys {
		b.AddKey(k)
	}
	f := b.Finish()
	if got, want := fmt.Sprintf("%x", f), blockedGolden; got != want {
		t.Fatalf("blocked filter %s, want %s", got, want)
	}
	for _, k := range keys {
		if !MayContain(f, k) {
			t.Fatalf("golden blocked filter lost %q", k)
		}
	}
}

const blockedGolden = "0000000000000800800000040000000800c00400008000088002000000000000004000001000000000000000000080010000000400100400020040000080000007"
