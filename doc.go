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
// ordered and point-in-time views; Flush, Compact and Metrics manage it;
// Checkpoint writes a consistent, openable copy of the live DB into a new
// directory (hard links for the immutable files where the filesystem
// allows) without stopping writes, which is how to back it up
// (doc/operations.md, "Backups").
//
// # Reading
//
// Every read goes through the Reader interface (Get, GetWithExpiry,
// NewIter), and four types implement it; the first three which differ only in what state
// they read and what holding them costs:
//
//   - *DB reads the newest state: each call pins the current memtables and
//     tables for its own duration.
//   - *Snapshot reads the state at NewSnapshot for as long as it is open.
//     It registers its sequence number with compaction, which then keeps
//     every version the snapshot can see and nothing more, so a snapshot
//     may be held for minutes; taking and closing one takes the DB's lock,
//     and each read still pins the current state for its duration.
//   - *View reads the state at NewView too, but pins that state's
//     memtables and tables for its whole life: taking one is an atomic
//     reference, and its reads pin nothing more. While it is open, those
//     memtables stay in memory and those tables on disk even after
//     flushes and compactions replaced them, so close a View within the
//     request that took it. The server answers each run of pipelined GETs
//     from one View.
//   - *Overlay (View.Overlay) reads a View's state with a Batch's writes
//     on top, as if the batch were applied: a transaction that commits
//     its writes as one batch reads its own writes through it. The
//     server's EXEC does.
//
// Close every Snapshot and View, and every Iterator, before the DB; Close
// reports leaked snapshots and iterators. Reader has no Close of its own:
// the code that took a Snapshot or View closes it, not the code it lends
// it to. Batch is not a Reader: it is an encoded list of writes with no
// index; Apply commits it, Append joins one to another, and an Overlay
// indexes one to read it.
//
// A value can also be read where it is stored, without a copy: OpenValue
// (on DB and Snapshot) returns a ValueReader, whose SendTo lets the kernel
// send a large value from its blob file to a socket (and Location says
// where in that file it lies, for callers that send it themselves), and
// which keeps that file on disk until it is closed.
//
// Byte slices: Get returns a copy the caller owns. Iterator.Key and
// Iterator.Value are valid only until the iterator moves. Keys and values
// passed to writes may be reused as soon as the call returns.
//
// Durability depends on Options.Sync (see SyncMode and doc/durability.md):
// under SyncAlways, an acknowledged write survives a process crash and a
// power loss. Apply makes a batch visible only once it is durable;
// CommitAsync makes it visible first and returns a Pending whose Wait
// returns once it is durable, so a caller holding a lock per key can
// release it before the fsync (the server does: doc/server.md). A failed
// fsync after such a batch was visible stops the DB's writes until it is
// reopened.
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
