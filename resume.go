package lsmgo

import "fmt"

// Resume makes a DB that a background error turned read-only (see
// ErrReadOnly) accept writes again, without closing it. Call it once the
// cause is dealt with: a failed fsync, an I/O error in a flush or
// compaction, a manifest that could not be written.
//
// Such errors do not heal by themselves because their outcome on disk is
// unknown. After a failed fsync in particular, the kernel may have
// dropped the dirty pages it could not write back and marked them clean,
// so a later fsync that succeeds proves nothing about them: retrying the
// sync would be a lie. What is known is what memory holds. Resume
// therefore
//
//  1. waits for running flushes and compactions to stop;
//  2. starts a new WAL file, without syncing the old ones (their contents
//     are no longer trusted);
//  3. makes the memtable immutable and flushes it, and every memtable
//     queued before it, to tables that it syncs, and logs them in a
//     freshly written manifest; the old WAL files are deleted once their
//     memtables are in tables;
//  4. only then admits writes again, which go to the new WAL.
//
// Every write that was acknowledged is in a memtable or an older table,
// so after step 3 all of them are on disk and synced, whatever the failed
// fsync lost. A write whose own fsync failed was never acknowledged and
// never applied; it is not brought back. Writes wait while Resume runs.
//
// A batch committed with CommitAsync whose fsync failed is different: it
// was visible, so Resume refuses (ErrVisibleWriteUnsynced) and the DB
// must be reopened (see Pending.Wait).
//
// If the flush fails again, Resume returns that error and the DB stays
// read-only; it may be called again. It returns nil at once when the DB
// is not read-only. Errors from a full disk (ErrNoSpace) never need it:
// they heal by themselves (doc/operations.md).
func (db *DB) Resume() error {
	if db.closed.Load() {
		return ErrClosed
	}
	w := &commitWriter{resume: true}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.enqueueLocked(w)
	return w.err
}

// resumeLocked is Resume, run by the leader of the commit queue, so that
// no write is admitted until the flush is done. db.mu is held; it is
// released while the flush runs.
func (db *DB) resumeLocked() error {
	// A flush or compaction that saw the error is on its way out; one
	// waiting out a no-space backoff is woken to notice it.
	db.mu.retryNow = true
	db.mu.cond.Broadcast()
	for (db.mu.flushing || db.mu.compacting > 0) && !db.mu.closing {
		db.mu.cond.Wait()
	}
	switch {
	case db.mu.closing:
		return ErrClosed
	case db.mu.bgErr == nil:
		return nil
	case db.mu.visibleUnsynced:
		return ErrVisibleWriteUnsynced
	case db.mu.asyncWalPos > db.wal.synced.Load():
		// A visible batch not yet synced when the error came: resuming
		// would mark it synced before the flush that makes it durable,
		// and its Pending.Wait would report success early.
		db.mu.visibleUnsynced = true
		return ErrVisibleWriteUnsynced
	}
	cause := db.mu.bgErr
	num := db.vs.NewFileNum()
	next, err := db.wal.create(num)
	if err != nil {
		return fmt.Errorf("lsmgo: resume: %w", err)
	}
	db.wal.abandon(next)
	db.vs.ResetWriteError()
	db.mu.walFailed = nil
	db.mu.flushNoSpace = nil
	db.mu.bgErr = nil
	target := db.mu.mem.id
	db.mu.imm = append(db.mu.imm, db.mu.mem)
	db.mu.mem = db.newMemTable(num, 0)
	db.updateReadStateLocked()
	db.maybeScheduleFlushLocked()
	for db.mu.flushedID < target && db.mu.bgErr == nil && db.mu.flushNoSpace == nil && !db.mu.closing {
		db.mu.cond.Wait()
	}
	switch {
	case db.mu.flushedID >= target:
	case db.mu.closing:
		return ErrClosed
	case db.mu.bgErr != nil:
		return db.mu.bgErr
	default:
		// Out of space: stay read-only rather than admit writes into a
		// new WAL while older, untrusted ones still back memtables.
		err := &noSpaceError{fmt.Errorf("resume could not flush: %w", db.mu.flushNoSpace)}
		db.mu.bgErr = cause
		return err
	}
	db.opts.Logger.Info("lsmgo: resumed after background error; every acknowledged write is in a synced table",
		"dir", db.dirname, "was", cause)
	db.maybeScheduleCompaction()
	return nil
}
