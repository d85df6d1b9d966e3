package bench

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

func init() {
	registerEngine(engineSpec{name: "pebble", open: openPebble, settings: pebbleSettings})
}

func pebbleSettings(cfg EngineConfig) string {
	return fmt.Sprintf("pebble.Open(dir, &Options{Cache: pebble.NewCache(%d)}); every other option default "+
		"(WAL on, memtable 4 MiB, snappy, no bloom filter), info log lines dropped; writes with pebble.%s; Get, NewIter(nil)", cfg.CacheSize, pebbleSyncName(cfg.Sync))
}

func pebbleSyncName(sync bool) string {
	if sync {
		return "Sync"
	}
	return "NoSync"
}

type pebbleEngine struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

func openPebble(dir string, cfg EngineConfig) (Engine, error) {
	cache := pebble.NewCache(cfg.CacheSize)
	// The DB holds its own reference from Open on.
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, Logger: quietPebbleLogger{}})
	if err != nil {
		return nil, err
	}
	wo := pebble.NoSync
	if cfg.Sync {
		wo = pebble.Sync
	}
	return &pebbleEngine{db: db, wo: wo}, nil
}

func (e *pebbleEngine) Set(key, value []byte) error { return e.db.Set(key, value, e.wo) }

func (e *pebbleEngine) Get(key []byte) (int, bool, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n := len(v)
	return n, true, closer.Close()
}

func (e *pebbleEngine) Delete(key []byte) error { return e.db.Delete(key, e.wo) }

func (e *pebbleEngine) NewIter(reverse bool) (Iter, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it, reverse: reverse}, nil
}

func (e *pebbleEngine) Close() error { return e.db.Close() }

type pebbleIter struct {
	it      *pebble.Iterator
	reverse bool
}

func (i *pebbleIter) First() bool {
	if i.reverse {
		return i.it.Last()
	}
	return i.it.First()
}

func (i *pebbleIter) SeekGE(key []byte) bool { return i.it.SeekGE(key) }

func (i *pebbleIter) Next() bool {
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *pebbleIter) Key() []byte   { return i.it.Key() }
func (i *pebbleIter) Value() []byte { return i.it.Value() }
func (i *pebbleIter) Close() error  { return i.it.Close() }

// quietPebbleLogger drops Pebble's informational lines ("Found 0 WALs"),
// which would tear the table; errors still reach stderr.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any) {}

func (quietPebbleLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

func (quietPebbleLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}
