package lsmgo

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

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
	// mapTables opens every reader with ReaderOptions.Map
	// (Options.MapTables).
	mapTables bool
	// mapLeft is what is left of Options.MapBudget: the bytes of tables
	// that may still be opened mapped. A mapped table's size is taken from
	// it when the table is opened and given back when its reader closes.
	mapLeft atomic.Int64
	// readers maps a table to its entry. Every Get looks up one to a few
	// tables, so lookups take no lock and write no shared memory (a read
	// lock's counter, written by every reader on every core, cost more
	// than the lookup); the map is replaced whole, under mu, when a table
	// is opened or evicted, which happens once per table.
	mu      sync.Mutex
	readers atomic.Pointer[map[base.FileNum]*tableEntry]
}

type tableEntry struct {
	once sync.Once
	r    *sstable.Reader
	err  error
	// budgeted is the bytes of tableCache.mapLeft this table holds.
	budgeted int64
}

func newTableCache(fs vfs.FS, dir string, blocks *cache.Cache, stats *sstable.Stats, mapTables bool, mapBudget int64) *tableCache {
	tc := &tableCache{fs: fs, dir: dir, blocks: blocks, stats: stats, mapTables: mapTables}
	tc.mapLeft.Store(mapBudget)
	tc.readers.Store(&map[base.FileNum]*tableEntry{})
	return tc
}

// entry returns the entry of a table, adding an empty one if it has none.
func (tc *tableCache) entry(num base.FileNum) *tableEntry {
	if e := (*tc.readers.Load())[num]; e != nil {
		return e
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	old := *tc.readers.Load()
	if e := old[num]; e != nil {
		return e
	}
	e := &tableEntry{}
	m := maps.Clone(old)
	m[num] = e
	tc.readers.Store(&m)
	return e
}

// remove drops the entry of a table, if it is e (any entry when e is
// nil), and returns the entry it dropped.
func (tc *tableCache) remove(num base.FileNum, e *tableEntry) *tableEntry {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	old := *tc.readers.Load()
	cur := old[num]
	if cur == nil || (e != nil && cur != e) {
		return nil
	}
	m := maps.Clone(old)
	delete(m, num)
	tc.readers.Store(&m)
	return cur
}

// reader returns the open reader of a table.
func (tc *tableCache) reader(f *manifest.FileMetadata) (*sstable.Reader, error) {
	for attempt := 0; ; attempt++ {
		e := tc.entry(f.FileNum)
		opened := false
		e.once.Do(func() {
			opened = true
			e.r, e.budgeted, e.err = tc.open(f.FileNum, f.Size)
		})
		if e.err == nil {
			return e.r, nil
		}
		// Forget the failure so a later read retries (the fault may pass).
		tc.remove(f.FileNum, e)
		// A caller that only waited for another goroutine's failed open
		// may have started after the fault passed: it tries once itself.
		if opened || attempt > 0 {
			return nil, e.err
		}
	}
}

// open opens a table's reader, mapped when Options.MapTables says so or
// while the map budget lasts; budgeted is what it took from the budget.
func (tc *tableCache) open(num base.FileNum, size uint64) (r *sstable.Reader, budgeted int64, err error) {
	name := tc.fs.PathJoin(tc.dir, base.MakeFilename(base.FileTypeTable, num))
	file, err := tc.fs.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("lsmgo: open table: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, fmt.Errorf("lsmgo: stat table: %w", err)
	}
	if uint64(st.Size()) != size {
		file.Close()
		return nil, 0, base.Corruptf(name, -1, "file is %d bytes, the manifest says %d", st.Size(), size)
	}
	mapped := tc.mapTables
	if !mapped && tc.mapLeft.Add(-st.Size()) >= 0 {
		mapped, budgeted = true, st.Size()
	} else if !mapped {
		tc.mapLeft.Add(st.Size())
	}
	r, err = sstable.NewReader(file, st.Size(), sstable.ReaderOptions{
		Cache: tc.blocks, FileNum: num, FileName: name, Stats: tc.stats, Map: mapped,
	})
	if err == nil && !r.Mapped() {
		// The file could not be mapped; it is read with pread.
		tc.mapLeft.Add(budgeted)
		budgeted = 0
	}
	if err != nil {
		// NewReader owns file and has closed it.
		tc.mapLeft.Add(budgeted)
		return nil, 0, err
	}
	return r, budgeted, nil
}

// closeReader closes an entry's reader and gives its budget back.
func (tc *tableCache) closeReader(e *tableEntry) error {
	e.once.Do(func() {})
	if e.r == nil {
		return nil
	}
	err := e.r.Close()
	tc.mapLeft.Add(e.budgeted)
	e.budgeted = 0
	return err
}

// get finds key in a table: the value aliases blk, which the caller
// releases once done with it (see sstable.Reader.GetInBlock).
func (tc *tableCache) get(f *manifest.FileMetadata, key []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool, blk *cache.Block, err error) {
	r, err := tc.reader(f)
	if err != nil {
		return nil, 0, false, nil, err
	}
	return r.GetInBlock(key, readSeq)
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
	if e := tc.remove(num, nil); e != nil {
		tc.closeReader(e)
	}
	tc.blocks.EvictFile(num)
}

func (tc *tableCache) close() error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var err error
	for _, e := range *tc.readers.Load() {
		err = errors.Join(err, tc.closeReader(e))
	}
	tc.readers.Store(&map[base.FileNum]*tableEntry{})
	return err
}
