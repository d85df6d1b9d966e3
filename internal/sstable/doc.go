// Package sstable writes and reads tables: immutable files of internal keys
// in sorted order, the unit of storage below the memtable.
//
// A table is a sequence of data blocks, a filter block (one bloom filter
// over every user key in the table), a properties block, a meta-index
// block naming the filter and properties blocks, an index block with one
// entry per data block, and a fixed-size footer locating the meta-index
// and index and carrying the format version and a magic number.
// doc/format.md describes every byte.
//
// Invariants:
//   - Keys in a table strictly increase by base.CompareInternal; the Writer
//     refuses anything else.
//   - Every stored block is followed by a compression type byte and a
//     CRC32C covering the block and that byte. The reader verifies the
//     checksum before it decodes a block, and no block reaches the cache
//     or an iterator unverified. Damage of any kind is reported as a
//     *base.CorruptionError with the offset of the damaged block; the
//     reader never panics on file contents.
//   - The cache holds decoded blocks keyed by (file number, block offset);
//     a cached block is never modified.
//
// Reading: NewReader decodes the index block into arrays (see tableIndex)
// and keeps them, the filter and the properties in memory. Data blocks are
// read with ReadAt into a pooled buffer and decoded into one of their own.
// Memory-mapping the files was measured: it saved the read system call
// (readrandom 5.3 -> 4.8 us/op) but put the mapped pages in the resident
// set (peak RSS 354M -> 559M against Pebble's ~320M) and turned disk
// errors into memory faults, so tables are not mapped.
//
// Byte-slice lifetimes:
//   - Reader.Get returns a value that aliases a decoded block: it must not
//     be modified, and it stays valid for good, since decoded blocks are
//     never overwritten or recycled.
//   - An iterator's Key().UserKey points into a buffer the iterator reuses
//     on its next move: copy it to keep it.
//   - An iterator's Value() points into an immutable block. The contract of
//     base.InternalIterator is that it is valid until the next move; in
//     fact the bytes are never overwritten, but callers must not rely on
//     that, and must never modify them.
package sstable
