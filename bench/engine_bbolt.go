package bench

import (
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

func init() {
	registerEngine(engineSpec{name: "bbolt", open: openBbolt, settings: bboltSettings})
}

// bboltBucket is the one bucket every key lives in.
var bboltBucket = []byte("bench")

func bboltSettings(cfg EngineConfig) string {
	return fmt.Sprintf("bolt.Open(dir/bench.db, 0600, &Options{NoSync: %t}); every other option default "+
		"(no block cache of its own: reads go through the mmap and the OS page cache; no WAL: each "+
		"transaction writes its pages and meta page in place); one DB.Update per write (not DB.Batch), "+
		"one DB.View per read, one read transaction + Cursor per iterator", !cfg.Sync)
}

type bboltEngine struct{ db *bolt.DB }

func openBbolt(dir string, cfg EngineConfig) (Engine, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "bench.db"), 0o600, &bolt.Options{NoSync: !cfg.Sync})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bboltBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &bboltEngine{db: db}, nil
}

func (e *bboltEngine) Set(key, value []byte) error {
	return e.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bboltBucket).Put(key, value) })
}

func (e *bboltEngine) Get(key []byte) (n int, found bool, err error) {
	err = e.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bboltBucket).Get(key)
		n, found = len(v), v != nil
		return nil
	})
	return n, found, err
}

func (e *bboltEngine) Delete(key []byte) error {
	return e.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bboltBucket).Delete(key) })
}

func (e *bboltEngine) NewIter(reverse bool) (Iter, error) {
	tx, err := e.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &bboltIter{tx: tx, c: tx.Bucket(bboltBucket).Cursor(), reverse: reverse}, nil
}

func (e *bboltEngine) Close() error { return e.db.Close() }

type bboltIter struct {
	tx         *bolt.Tx
	c          *bolt.Cursor
	reverse    bool
	key, value []byte
}

func (i *bboltIter) set(k, v []byte) bool {
	i.key, i.value = k, v
	return k != nil
}

func (i *bboltIter) First() bool {
	if i.reverse {
		return i.set(i.c.Last())
	}
	return i.set(i.c.First())
}

func (i *bboltIter) SeekGE(key []byte) bool { return i.set(i.c.Seek(key)) }

func (i *bboltIter) Next() bool {
	if i.reverse {
		return i.set(i.c.Prev())
	}
	return i.set(i.c.Next())
}

func (i *bboltIter) Key() []byte   { return i.key }
func (i *bboltIter) Value() []byte { return i.value }
func (i *bboltIter) Close() error  { return i.tx.Rollback() }
