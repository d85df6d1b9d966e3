// Package hll implements Redis' HyperLogLog byte format and arithmetic, so
// that a string value written by PFADD or PFMERGE here is byte for byte the
// value Redis 7 writes for the same commands, and every estimate matches.
//
// # Format
//
// A value starts with a 16-byte header: the magic "HYLL", one encoding
// byte (0 dense, 1 sparse), three unused bytes, and the cached cardinality
// as 8 little-endian bytes whose top bit (bit 7 of byte 15) marks the cache
// invalid. 16384 registers of 6 bits each follow.
//
//   - Dense: the registers packed little-endian into 12288 bytes, register
//     i at bit 6*i (low bits of a byte first). A dense value is exactly
//     12304 bytes long.
//   - Sparse: run-length opcodes. 00xxxxxx is a run of xxxxxx+1 zero
//     registers; 01xxxxxx yyyyyyyy a run of (xxxxxx<<8|yyyyyyyy)+1 zero
//     registers; 1vvvvvxx a run of xx+1 registers of value vvvvv+1. Values
//     above 32 cannot be written sparsely, so such an update, or one that
//     would grow the value past the sparse limit (hll-sparse-max-bytes,
//     header included), converts the value to dense first.
//
// An element's register is the low 14 bits of MurmurHash64A(element, seed
// 0xadc83b19); its value is one plus the number of trailing zero bits of
// the remaining 50 bits (at most 51). The estimate is Ertl's improved
// estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", 2017) over the register histogram, as Redis computes it.
//
// # Untrusted input
//
// Values come from client strings (SET can write anything). Header checks
// fail with ErrNotHLL; a sparse body whose runs do not cover exactly 16384
// registers fails with ErrCorrupt wherever Redis detects it. Nothing here
// panics on any input. Functions never modify their input slices' bytes in
// place unless documented.
package hll
