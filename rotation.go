package lsmgo

import (
	"errors"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// memEntryOverhead bounds the arena bytes a skiplist node adds to a key
// and value; rotation decisions use it so an insert never finds the
// memtable full after its WAL record is written.
const memEntryOverhead = 128

// memSizeEstimate bounds the memtable bytes a batch needs.
func memSizeEstimate(repr []byte) int {
	return len(repr) + int(batchrepr.Count(repr))*memEntryOverhead
}

// makeRoomForWriteLocked makes sure the mutable memtable can take need
// more bytes: it rotates a full memtable and stalls (waits) while too many
// memtables or L0 files are queued. db.mu is held; it may be released.
func (db *DB) makeRoomForWriteLocked(need int) error {
	slowed := false
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.mu.closing {
			// Close stops background work, so a stalled write would
			// never wake.
			return ErrClosed
		}
		l0 := len(db.rs.Load().version.Files[0])
		if !slowed && l0 >= db.opts.L0SlowdownWritesThreshold {
			slowed = true
			db.m.slowdowns.Add(1)
			db.mu.Unlock()
			time.Sleep(time.Millisecond)
			db.mu.Lock()
			continue
		}
		if m := db.mu.mem; m.reserved+need <= m.mt.Capacity() && db.mu.walFailed == nil && m.blobBytes < db.maxMemBlobBytes() {
			return nil
		}
		if len(db.mu.imm)+1 >= db.opts.MemTableStopWritesThreshold || l0 >= db.opts.L0StopWritesThreshold {
			if err := db.noSpaceStallLocked(l0); err != nil {
				return err
			}
			db.stallLocked()
			continue
		}
		if err := db.rotateMemtableLocked(need); err != nil {
			return db.rotateFailedLocked(err)
		}
	}
}

// rotateFailedLocked turns a failed rotation into the writer's error. A
// new WAL that could not be created for lack of space fails just this
// write: the next one tries again. Anything else (a failed fsync
// included) makes the DB read-only.
func (db *DB) rotateFailedLocked(err error) error {
	if retryable(err) {
		db.m.noSpaceWrites.Add(1)
		return &noSpaceError{err}
	}
	db.setBackgroundErrorLocked(err)
	return db.mu.bgErr
}

// maxMemBlobBytes bounds the blob bytes one memtable's WAL points to,
// hence what the next Open reads to verify them (doc/blob.md, Recovery):
// 1 GiB, or 16 memtables if larger. Without it a 32 MiB memtable of
// pointers to 100 KiB values would point to about 20 GB.
func (db *DB) maxMemBlobBytes() int64 {
	return max(1<<30, 16*int64(db.opts.MemTableSize))
}

// rotateForFlushLocked makes the mutable memtable immutable for Flush,
// waiting while too many memtables are queued. It records which memtable
// it rotated (0 when it was empty).
func (db *DB) rotateForFlushLocked(w *commitWriter) error {
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.mu.closing {
			return ErrClosed
		}
		if db.mu.mem.mt.Empty() {
			// Acknowledged writes may still wait in queued memtables
			// (after a rotation, or replayed at an Open on a full disk).
			if n := len(db.mu.imm); n > 0 {
				w.rotatedID = db.mu.imm[n-1].id
			}
			return nil
		}
		if len(db.mu.imm)+1 < db.opts.MemTableStopWritesThreshold {
			break
		}
		if err := db.noSpaceStallLocked(0); err != nil {
			return err
		}
		db.stallLocked()
	}
	w.rotatedID = db.mu.mem.id
	if err := db.rotateMemtableLocked(0); err != nil {
		return db.rotateFailedLocked(err)
	}
	return nil
}

// noSpaceStallLocked returns the error a write gets instead of a stall
// when the work it would wait for is failing for lack of space: a stall
// then lasts until an operator frees space, and a caller (a server's
// client above all) is better told at once, with an error that says so.
// The work goes on retrying, and writes are admitted again as soon as it
// succeeds. l0 is the number of L0 tables. db.mu is held.
func (db *DB) noSpaceStallLocked(l0 int) error {
	var cause error
	switch {
	case len(db.mu.imm)+1 >= db.opts.MemTableStopWritesThreshold && db.mu.flushNoSpace != nil:
		cause = fmt.Errorf("memtables wait for a flush that failed: %w", db.mu.flushNoSpace)
	case l0 >= db.opts.L0StopWritesThreshold && db.mu.compactBackoff != 0:
		cause = errors.New("L0 waits for compactions postponed for lack of space")
	default:
		return nil
	}
	if db.spaceBackLocked() {
		// Let the write wait for the retry.
		return nil
	}
	db.m.noSpaceWrites.Add(1)
	return &noSpaceError{cause}
}

// spaceBackLocked reports whether the filesystem has room for a flush
// again (say an operator freed some) while background work waits out a
// no-space backoff, and if so cuts the backoff short, so that writes
// resume at once rather than up to maxNoSpaceBackoff later. Retries so
// triggered are at most one per minNoSpaceBackoff: a caller that comes
// sooner waits for the rest of it. db.mu is held; it may be released.
func (db *DB) spaceBackLocked() bool {
	free, _, err := vfs.DiskUsage(db.fs, db.dirname)
	if err != nil || free < uint64(db.opts.MemTableSize) {
		return false
	}
	if wait := minNoSpaceBackoff - time.Since(db.mu.lastNoSpace); wait > 0 && !db.sleepLocked(wait) {
		return false
	}
	db.mu.flushNoSpace = nil
	db.mu.retryNow = true
	db.mu.compactRetryAt = time.Time{}
	db.mu.cond.Broadcast()
	return true
}

// stallLocked waits for a flush or compaction to finish.
func (db *DB) stallLocked() {
	start := time.Now()
	db.m.stalls.Add(1)
	db.maybeScheduleFlushLocked()
	db.maybeScheduleCompaction()
	db.mu.cond.Wait()
	db.m.stallNanos.Add(int64(time.Since(start)))
}

// rotateMemtableLocked makes the mutable memtable immutable, starts a new
// WAL and a new memtable large enough for need, and schedules a flush.
func (db *DB) rotateMemtableLocked(need int) error {
	if db.mu.walFailed != nil {
		if err := db.wal.cutFailedWrite(); err != nil {
			return err
		}
	}
	num := db.vs.NewFileNum()
	if err := db.wal.rotate(num); err != nil {
		return err
	}
	db.mu.walFailed = nil
	// Even an empty memtable goes through a flush: the flush's manifest
	// edit is what retires its WAL safely.
	db.mu.imm = append(db.mu.imm, db.mu.mem)
	db.mu.mem = db.newMemTable(num, need)
	db.updateReadStateLocked()
	db.maybeScheduleFlushLocked()
	return nil
}

func (db *DB) newMemTable(logNum base.FileNum, need int) *memTable {
	db.mu.nextMemID++
	m := &memTable{logNum: logNum, id: db.mu.nextMemID, blobs: &db.blobs}
	if 2*need <= db.opts.MemTableSize {
		m.pool = &db.memPool
		m.mt = m.pool.get()
	} else {
		// A batch too large for the standard size gets a memtable of
		// its own, which the pool does not keep.
		m.mt = memtable.New(2 * need)
	}
	m.reserved = m.mt.Size()
	// The DB's memtable list holds the first reference.
	m.refs.Store(1)
	return m
}
