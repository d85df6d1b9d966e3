// Package server is lsmgo's Redis-compatible server: it owns the client
// connections, the command table, the keyspace encoding inside the engine,
// configuration (flags, TOML file, CONFIG GET/SET, live reload), AUTH and
// the limits, the slow log, and the HTTP side (/metrics, /healthz,
// /debug/). It uses only the public lsmgo API and server/resp for the wire
// format. doc/server.md is the user-facing description.
//
// # Invariants
//
//   - Replies leave in the order commands arrived, and a write's reply is
//     sent only after it is durable under the appendfsync mode: its
//     engine commit (lsmgo.DB.CommitAsync) put the WAL record in the
//     kernel (a write(2), or a store into the WAL's shared mapping), so a
//     killed process never loses an acknowledged write, and under
//     appendfsync always the reply also waits for the fsync
//     (durable.go), after the command released its stripes. Other
//     clients may read a write before its fsync, as in Redis.
//   - The connection loop (conn.serve) owns the order of work: it runs
//     every command already received, and when the buffered input holds
//     no complete command (resp.Reader.ReadBuffered) that batch has ended:
//     it commits the writes the batch left pending, delivers Pub/Sub
//     messages, flushes the replies, and only then blocks on the network.
//     Pipelined commands therefore share write(2) calls, and no reply
//     waits for later input.
//   - Pipelined writes (every write whose keys its table entry locates,
//     command.deferrable) join the connection's pending batch
//     (pipeline.go), each reading its keys with the pending writes on
//     top; it commits as one engine batch before any other command of the
//     connection runs and before the loop reads again, holding the
//     stripes of its keys until then, and their replies are released only
//     after it did, so the batching is invisible to clients except in
//     speed.
//   - The connection loop knows no command by name: a command's table
//     entry (its handler and pipe flags) decides how it runs, and every
//     engine read and write goes through the keyspace (keyspace.go), so a
//     new Redis type adds an encoding and handlers.
//   - Every command that writes holds the key-stripe locks of all its keys
//     from its first read until its batch is committed and visible
//     (keyLocks), not through the fsync, so read-modify-write commands are
//     atomic against all other writes, and writes of one hot key still
//     share fsyncs. Reads take no lock.
//   - A client blocked on keys (BLPOP …, blocking.go) is served by the
//     goroutine of the write that filled a key, after that write
//     committed and before its reply is flushed, oldest waiter first.
//   - Every command replies exactly once. A handler either writes its
//     reply or returns an error, which conn.run writes (replyErr): a
//     redisError carries Redis' text, any other error is worded by
//     engineError. Helpers return errors and reply nothing, except the
//     tries of blocking commands (listMove, popFirst, zpopFirst,
//     firstColl), which run for a blocked client on another client's
//     goroutine and reply for it.
//   - Bytes from the network or disk never cause a panic: malformed RESP
//     closes the connection with Redis' protocol error, and a damaged
//     value header is reported as a corruption error.
//
// # Layout
//
// The command path is exec.go (checks, MULTI queueing, the one call of a
// handler, accounting), pipeline.go (pipelined writes deferred into one
// batch), tx.go (MULTI/EXEC/WATCH), keylocks.go, errors.go and conn.go
// (the connection loop). Each type's encoding is one file of keyspace
// methods (string.go, collection.go for what every collection shares and
// for hashes and sets, list.go, zset.go and zset_range.go; random picks
// in randompick.go), and its commands are cmd_<type>.go, which parse
// arguments and reply; cmd_coll.go and scan.go hold the command parts the
// collection types share. internal/keylayout names every engine key
// prefix and its owner.
//
// Each connection is served by one goroutine; the resp.Reader's argument
// slices are valid only until the next read, so anything that outlives a
// command (the pending batch, SCAN cursors, the slow log) is copied.
package server
