package lsmgo

import (
	"errors"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/compaction"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// diskSpace is the last statfs of the DB's filesystem, refreshed after
// diskCheckInterval or diskCheckBytes of WAL (less for a small reserve),
// so the commit path pays for a system call only now and then.
type diskSpace struct {
	checked      time.Time
	walBytes     int64 // db.m.walBytes at the check
	free, total  uint64
	unsupported  bool
	reserve      uint64
	reserveKnown bool
}

const (
	diskCheckInterval = 50 * time.Millisecond
	diskCheckBytes    = 1 << 20
)

// refreshLocked updates the cached space when it is stale. db.mu is held.
func (d *diskSpace) refreshLocked(db *DB) {
	if d.unsupported {
		return
	}
	wal := db.m.walBytes.Load()
	// A quarter of the reserve between checks keeps the WAL from
	// overrunning it before a check notices.
	every := int64(diskCheckBytes)
	if d.reserveKnown {
		every = min(every, int64(d.reserve/4))
	}
	if !d.checked.IsZero() && time.Since(d.checked) < diskCheckInterval && wal-d.walBytes < every {
		return
	}
	free, total, err := vfs.DiskUsage(db.fs, db.dirname)
	if err != nil {
		// An FS that cannot tell never will; a failing statfs on one
		// that can is retried at the next check.
		d.unsupported = errors.Is(err, errors.ErrUnsupported)
		d.checked, d.walBytes = time.Now(), wal
		return
	}
	d.free, d.total, d.checked, d.walBytes = free, total, time.Now(), wal
	if !d.reserveKnown {
		d.reserve = db.opts.diskReserve(total)
		d.reserveKnown = true
	}
}

// checkReserveLocked refuses a write while free space is below the
// reserve. db.mu is held.
func (db *DB) checkReserveLocked() error {
	if db.opts.DiskReserve < 0 {
		return nil
	}
	d := &db.mu.disk
	d.refreshLocked(db)
	if d.unsupported || !d.reserveKnown || d.free >= d.reserve {
		return nil
	}
	db.m.noSpaceWrites.Add(1)
	return &noSpaceError{fmt.Errorf("%s free on the filesystem of %s, below the reserve of %s kept for flushes and recovery (Options.DiskReserve)",
		humanBytes(int64(d.free)), db.dirname, humanBytes(int64(d.reserve)))}
}

// compactionFitsLocked says whether c's output, estimated as the size of
// its inputs, fits in the free space next to room for flushing every
// memtable: a compaction that would not is postponed rather than started
// and failed part way, and it never takes the space a flush needs, since
// only a flush lets WALs be deleted. A move writes nothing. db.mu is held.
func (db *DB) compactionFitsLocked(c *compaction.Compaction) bool {
	if c.TrivialMove() {
		return true
	}
	free, _, err := vfs.DiskUsage(db.fs, db.dirname)
	if err != nil {
		return true
	}
	need := uint64(len(db.mu.imm)+1) * uint64(db.opts.MemTableSize)
	for _, f := range c.AllInputs() {
		need += f.Size
	}
	return need <= free
}

// diskReserve resolves Options.DiskReserve for a filesystem of total
// bytes (see there).
func (o *Options) diskReserve(total uint64) uint64 {
	if o.DiskReserve > 0 {
		return uint64(o.DiskReserve)
	}
	return min(2*uint64(o.MemTableSize), total/16)
}
