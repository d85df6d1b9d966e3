// Package bitops implements Redis' bit commands on byte strings: single
// bits (SETBIT, GETBIT), population counts and searches over byte or bit
// ranges (BITCOUNT, BITPOS), bitwise operations between strings (BITOP),
// and integer fields at arbitrary bit offsets (BITFIELD).
//
// Bits are numbered from the most significant bit of the first byte:
// bit 0 is 0x80 of byte 0, bit 9 is 0x40 of byte 1. A string reads as if
// followed by endless zero bytes. Functions that write take a string that
// is already long enough (Grow makes it so), so they never allocate;
// functions that read never modify their input. Argument parsing and
// limits are the server's; here every offset and range is already
// checked.
package bitops
