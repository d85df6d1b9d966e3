// Package bench owns lsmgo-bench's engine mode: db_bench-style workloads
// run against lsmgo and its peers (Pebble, Badger, bbolt, goleveldb, and
// RocksDB through its db_bench tool) in one invocation, so that every
// comparison is a ratio measured side by side on one machine.
//
// It holds the workloads, the key and value generators, latency recording
// in HDR histograms, one adapter per engine (engine_NAME.go, the only
// files that import a peer, so the lsmgo binary never links one), and the
// reports: the live table and progress line, results.json, results.csv,
// results.md and a self-contained report.html.
//
// Invariants:
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
package bench
