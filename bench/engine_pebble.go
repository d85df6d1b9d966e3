package bench

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func init() {
	registerEngine(engineSpec{name: "pebble", open: openPebble, settings: pebbleSettings})
}

func pebbleSettings(cfg EngineConfig) string {
	sep := "no value separation"
	if p := pebbleValueSeparation(cfg); p != nil {
		sep = fmt.Sprintf("FormatMajorVersion: FormatValueSeparation, Experimental.ValueSeparationPolicy: %+v", p())
	}
	return fmt.Sprintf("pebble.Open(dir, &Options{Cache: pebble.NewCache(%d)}, %s); every other option default "+
		"(WAL on, memtable 4 MiB, snappy, no bloom filter), info log lines dropped; writes with pebble.%s; Get, NewIter(nil)",
		cfg.CacheSize, sep, pebbleSyncName(cfg.Sync))
}

// pebbleValueSeparation is Pebble's policy for cfg.ValueThreshold, nil
// when separation stays off (its default). Blob files may be rewritten
// as soon as a quarter of them is garbage, at any age, so that space is
// reclaimed within a benchmark's minutes.
func pebbleValueSeparation(cfg EngineConfig) func() pebble.ValueSeparationPolicy {
	if cfg.ValueThreshold <= 0 {
		return nil
	}
	return func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           cfg.ValueThreshold,
			MaxBlobReferenceDepth: 10,
			TargetGarbageRatio:    0.25,
		}
	}
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
	o := &pebble.Options{Cache: cache, Logger: quietPebbleLogger{}}
	if sep := pebbleValueSeparation(cfg); sep != nil {
		o.FormatMajorVersion = pebble.FormatValueSeparation
		o.Experimental.ValueSeparationPolicy = sep
	}
	db, err := pebble.Open(dir, o)
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

func (e *pebbleEngine) Settle(timeout time.Duration) error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return waitIdle(timeout, func() bool {
		m := e.db.Metrics()
		return m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0
	})
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
