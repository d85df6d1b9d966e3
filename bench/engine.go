package bench

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Engine is one storage engine opened on a directory, seen through the few
// operations the workloads need. Every method may be called from several
// goroutines at once except those of an Iter. Keys and values passed in may
// be reused by the caller as soon as the call returns.
type Engine interface {
	// Set writes key=value, synced when the engine was opened with Sync.
	Set(key, value []byte) error
	// Get looks key up and returns the length of its value, or found ==
	// false. Adapters read the value the way the engine's own API
	// intends (copying only where that API copies).
	Get(key []byte) (valueLen int, found bool, err error)
	// Delete removes key.
	Delete(key []byte) error
	// NewIter returns an iterator over the whole key space; a reverse one
	// walks from the last key down (Badger fixes the direction when the
	// iterator is made, so every adapter does).
	NewIter(reverse bool) (Iter, error)
	// Close releases the engine; data must be on disk afterwards as the
	// engine's own Close guarantees.
	Close() error
}

// settler is an Engine that can wait for its background work (the settle
// workload).
type settler interface {
	// Settle flushes and waits, at most timeout, until no background
	// compaction or garbage collection is running or due.
	Settle(timeout time.Duration) error
}

// waitIdle polls idle until it holds three times in a row, 100 ms apart,
// or timeout passes: engines pick space-reclaiming work only when nothing
// else is due, so one idle look can fall between two compactions.
func waitIdle(timeout time.Duration, idle func() bool) error {
	deadline := time.Now().Add(timeout)
	for streak := 0; streak < 3; {
		if time.Now().After(deadline) {
			return fmt.Errorf("background work still running after %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
		if idle() {
			streak++
		} else {
			streak = 0
		}
	}
	return nil
}

// Iter is an iterator of an Engine, in the direction it was made with.
type Iter interface {
	// First moves to the first key in the iterator's direction.
	First() bool
	// SeekGE moves to the first key >= key; only forward iterators are
	// asked to.
	SeekGE(key []byte) bool
	// Next moves one key on in the iterator's direction.
	Next() bool
	// Key and Value are valid until the next move.
	Key() []byte
	Value() []byte
	// Close releases the iterator and whatever read view it pins.
	Close() error
}

// EngineConfig is what every engine is opened with; the rest of each
// engine's options are its defaults (settings lists them).
type EngineConfig struct {
	// CacheSize is the block cache budget in bytes, for the engines that
	// have a block cache of their own.
	CacheSize int64
	// Sync makes every write wait for an fsync.
	Sync bool
	// ValueThreshold is Config.ValueThreshold: the value size from which
	// engines that can store values apart from their tree do; negative
	// keeps each engine's default.
	ValueThreshold int
}

// The adapters (engine_NAME.go) each wrap their engine's concrete types,
// even where three iterators share a shape (lsmgo, Pebble, goleveldb):
// a shared wrapper over an interface would add a dynamic call to every
// step of readseq and seekrandom for those engines only.

// engineSpec describes one engine the tool can run in a child process.
type engineSpec struct {
	name string
	open func(dir string, cfg EngineConfig) (Engine, error)
	// settings documents, for the report and BENCHMARKS.md, how the
	// engine is opened under cfg.
	settings func(cfg EngineConfig) string
}

// goEngines is filled by the engine_*.go files, one adapter per file, so
// peers are linked into this package only.
var goEngines = map[string]engineSpec{}

func registerEngine(s engineSpec) {
	if _, dup := goEngines[s.name]; dup {
		panic("bench: engine " + s.name + " registered twice")
	}
	goEngines[s.name] = s
}

// EngineOrder is the order engines run and are listed in by default:
// lsmgo first, then its peers.
var EngineOrder = []string{"lsmgo", "pebble", "badger", "bbolt", "goleveldb", "rocksdb"}

// AvailableEngines lists the engines this build can run on this machine:
// the Go engines always, rocksdb when db_bench is on PATH.
func AvailableEngines() []string {
	var names []string
	for _, n := range EngineOrder {
		if n == rocksdbName {
			if _, err := dbBenchPath(); err != nil {
				continue
			}
		} else if _, ok := goEngines[n]; !ok {
			continue
		}
		names = append(names, n)
	}
	return names
}

// checkEngines rejects unknown or unavailable engine names.
func checkEngines(names []string) error {
	if len(names) == 0 {
		return errors.New("no engines selected")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("engine %q listed twice", n)
		}
		seen[n] = true
		if n == rocksdbName {
			if _, err := dbBenchPath(); err != nil {
				return fmt.Errorf("engine rocksdb needs db_bench on PATH (Debian package rocksdb-tools): %w", err)
			}
			continue
		}
		if _, ok := goEngines[n]; !ok {
			known := append([]string(nil), EngineOrder...)
			sort.Strings(known)
			return fmt.Errorf("unknown engine %q (known: %v)", n, known)
		}
	}
	return nil
}
