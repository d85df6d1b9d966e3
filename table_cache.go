package lsmgo

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// tableCache keeps an open sstable.Reader per live table, opened on first
// use. Readers are closed only when their file becomes obsolete (no live
// version references it), so a reader is never closed under a read.
type tableCache struct {
	fs     vfs.FS
	dir    string
	blocks *cache.Cache
	stats  *sstable.Stats
	// mu guards readers. Every table read looks its reader up, so lookups
	// share the lock; only opening and evicting take it exclusively.
	mu      sync.RWMutex
	readers map[base.FileNum]*tableEntry
}

type tableEntry struct {
	once sync.Once
	r    *sstable.Reader
	err  error
}

func newTableCache(fs vfs.FS, dir string, blocks *cache.Cache, stats *sstable.Stats) *tableCache {
	return &tableCache{fs: fs, dir: dir, blocks: blocks, stats: stats, readers: make(map[base.FileNum]*tableEntry)}
}

// reader returns the open reader of a table.
func (tc *tableCache) reader(f *manifest.FileMetadata) (*sstable.Reader, error) {
	for attempt := 0; ; attempt++ {
		tc.mu.RLock()
		e := tc.readers[f.FileNum]
		tc.mu.RUnlock()
		if e == nil {
			tc.mu.Lock()
			if e = tc.readers[f.FileNum]; e == nil {
				e = &tableEntry{}
				tc.readers[f.FileNum] = e
			}
			tc.mu.Unlock()
		}
		opened := false
		e.once.Do(func() {
			opened = true
			e.r, e.err = tc.open(f.FileNum, f.Size)
		})
		if e.err == nil {
			return e.r, nil
		}
		// Forget the failure so a later read retries (the fault may pass).
		tc.mu.Lock()
		if tc.readers[f.FileNum] == e {
			delete(tc.readers, f.FileNum)
		}
		tc.mu.Unlock()
		// A caller that only waited for another goroutine's failed open
		// may have started after the fault passed: it tries once itself.
		if opened || attempt > 0 {
			return nil, e.err
		}
	}
}

func (tc *tableCache) open(num base.FileNum, size uint64) (*sstable.Reader, error) {
	name := tc.fs.PathJoin(tc.dir, base.MakeFilename(base.FileTypeTable, num))
	file, err := tc.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("lsmgo: open table: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("lsmgo: stat table: %w", err)
	}
	if uint64(st.Size()) != size {
		file.Close()
		return nil, base.Corruptf(name, -1, "file is %d bytes, the manifest says %d", st.Size(), size)
	}
	r, err := sstable.NewReader(file, st.Size(), sstable.ReaderOptions{
		Cache: tc.blocks, FileNum: num, FileName: name, Stats: tc.stats,
	})
	if err != nil {
		// NewReader owns file and has closed it.
		return nil, err
	}
	return r, nil
}

func (tc *tableCache) get(f *manifest.FileMetadata, key []byte, readSeq base.SeqNum) ([]byte, base.Kind, bool, error) {
	r, err := tc.reader(f)
	if err != nil {
		return nil, 0, false, err
	}
	return r.Get(key, readSeq)
}

func (tc *tableCache) newIter(f *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error) {
	r, err := tc.reader(f)
	if err != nil {
		return nil, err
	}
	return r.NewIter(lower, upper), nil
}

// newCompactionIter returns an iterator over all of a table's entries
// that reads ahead and leaves the block cache alone (see
// sstable.Reader.NewCompactionIter).
func (tc *tableCache) newCompactionIter(f *manifest.FileMetadata) (base.InternalIterator, error) {
	r, err := tc.reader(f)
	if err != nil {
		return nil, err
	}
	return r.NewCompactionIter(), nil
}

// evict closes the reader of an obsolete table and drops its blocks.
func (tc *tableCache) evict(num base.FileNum) {
	tc.mu.Lock()
	e := tc.readers[num]
	delete(tc.readers, num)
	tc.mu.Unlock()
	if e != nil {
		e.once.Do(func() {})
		if e.r != nil {
			e.r.Close()
		}
	}
	tc.blocks.EvictFile(num)
}

func (tc *tableCache) close() error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var err error
	for num, e := range tc.readers {
		e.once.Do(func() {})
		if e.r != nil {
			err = errors.Join(err, e.r.Close())
		}
		delete(tc.readers, num)
	}
	return err
}
