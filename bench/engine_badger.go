package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func init() {
	registerEngine(engineSpec{name: "badger", open: openBadger, settings: badgerSettings})
}

func badgerOptions(dir string, cfg EngineConfig) badger.Options {
	o := badger.DefaultOptions(dir).
		WithBlockCacheSize(cfg.CacheSize).
		WithSyncWrites(cfg.Sync).
		WithLogger(nil)
	if cfg.ValueThreshold > 0 {
		o = o.WithValueThreshold(int64(cfg.ValueThreshold))
	}
	return o
}

func badgerSettings(cfg EngineConfig) string {
	o := badgerOptions("dir", cfg)
	return fmt.Sprintf("badger.Open(DefaultOptions(dir).WithBlockCacheSize(%d).WithSyncWrites(%t).WithValueThreshold(%d).WithLogger(nil)); "+
		"every other option default (memtable %d MiB x %d, values of %d B or more in the value log, the rest in the LSM tree, "+
		"snappy, index cache unbounded, value log GC never run: Badger leaves it to the application); one DB.Update per write, one DB.View per read, "+
		"one read Txn + Iterator (DefaultIteratorOptions, Reverse for readreverse) per iterator",
		o.BlockCacheSize, o.SyncWrites, o.ValueThreshold, o.MemTableSize>>20, o.NumMemtables, o.ValueThreshold)
}

type badgerEngine struct{ db *badger.DB }

func openBadger(dir string, cfg EngineConfig) (Engine, error) {
	db, err := badger.Open(badgerOptions(dir, cfg))
	if err != nil {
		return nil, err
	}
	return &badgerEngine{db: db}, nil
}

func (e *badgerEngine) Set(key, value []byte) error {
	return e.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) })
}

func (e *badgerEngine) Get(key []byte) (n int, found bool, err error) {
	err = e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			n, found = len(v), true
			return nil
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	return n, found, err
}

func (e *badgerEngine) Delete(key []byte) error {
	return e.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
}

func (e *badgerEngine) NewIter(reverse bool) (Iter, error) {
	txn := e.db.NewTransaction(false)
	o := badger.DefaultIteratorOptions
	o.Reverse = reverse
	return &badgerIter{txn: txn, it: txn.NewIterator(o)}, nil
}

// Settle runs Badger's value log GC, which Badger leaves to the
// application, until it finds nothing to rewrite; the discard ratio 0.5
// matches lsmgo's default BlobGCThreshold.
func (e *badgerEngine) Settle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		err := e.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("value log GC still rewriting after %v", timeout)
}

func (e *badgerEngine) Close() error { return e.db.Close() }

type badgerIter struct {
	txn   *badger.Txn
	it    *badger.Iterator
	value []byte
	err   error
}

func (i *badgerIter) valid() bool {
	if !i.it.Valid() {
		return false
	}
	// Item.Value's slice is only valid inside the callback; the copy is
	// the price of Badger's API, so it is part of what is measured.
	i.value, i.err = i.it.Item().ValueCopy(i.value[:0])
	return i.err == nil
}

func (i *badgerIter) First() bool {
	i.it.Rewind()
	return i.valid()
}

func (i *badgerIter) SeekGE(key []byte) bool {
	i.it.Seek(key)
	return i.valid()
}

func (i *badgerIter) Next() bool {
	i.it.Next()
	return i.valid()
}

func (i *badgerIter) Key() []byte   { return i.it.Item().Key() }
func (i *badgerIter) Value() []byte { return i.value }

func (i *badgerIter) Close() error {
	i.it.Close()
	i.txn.Discard()
	return i.err
}
