package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// minKeySize is the smallest key that holds the 8-byte key number.
const minKeySize = 8

// Key numbering: key index i of the key space [0, num) is stored as the
// number 2i and its missing twin (readmissing) as 2i+1, so missing keys
// interleave with present ones across the whole key range instead of
// sitting past its end, where a range check alone would reject them.

// putKey writes the present key with index i into dst (len(dst) is the key
// size): the number 2i big-endian, then '0' padding, like db_bench's keys,
// so the order of indexes is the order of keys.
func putKey(dst []byte, i uint64) { putKeyNumber(dst, 2*i) }

// putMissingKey writes a key that sorts right after key i and is never
// written.
func putMissingKey(dst []byte, i uint64) { putKeyNumber(dst, 2*i+1) }

func putKeyNumber(dst []byte, n uint64) {
	binary.BigEndian.PutUint64(dst, n)
	for j := minKeySize; j < len(dst); j++ {
		dst[j] = '0'
	}
}

// Values are sliced from a pool of random bytes; they walk through it, so
// consecutive values differ and a compressor sees the configured ratio,
// not repetition across values. The pool holds at least poolValues values
// (1 MiB at least, as small values always had), up to maxPoolSize; values
// of up to maxValueSize bytes fit it four times.
const (
	minPoolSize  = 1 << 20
	maxPoolSize  = 256 << 20
	poolValues   = 64
	maxValueSize = maxPoolSize / 4
)

// valuePoolSize is the size of the pool for values of valueSize bytes.
func valuePoolSize(valueSize int) int {
	return max(minPoolSize, min(maxPoolSize, poolValues*valueSize))
}

// valuePool builds the shared value buffer: each 100-byte chunk holds
// 100*compressibility random bytes repeated until the chunk is full, which
// a block compressor shrinks to about compressibility of its input
// (db_bench's --compression_ratio means the same).
func valuePool(seed uint64, compressibility float64, valueSize int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x76616c756573))
	const chunk = 100
	pool := make([]byte, valuePoolSize(valueSize))
	raw := max(1, int(math.Round(chunk*compressibility)))
	if compressibility >= 1 {
		raw = chunk
	}
	for off := 0; off < len(pool); off += chunk {
		c := pool[off:min(off+chunk, len(pool))]
		for j := 0; j < raw && j < len(c); j++ {
			// Printable bytes, as db_bench uses, so no engine gets an
			// advantage from a value that happens to be all zeros.
			c[j] = byte(' ' + rng.IntN(95))
		}
		for j := raw; j < len(c); j++ {
			c[j] = c[j-raw]
		}
	}
	return pool
}

// valueStream hands out successive values from the pool. Each thread has
// its own, started at an offset derived from its thread number, so two
// runs with the same seed write identical values.
type valueStream struct {
	pool []byte
	size int
	pos  int
}

func newValueStream(pool []byte, size, thread int) *valueStream {
	return &valueStream{pool: pool, size: size, pos: (thread * 7919 * size) % (len(pool) - size)}
}

// next returns the next value; it aliases the pool and must not be
// modified.
func (s *valueStream) next() []byte {
	if s.pos+s.size > len(s.pool) {
		s.pos = 0
	}
	v := s.pool[s.pos : s.pos+s.size]
	// An odd stride keeps value boundaries from lining up with the
	// pool's 100-byte chunks.
	s.pos += s.size + 13
	return v
}

// Distribution names how random workloads choose keys.
type Distribution string

// Key distributions.
const (
	// Uniform picks every key with equal probability.
	Uniform Distribution = "uniform"
	// Zipfian picks keys with a Zipf law (theta 0.99, as YCSB), the hot keys
	// scattered over the key space by a hash.
	Zipfian Distribution = "zipfian"
	// Latest is Zipfian with the hottest keys at the top of the key space:
	// the keys fillseq wrote last.
	Latest Distribution = "latest"
)

// parseDistribution validates a --distribution value.
func parseDistribution(s string) (Distribution, error) {
	switch d := Distribution(s); d {
	case Uniform, Zipfian, Latest:
		return d, nil
	}
	return "", fmt.Errorf("unknown distribution %q (want uniform, zipfian or latest)", s)
}

