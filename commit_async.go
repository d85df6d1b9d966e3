package lsmgo

import (
	"errors"
	"sync"
)

// CommitAsync commits the batch atomically, as Apply does, but returns
// before the fsync that durability asks for: once the batch is in the WAL
// file (handed to the OS, as in every sync mode) and visible to reads.
// The returned Pending's Wait returns when the batch is as durable as
// Apply would have made it before returning: at once under SyncInterval
// and SyncNone (without WriteOptions.Sync), after an fsync that covers it
// under SyncAlways. Many writers' fsyncs are shared, as Apply's are.
//
// This is the order Redis uses: a write is applied in memory, then
// written and fsynced before its reply. A caller that serializes its own
// read-modify-writes (a lock per key) can release that lock after
// CommitAsync and call Wait outside it, so writes of one key share
// fsyncs instead of taking one each. The price is that other readers may
// see the batch before it is durable: a power loss before its fsync loses
// a write that was read. A process crash does not: the WAL file already
// holds it.
//
// An error from CommitAsync means the batch was not applied, exactly as
// from Apply. An error from Wait means the fsync failed after the batch
// was visible: its outcome is unknown (it may or may not survive a
// restart), and the DB has turned read-only; see Pending.Wait.
func (db *DB) CommitAsync(b *Batch, wo *WriteOptions) (Pending, error) {
	return db.commit(b, wo, 0, true)
}

// Pending is a batch committed by CommitAsync whose durability may still
// be pending. The zero value is a batch with nothing to wait for. It may
// be copied, and waited for from any goroutine, any number of times.
type Pending struct {
	db *DB // nil: nothing to wait for
	// walPos is the logical WAL position after the batch; an fsync that
	// covers it makes the batch durable.
	walPos uint64
}

// Wait returns once the batch is durable under the DB's sync mode (see
// CommitAsync), or the error that kept it from becoming so.
//
// A failed fsync is fatal to the DB's writes, as it is to Pebble's: the
// batch was already visible, and other writes may have been read and
// built upon it, so the DB turns read-only (every later write returns an
// error matching ErrReadOnly) and Resume refuses with
// ErrVisibleWriteUnsynced. Only closing and reopening the DB, which
// recovers what the WAL holds, makes it writable again; the failed batch
// may or may not be there.
func (p Pending) Wait() error {
	if p.db == nil {
		return nil
	}
	wake := wakePool.Get().(chan struct{})
	err := p.db.wal.waitSynced(p.walPos, wake)
	wakePool.Put(wake)
	if err == nil {
		return nil
	}
	db := p.db
	db.mu.Lock()
	defer db.mu.Unlock()
	db.setBackgroundErrorLocked(err)
	db.mu.visibleUnsynced = true
	return db.mu.bgErr
}

// ErrVisibleWriteUnsynced is returned by Resume after a batch committed
// with CommitAsync failed its fsync (Pending.Wait): that batch was visible
// and its outcome on disk is unknown, so the DB must be closed and
// reopened rather than resumed. Resume would flush the memtable holding
// it and make durable a write its writer was told had failed.
var ErrVisibleWriteUnsynced = errors.New("lsmgo: a write visible to readers failed its fsync; close and reopen the DB")

// wakePool holds the channels Pending.Wait sleeps on in waitSynced, each
// with room for its one token, as commitWriter.wake.
var wakePool = sync.Pool{New: func() any { return make(chan struct{}, 1) }}
