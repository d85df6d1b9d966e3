// Package resp owns the RESP2/RESP3 wire codec of the lsmgo server: a
// bounded, zero-copy request Reader, a protocol-aware reply Writer, and a
// reply parser (ReadValue) for clients and load generators. It depends on
// nothing but the standard library.
//
// # Byte-slice lifetimes
//
// The slices returned by Reader.ReadCommand, and every Value.Str returned by
// Reader.ReadValue, ALIAS THE READER'S INTERNAL BUFFER. They are valid only
// until the next ReadCommand or ReadValue call on the same Reader, which may
// overwrite or move that memory. A caller that keeps an argument beyond that
// point (a key inserted into a memtable, a value queued for a batch) must
// copy it first. The slices are capacity-limited, so appending to one copies
// instead of overwriting the bytes that follow it.
//
// # Invariants
//
//   - The Reader never allocates in proportion to a length a peer declared
//     but has not sent: its buffer grows only when it is full of bytes that
//     actually arrived, at most doubling each time, so memory is bounded by
//     twice the bytes received plus the configured limits.
//   - Request parsing follows Redis 7 (networking.c processMultibulkBuffer,
//     processInlineBuffer and sds.c sdssplitargs), including the exact
//     "Protocol error: ..." texts, so a server built on it answers malformed
//     input the way redis-server does. Every such error is a *ProtocolError;
//     after one the Reader is poisoned and the connection must be closed.
//   - Results do not depend on how the input is split into reads: a command
//     delivered one byte at a time parses, or fails, exactly as when it
//     arrives in one read.
//   - No input can make the package panic.
//
// Neither Reader nor Writer is safe for concurrent use; each belongs to one
// connection goroutine.
package resp
