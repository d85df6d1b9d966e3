package lsmgo

import (
	"sort"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// readState is what a read needs, captured at one moment: the memtables
// and the version. It is immutable; a new one replaces it whenever a
// memtable rotates or a version is installed. Its reference count keeps the
// version, and so the version's table files, alive while a read uses it.
type readState struct {
	refs    atomic.Int32
	mem     *memTable
	imm     []*memTable // newest first, the order reads consult them
	version *manifest.Version
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.version.Unref()
		rs.mem.unref()
		for _, m := range rs.imm {
			m.unref()
		}
	}
}

// loadReadState returns the current read state with a reference the
// caller must drop, or nil once the DB is closed. It takes no lock: a
// read state whose count already fell to zero is being torn down, and the
// load is simply retried, since a newer state (or nil) has been published
// before the old one was released.
func (db *DB) loadReadState() *readState {
	for {
		rs := db.rs.Load()
		if rs == nil || rs.tryRef() {
			return rs
		}
	}
}

// tryRef takes a reference unless the count already reached zero.
func (rs *readState) tryRef() bool {
	for {
		n := rs.refs.Load()
		if n <= 0 {
			return false
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// readSeqLatest, passed as a read sequence number, means "the newest
// writes". The visible sequence number is then loaded only after the read
// state is pinned: loaded before, it could be overtaken by a flush and a
// compaction installed in between, and that compaction, which no snapshot
// holds back, may drop the older versions such a reader needs.
const readSeqLatest base.SeqNum = 0

// loadReadStateAt is loadReadState that also resolves readSeqLatest; it
// returns ErrClosed once the DB is closed.
func (db *DB) loadReadStateAt(readSeq base.SeqNum) (*readState, base.SeqNum, error) {
	rs := db.loadReadState()
	if rs == nil {
		return nil, 0, ErrClosed
	}
	if readSeq == readSeqLatest {
		readSeq = base.SeqNum(db.visibleSeq.Load())
	}
	return rs, readSeq, nil
}

// updateReadStateLocked publishes a new read state from db.mu's memtables
// and the version set's current version; db.mu must be held.
func (db *DB) updateReadStateLocked() {
	rs := &readState{mem: db.mu.mem, version: db.vs.Current()}
	rs.refs.Store(1)
	rs.mem.ref()
	rs.imm = make([]*memTable, len(db.mu.imm))
	for i, m := range db.mu.imm {
		m.ref()
		rs.imm[len(rs.imm)-1-i] = m
	}
	old := db.rs.Swap(rs)
	if old != nil {
		old.unref()
	}
}

// get finds the newest entry of key visible at readSeq, from the newest
// source to the oldest. found is false when no source has the key. The
// value is not copied: from a memtable it aliases the arena, valid while
// rs is pinned; from a table it aliases blk, valid until the caller
// releases blk (nil for a memtable). The caller copies the value once,
// before it leaves the DB.
func (rs *readState) get(db *DB, key []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool, blk *cache.Block, err error) {
	if value, kind, found = rs.mem.mt.Get(key, readSeq); found {
		return value, kind, true, nil, nil
	}
	for _, m := range rs.imm {
		if value, kind, found = m.mt.Get(key, readSeq); found {
			return value, kind, true, nil, nil
		}
	}
	v := rs.version
	for _, f := range v.Files[0] {
		if base.CompareUser(key, f.Smallest.UserKey) < 0 || base.CompareUser(key, f.Largest.UserKey) > 0 {
			continue
		}
		if f.SmallestSeq >= readSeq {
			// Every entry of this table is newer than the reader.
			continue
		}
		if value, kind, found, blk, err = db.tables.get(f, key, readSeq); err != nil || found {
			return value, kind, found, blk, err
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		f := findFile(v.Files[level], key)
		if f == nil {
			continue
		}
		if value, kind, found, blk, err = db.tables.get(f, key, readSeq); err != nil || found {
			return value, kind, found, blk, err
		}
	}
	return nil, 0, false, nil, nil
}

// findFile returns the file of a sorted, non-overlapping level whose range
// holds key, or nil.
func findFile(files []*manifest.FileMetadata, key []byte) *manifest.FileMetadata {
	i := sort.Search(len(files), func(i int) bool {
		return base.CompareUser(files[i].Largest.UserKey, key) >= 0
	})
	if i < len(files) && base.CompareUser(files[i].Smallest.UserKey, key) <= 0 {
		return files[i]
	}
	return nil
}
