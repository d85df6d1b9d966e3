// Package rdb reads and writes the parts of Redis' RDB format that
// serialized values travel in: the payloads of DUMP, RESTORE, MIGRATE and
// FUNCTION DUMP. A payload is one value (or function library) in RDB
// encoding, then the RDB version in two bytes and a CRC-64/Jones of
// everything before it in eight, both little-endian (Seal, Open).
//
// Writers produce what Redis 7.0 (RDB version 10) writes for the same
// value, except that strings are never LZF-compressed: every Redis reads
// uncompressed strings, and a server that keeps its values on disk gains
// little from compressing what it sends. Readers take every encoding
// Redis 7.0 and 7.2 send: plain collections, ziplists, listpacks, intsets,
// quicklists and LZF-compressed strings.
//
// Payloads come from the network: every reader checks lengths against the
// bytes present before it allocates, never trusts a declared count to
// size anything, and caps what LZF may expand to (Reader.Budget), so that
// damaged or hostile input yields an error, never a panic or a huge
// allocation.
package rdb
