// Package bloom builds and probes the full-table bloom filters stored in
// sstables.
//
// A filter is a bit array followed by one byte holding the number of probes.
// Each key is hashed once with a stable 64-bit hash (Hash); the probe
// positions come from double hashing of the two 32-bit halves of that hash,
// so the encoding is identical on every machine and in every process.
//
// Invariants: a filter never reports a false negative for a key that was
// added; MayContain never panics and answers "may contain" for any bytes it
// cannot interpret, so a damaged or future-format filter costs a block read,
// never a wrong answer.
package bloom

import (
	"encoding/binary"
	"math/bits"
)

// MaxProbes is the largest probe count a filter may hold. Filters claiming
// more are treated as malformed (they would be slower than reading the
// block, and no sane bits-per-key setting produces them).
const MaxProbes = 30

// minBits is the size of the smallest bit array. A tiny array for a table
// with one or two keys would have a high false-positive rate for no savings.
const minBits = 64

// BitsPerKeyToProbes returns the probe count that minimizes the false
// positive rate for a filter of bitsPerKey bits per key: bitsPerKey * ln 2,
// rounded, clamped to [1, MaxProbes].
func BitsPerKeyToProbes(bitsPerKey int) int {
	// 69/100 approximates ln 2 well enough: the optimum is flat around it.
	k := (bitsPerKey*69 + 50) / 100
	return min(max(k, 1), MaxProbes)
}

// Builder accumulates key hashes and produces a filter over all of them.
// Only the 8-byte hash of each key is kept, never the key itself.
type Builder struct {
	bitsPerKey int
	hashes     []uint64
}

// NewBuilder returns a builder for filters with bitsPerKey bits per key.
// Values below 1 are raised to 1.
func NewBuilder(bitsPerKey int) *Builder {
	return &Builder{bitsPerKey: max(bitsPerKey, 1)}
}

// AddKey adds a user key. Adding the same key several times in a row (the
// versions of one user key in a table) stores it once.
func (b *Builder) AddKey(userKey []byte) {
	h := Hash(userKey)
	if n := len(b.hashes); n > 0 && b.hashes[n-1] == h {
		return
	}
	b.hashes = append(b.hashes, h)
}

// NumKeys returns the number of distinct hashes added so far.
func (b *Builder) NumKeys() int { return len(b.hashes) }

// Finish returns the encoded filter over every key added and resets the
// builder for reuse.
func (b *Builder) Finish() []byte {
	nBits := max(len(b.hashes)*b.bitsPerKey, minBits)
	nBytes := (nBits + 7) / 8
	nBits = nBytes * 8
	probes := BitsPerKeyToProbes(b.bitsPerKey)

	filter := make([]byte, nBytes+1)
	filter[nBytes] = byte(probes)
	for _, h := range b.hashes {
		h1, h2 := probeSeeds(h)
		for i := 0; i < probes; i++ {
			bit := h1 % uint64(nBits)
			filter[bit/8] |= 1 << (bit % 8)
			h1 += h2
		}
	}
	b.hashes = b.hashes[:0]
	return filter
}

// MayContain reports whether userKey may have been added to the filter. A
// false answer is definite.
func MayContain(filter []byte, userKey []byte) bool {
	if len(filter) < 2 {
		return true
	}
	nBytes := len(filter) - 1
	probes := int(filter[nBytes])
	if probes < 1 || probes > MaxProbes {
		return true
	}
	nBits := uint64(nBytes) * 8
	h1, h2 := probeSeeds(Hash(userKey))
	for i := 0; i < probes; i++ {
		bit := h1 % nBits
		if filter[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// probeSeeds derives the start and step of the probe sequence (double
// hashing: probe i is start + i*step modulo the bit count, in wrapping
// 64-bit arithmetic). The step is the hash with its halves swapped, forced
// odd so that it never collapses to zero.
func probeSeeds(h uint64) (start, step uint64) {
	return h, bits.RotateLeft64(h, 32) | 1
}

// Hash constants are odd 64-bit numbers with well-mixed bits (digits of
// the golden ratio and of pi); any such constants work, these are fixed
// forever because filters on disk depend on them.
const (
	hashSeed = 0x9e3779b97f4a7c15
	hashMulA = 0x243f6a8885a308d3
	hashMulB = 0x13198a2e03707345
)

// Hash is the stable 64-bit hash the filters use. It is part of the
// on-disk format: changing it makes every existing filter answer wrongly.
// It consumes 8 bytes per round with a 128-bit multiply-fold and ends with
// a strong avalanche step so both 32-bit halves are usable as independent
// hashes.
func Hash(key []byte) uint64 {
	h := uint64(hashSeed) ^ uint64(len(key))*hashMulA
	for len(key) >= 8 {
		h = fold(h^binary.LittleEndian.Uint64(key), hashMulB)
		key = key[8:]
	}
	if len(key) > 0 {
		var tail uint64
		for i, c := range key {
			tail |= uint64(c) << (8 * i)
		}
		h = fold(h^tail, hashMulB)
	}
	return avalanche(h)
}

// fold multiplies to 128 bits and xors the halves: every input bit then
// affects many output bits in one step.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^hashMulA, b)
	return hi ^ lo
}

// avalanche is the splitmix64 finalizer.
func avalanche(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