// zipfTheta is YCSB's default skew.
const zipfTheta = 0.99

// zipf holds the constants of the Gray et al. Zipfian generator for n
// items; it is shared by the threads of a workload, each with its own rng.
type zipf struct {
	n               uint64
	zetaN, eta, alp float64
	half            float64 // 1 + 0.5^theta
}

func newZipf(n uint64) *zipf {
	zetaN := zeta(n)
	zeta2 := 1 + 1/math.Pow(2, zipfTheta)
	return &zipf{
		n:     n,
		zetaN: zetaN,
		alp:   1 / (1 - zipfTheta),
		eta:   (1 - math.Pow(2/float64(n), 1-zipfTheta)) / (1 - zeta2/zetaN),
		half:  1 + math.Pow(0.5, zipfTheta),
	}
}

// zetaExactMax is the largest n whose zeta is summed term by term: every
// key space --num allows. YCSB's scrambled zipfian draws its ranks from
// far more items (ycsbItems), whose sum would take minutes.
const zetaExactMax = 1 << 32

// zetaHead is how many terms zeta sums exactly before it estimates the
// rest of a sum over more than zetaExactMax items.
const zetaHead = 1 << 16

// zeta is the sum of 1/i^theta for i in [1, n]. Beyond zetaExactMax it
// sums the first zetaHead terms and estimates the rest (zetaTail).
func zeta(n uint64) float64 {
	if n > zetaExactMax {
		return zetaSum(zetaHead) + zetaTail(zetaHead, n)
	}
	return zetaSum(n)
}

// zetaSum adds 1/i^theta for i in [1, n] term by term.
func zetaSum(n uint64) float64 {
	var sum float64
	for i := uint64(1); i <= n; i++ {
		sum += 1 / math.Pow(float64(i), zipfTheta)
	}
	return sum
}

// zetaTail estimates the sum of 1/i^theta for i in (m, n] by
// Euler-Maclaurin: the integral from m to n, half of the last term less
// half of the m-th (already counted), and the first-derivative term. The
// next term is below 1e-18 for m >= zetaHead.
func zetaTail(m, n uint64) float64 {
	a, b := float64(m), float64(n)
	f := func(x float64) float64 { return math.Pow(x, -zipfTheta) }
	df := func(x float64) float64 { return -zipfTheta * math.Pow(x, -zipfTheta-1) }
	integral := (math.Pow(b, 1-zipfTheta) - math.Pow(a, 1-zipfTheta)) / (1 - zipfTheta)
	return integral + (f(b)-f(a))/2 + (df(b)-df(a))/12
}

// rank returns a rank in [0, n): 0 is the most popular.
func (z *zipf) rank(rng *rand.Rand) uint64 {
	u := rng.Float64()
	uz := u * z.zetaN
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return 1
	}
	r := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alp))
	return min(r, z.n-1)
}

// newRand returns a generator whose stream is fixed by seed.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, scramble(seed))) }

// keyChooser picks key indexes in [0, n) for one thread.
type keyChooser struct {
	rng  *rand.Rand
	n    uint64
	dist Distribution
	z    *zipf
}

func (c *keyChooser) next() uint64 {
	switch c.dist {
	case Zipfian:
		// Scatter ranks so the hot keys are not neighbours (which would
		// make them share blocks and flatter every engine's cache).
		return scramble(c.z.rank(c.rng)) % c.n
	case Latest:
		return c.n - 1 - c.z.rank(c.rng)
	}
	return c.rng.Uint64N(c.n)
}

// permutation returns the key indexes [0, n) in a random order fixed by the
// seed: fillrandom and deleterandom visit every key exactly once.
func permutation(n uint64, seed uint64) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(i)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7065726d))
	for i := len(p) - 1; i > 0; i-- {
		j := rng.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// scramble is the splitmix64 finalizer: a bijection that spreads
// neighbouring ranks over the whole range. The engine has the same function
// (internal/base.Mix64, part of its bloom filter format), but this module
// may use only the engine's public API, and a hash is not something the
// engine's API should offer; so the bench keeps its own copy.
func scramble(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
