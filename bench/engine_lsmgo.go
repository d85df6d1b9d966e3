package bench

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

func init() {
	registerEngine(engineSpec{name: "lsmgo", open: openLsmgo, settings: lsmgoSettings})
}

func lsmgoOptions(cfg EngineConfig) *lsmgo.Options {
	o := &lsmgo.Options{Sync: lsmgo.SyncNone, CacheSize: cfg.CacheSize, ValueThreshold: max(cfg.ValueThreshold, 0)}
	if cfg.Sync {
		// Concurrent writers share one fsync per commit group.
		o.Sync = lsmgo.SyncAlways
	}
	return o
}

func lsmgoSettings(cfg EngineConfig) string {
	o := lsmgoOptions(cfg)
	threshold := o.ValueThreshold
	if threshold == 0 {
		threshold = lsmgo.DefaultValueThreshold
	}
	return fmt.Sprintf("lsmgo.Open(dir, &Options{Sync: %s, CacheSize: %d, ValueThreshold: %d}); other options default "+
		"(memtable %d MiB, snappy, bloom %d bits/key, L0 compaction at %d files, values of %d B or more in blob files, "+
		"blob GC below %g live); DB.Set/GetAppend (into a reused buffer)/Delete, DB.NewIter",
		o.Sync, o.CacheSize, o.ValueThreshold, lsmgo.DefaultMemTableSize>>20, lsmgo.DefaultBloomBitsPerKey,
		lsmgo.DefaultL0CompactionThreshold, threshold, lsmgo.DefaultBlobGCThreshold)
}

type lsmgoEngine struct {
	db *lsmgo.DB
	// bufs holds the buffers Get reads values into (DB.GetAppend, the
	// API for repeated reads), one per concurrent reader.
	bufs sync.Pool
}

func openLsmgo(dir string, cfg EngineConfig) (Engine, error) {
	db, err := lsmgo.Open(dir, lsmgoOptions(cfg))
	if err != nil {
		return nil, err
	}
	return &lsmgoEngine{db: db}, nil
}

func (e *lsmgoEngine) Set(key, value []byte) error { return e.db.Set(key, value, nil) }

func (e *lsmgoEngine) Get(key []byte) (int, bool, error) {
	buf, _ := e.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	v, err := e.db.GetAppend((*buf)[:0], key)
	*buf = v
	e.bufs.Put(buf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

func (e *lsmgoEngine) Delete(key []byte) error { return e.db.Delete(key, nil) }

func (e *lsmgoEngine) NewIter(reverse bool) (Iter, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &lsmgoIter{it: it, reverse: reverse}, nil
}

func (e *lsmgoEngine) Settle(timeout time.Duration) error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return waitIdle(timeout, func() bool {
		m := e.db.Metrics()
		if m.Compaction.Running > 0 {
			return false
		}
		for _, l := range m.Levels {
			if l.Score >= 1 {
				return false
			}
		}
		return true
	})
}

func (e *lsmgoEngine) Close() error { return e.db.Close() }

type lsmgoIter struct {
	it      *lsmgo.Iterator
	reverse bool
}

func (i *lsmgoIter) First() bool {
	if i.reverse {
		return i.it.Last()
	}
	return i.it.First()
}

func (i *lsmgoIter) SeekGE(key []byte) bool { return i.it.SeekGE(key) }

func (i *lsmgoIter) Next() bool {
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *lsmgoIter) Key() []byte   { return i.it.Key() }
func (i *lsmgoIter) Value() []byte { return i.it.Value() }
func (i *lsmgoIter) Close() error  { return i.it.Close() }
