package base

import "hash/crc32"

// castagnoli is the CRC-32C polynomial's table; crc32 uses the CPU's
// instruction for it where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C (Castagnoli) of b, the checksum of every
// on-disk format.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32C extends crc, a CRC-32C, with b.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// MaskCRC is how every format stores a CRC: rotated and offset, so that a
// CRC computed over data that itself embeds CRCs does not degenerate. The
// constant is arbitrary but part of the formats.
func MaskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }
