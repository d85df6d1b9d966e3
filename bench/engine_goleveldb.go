package bench

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

func init() {
	registerEngine(engineSpec{name: "goleveldb", open: openGoleveldb, settings: goleveldbSettings})
}

func goleveldbSettings(cfg EngineConfig) string {
	return fmt.Sprintf("leveldb.OpenFile(dir, &opt.Options{BlockCacheCapacity: %d}); every other option default "+
		"(write buffer 4 MiB, snappy, no bloom filter); Put/Delete with &opt.WriteOptions{Sync: %t}; Get, NewIterator(nil, nil)",
		cfg.CacheSize, cfg.Sync)
}

type goleveldbEngine struct {
	db *leveldb.DB
	wo *opt.WriteOptions
}

func openGoleveldb(dir string, cfg EngineConfig) (Engine, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{BlockCacheCapacity: int(cfg.CacheSize)})
	if err != nil {
		return nil, err
	}
	return &goleveldbEngine{db: db, wo: &opt.WriteOptions{Sync: cfg.Sync}}, nil
}

func (e *goleveldbEngine) Set(key, value []byte) error { return e.db.Put(key, value, e.wo) }

func (e *goleveldbEngine) Get(key []byte) (int, bool, error) {
	v, err := e.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

func (e *goleveldbEngine) Delete(key []byte) error { return e.db.Delete(key, e.wo) }

func (e *goleveldbEngine) NewIter(reverse bool) (Iter, error) {
	return &goleveldbIter{it: e.db.NewIterator(nil, nil), reverse: reverse}, nil
}

func (e *goleveldbEngine) Close() error { return e.db.Close() }

type goleveldbIter struct {
	it      iterator.Iterator
	reverse bool
}

func (i *goleveldbIter) First() bool {
	if i.reverse {
		return i.it.Last()
	}
	return i.it.First()
}

func (i *goleveldbIter) SeekGE(key []byte) bool { return i.it.Seek(key) }

func (i *goleveldbIter) Next() bool {
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *goleveldbIter) Key() []byte   { return i.it.Key() }
func (i *goleveldbIter) Value() []byte { return i.it.Value() }

func (i *goleveldbIter) Close() error {
	i.it.Release()
	return i.it.Error()
}
