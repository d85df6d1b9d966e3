// Package bloom builds and probes the full-table bloom filters stored in
// sstables.
//
// Each key is hashed once with a stable 64-bit hash (Hash), so the encoding
// is identical on every machine and in every process. Two layouts exist:
//
//   - Blocked (what Builder writes): the bit array is split into 512-bit
//     blocks, one cache line each. The hash picks one block and every
//     probe lands inside it, so a lookup costs one cache miss instead of
//     one per probe; at 10 bits per key the false-positive rate rises from
//     about 0.8% to about 1%.
//   - Legacy (tables written before the blocked layout): probes spread
//     over the whole bit array by double hashing. Only read now, by
//     MayContainLegacy.
//
// Both end with one byte holding the number of probes. Which layout a
// filter has is recorded outside it (the table's meta-index names them
// differently).
//
// Invariants: a filter never reports a false negative for a key that was
// added; MayContain and MayContainLegacy never panic and answer "may
// contain" for any bytes they cannot interpret, so a damaged or
// future-format filter costs a block read, never a wrong answer.
package bloom

import (
	"encoding/binary"
	"math/bits"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// MaxProbes is the largest probe count a filter may hold. Filters claiming
// more are treated as malformed (they would be slower than reading the
// block, and no sane bits-per-key setting produces them).
const MaxProbes = 30

// Blocked layout: blocks of blockBytes, one cache line on the machines we
// target.
const (
	blockBytes   = 64
	blockBits    = blockBytes * 8
	blockBitsLog = 9
)

// BitsPerKeyToProbes returns the probe count of a filter with bitsPerKey
// bits per key: bitsPerKey * ln 2, rounded, clamped to [1, MaxProbes]. It
// minimizes the false-positive rate of the legacy layout, and one probe
// more or less changes the blocked layout's by under a tenth.
func BitsPerKeyToProbes(bitsPerKey int) int {
	// 69/100 approximates ln 2 well enough: the optimum is flat around it.
	k := (bitsPerKey*69 + 50) / 100
	return min(max(k, 1), MaxProbes)
}

// Builder accumulates key hashes and produces a blocked filter over all of
// them. Only the 8-byte hash of each key is kept, never the key itself.
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

// Finish returns the encoded blocked filter over every key added and
// resets the builder for reuse.
func (b *Builder) Finish() []byte {
	nBlocks := (len(b.hashes)*b.bitsPerKey + blockBits - 1) / blockBits
	nBlocks = max(nBlocks, 1)
	probes := BitsPerKeyToProbes(b.bitsPerKey)
	filter := make([]byte, nBlocks*blockBytes+1)
	filter[nBlocks*blockBytes] = byte(probes)
	for _, h := range b.hashes {
		start, x := blockedStart(h, uint64(nBlocks))
		block := filter[start : start+blockBytes]
		for i := 0; i < probes; i++ {
			bit := x >> (64 - blockBitsLog)
			block[bit/8] |= 1 << (bit % 8)
			x *= probeMul
		}
	}
	b.hashes = b.hashes[:0]
	return filter
}

// MayContain reports whether userKey may have been added to the blocked
// filter. A false answer is definite.
func MayContain(filter []byte, userKey []byte) bool {
	n := len(filter) - 1
	if n < blockBytes || n%blockBytes != 0 {
		return true
	}
	probes := int(filter[n])
	if probes < 1 || probes > MaxProbes {
		return true
	}
	start, x := blockedStart(Hash(userKey), uint64(n/blockBytes))
	block := filter[start : start+blockBytes]
	for i := 0; i < probes; i++ {
		bit := x >> (64 - blockBitsLog)
		if block[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
		x *= probeMul
	}
	return true
}

// probeMul steps the probe state of a blocked filter: each probe takes the
// top 9 bits of the state, then the state is multiplied by this odd
// constant (the 64-bit golden ratio), which remixes every bit into the top
// ones.
const probeMul = 0x9e3779b97f4a7c15

// blockedStart picks the block of a key from the top 32 bits of its hash
// (multiply-shift, which needs no division and maps evenly onto any block
// count) and returns its byte offset and the initial probe state, the
// whole hash times a constant, so that keys sharing a block still probe
// different bits.
func blockedStart(h, nBlocks uint64) (start int, x uint64) {
	return int((h>>32)*nBlocks>>32) * blockBytes, h * 0xbf58476d1ce4e5b9
}

// MayContainLegacy reports whether userKey may have been added to a legacy
// filter. A false answer is definite.
func MayContainLegacy(filter []byte, userKey []byte) bool {
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
	return base.Mix64(h)
}

// fold multiplies to 128 bits and xors the halves: every input bit then
// affects many output bits in one step.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^hashMulA, b)
	return hi ^ lo
}
