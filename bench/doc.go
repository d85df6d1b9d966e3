// Package bench owns the measuring modes of lsmgo-bench (bench/cmd/lsmgo-bench).
//
// The engine mode runs db_bench-style workloads against lsmgo and its
// peers (Pebble, Badger, bbolt, goleveldb, and RocksDB through its
// db_bench tool) in one invocation, so that every comparison is a ratio
// measured side by side on one machine. It holds the workloads, the key
// and value generators, latency recording in HDR histograms, one adapter
// per engine (engine_NAME.go, the only files that import a peer, so the
// lsmgo binary never links one), and the reports: the live table and
// progress line, results.json, results.csv, results.md and a
// self-contained report.html. YCSB's core workloads A-F (ycsb.go) run
// there too when --workloads names them, with YCSB's own record choices
// (scrambled zipfian, latest) and operation mixes.
//
// The client mode (client*.go) is a closed-loop load generator for any
// RESP server (lsmgo serve, redis-server): each connection sends a
// pipeline of GETs and SETs, waits for every reply and sends the next,
// for each connection count of a gradient in turn. Its rows are Results
// like the engine mode's, one per connection count, printed in the same
// table and written to the same four files, so one script reads both.
//
// The http mode (http*.go) is the same kind of closed loop for the image
// host of lsmgo serve (package imgbed): uploads of one image file, GETs of
// the originals and of thumbnails, one connection per goroutine, one row
// per workload and connection count, in the same table and files. Its
// ReferenceHandler (--mode=http-reference) is the practical bound the
// upload rate is compared with: hash the body, write it to a file, fsync.
//
// Invariants of the engine mode:
//   - Each engine runs in a child process of its own (this same binary,
//     re-executed with the job in its environment; see
//     RunChildIfRequested), so memory, caches and goroutines never mix and
//     peak RSS and bytes written are the engine's own.
//   - Every Go engine gets identical key and value streams: they depend
//     only on the seed, the workload and the thread number. db_bench uses
//     its own generator with the same sizes, distribution and compression
//     ratio.
//   - Workloads run in the order given on one database per engine, as in
//     db_bench; a fill starts from an empty directory, and any other
//     workload that finds the key space incomplete first runs an
//     unmeasured fillrandom (the row says so).
//   - Nothing here asserts a speed: the smoke test checks only that every
//     engine produced every row with consistent counts.
//
// Invariants of the client mode:
//   - Each connection's keys and values depend only on the seed and the
//     connection's number, so two runs against two servers send the same
//     commands.
//   - With --requests, a level sends exactly that many commands across
//     all its connections.
//   - A level that loses a connection or gets an error reply has Error
//     set, and lsmgo-bench then exits 1, so a rate measured while the
//     server refused work never passes for a clean result.
//
// Invariants of the http mode:
//   - It loads only loopback targets.
//   - Unless --dedup, every upload of every run sends different bytes (a
//     JPEG comment segment carrying a random run id and a counter), so
//     the image host's dedup never answers in place of a store.
//   - With --requests, a row sends exactly that many requests; any answer
//     other than 2xx, or a lost connection, sets the row's Error.
package bench
