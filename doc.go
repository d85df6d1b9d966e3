// Package lsmgo is an embedded, durable key-value store built as a
// log-structured merge tree.
//
// Writes go to a write-ahead log and an in-memory skiplist (the memtable);
// full memtables are flushed to immutable sorted tables (SSTables) in level
// 0, and a background scheduler compacts tables down a leveled tree. Reads
// merge the memtables and the tables at a sequence number, so every read and
// iterator sees one consistent state.
//
// The API is small: Open returns a DB; Get, Set, SetWithExpiry, Delete and
// Apply (atomic batches) read and write; NewIter and NewSnapshot give
// ordered and point-in-time views; Flush, Compact and Metrics manage it.
//
// Byte slices: Get returns a copy the caller owns. Iterator.Key and
// Iterator.Value are valid only until the iterator moves. Keys and values
// passed to writes may be reused as soon as the call returns.
//
// Durability depends on Options.Sync (see SyncMode and doc/durability.md):
// under SyncAlways, an acknowledged write survives a process crash and a
// power loss.
//
// Errors: ErrNotFound for absent keys, ErrClosed after Close, and errors
// matching ErrCorruption (with a *CorruptionError naming file and offset)
// for damaged files. A full disk refuses writes with ErrNoSpace and heals
// by itself once space is freed. Any other background I/O error (a failed
// fsync above all) makes the DB read-only: every later write returns an
// error matching ErrReadOnly, reads keep working, and Resume makes it
// writable again. Repair saves what it can of a DB with damaged tables.
// doc/operations.md says what to do about each.
package lsmgo
