package hll

import "encoding/binary"

// hashSeed is the seed Redis passes to MurmurHash64A for HyperLogLog.
const hashSeed = 0xadc83b19

// murmurHash64A is Austin Appleby's MurmurHash64A as Redis uses it: 8-byte
// blocks read little-endian, the length folded in as an unsigned 64-bit
// product.
func murmurHash64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(data)) * m)
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		data = data[8:]
	}
	if len(data) > 0 {
		for i := len(data) - 1; i >= 0; i-- {
			h ^= uint64(data[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// registerOf returns the register an element updates and the value it
// offers: one plus the trailing zeros of the hash bits above the index,
// capped at 51 by a guard bit.
func registerOf(elem []byte) (index int, count uint8) {
	h := murmurHash64A(elem, hashSeed)
	index = int(h & (Registers - 1))
	h >>= indexBits
	h |= 1 << (64 - indexBits)
	count = 1
	for h&1 == 0 {
		count++
		h >>= 1
	}
	return index, count
}
