package lsmgo

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// walWriter is the write side of the DB's write-ahead log: the WAL file
// being written, the logical positions written and synced, the fsyncs that
// commits share, zero-extension ahead of the records, and the switch to a
// new file when the memtable rotates.
//
// Positions in the WAL are logical: they count every byte written to any
// WAL since Open, so one number orders bytes across files (walFile.base is
// where a file starts).
//
// Locking: only the commit leader writes records (the commit queue admits
// one leader at a time), so write needs no lock. cur changes only with
// db.mu held, and with syncMu held too whenever a syncer may run (rotate,
// Close; Open installs the first file before any syncer starts), so the
// leader (which holds the queue), a syncer (which holds syncMu) and
// readers under db.mu each see a stable file.
type walWriter struct {
	fs  vfs.FS
	dir string
	m   *dbMetrics
	// zeroChunk is how far ahead of its records a file is extended with
	// zeros (preallocate); 0 when the DB does not sync every write.
	zeroChunk int64
	// mapShape, when its chunk is not 0, has files that offer a shared
	// mapping written through one: each file's walMap starts as a copy.
	mapShape walMap

	cur walFile
	// beforeSync makes durable what the WAL's records refer to (the blob
	// files), so it runs before every fsync of the WAL. It may be nil.
	beforeSync func() error

	// syncMu is held while the file is fsynced or closed, so the interval
	// syncer and a rotation never touch a closed file.
	syncMu sync.Mutex
	// written and synced are logical positions: the end of what has been
	// written, and of what an fsync has covered.
	written atomic.Uint64
	synced  atomic.Uint64
	syncErr error // guarded by syncMu
	// syncWait lets the writers that need an fsync share one: at most one
	// of them syncs at a time (syncing), and the others sleep in waiters.
	// When it is done it wakes every waiter its fsync covered, each on
	// its own channel, so they leave together without taking syncMu or
	// syncWait.mu one after the other, and one waiter it did not cover,
	// which syncs next.
	syncWait struct {
		mu      sync.Mutex
		syncing bool
		waiters []syncWaiter
	}
}

// syncWaiter is a writer asleep in waitSynced until an fsync covers pos.
type syncWaiter struct {
	pos  uint64
	wake chan<- struct{}
}

// walFile is one WAL file of the log.
type walFile struct {
	num  base.FileNum
	file vfs.File
	w    *record.Writer
	// base is the logical position of the file's first byte.
	base uint64
	// zeroed is how far the file has been extended with zeros ahead of
	// the records (see preallocate).
	zeroed int64
	// mapped, when not nil, is what w writes to: a mapping of the file.
	mapped *walMap
}

func (f *walFile) name() string { return base.MakeFilename(base.FileTypeLog, f.num) }

// close releases the file's mapping, if any, and closes it.
func (f *walFile) close() error {
	var err error
	if f.mapped != nil {
		err = f.mapped.unmap()
	}
	if cerr := f.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// init prepares an empty walWriter; recovery creates the first file and
// installs it (DB.resumeWrites).
func (l *walWriter) init(fs vfs.FS, dir string, m *dbMetrics, zeroChunk int64, mapShape walMap) {
	l.fs, l.dir, l.m, l.zeroChunk, l.mapShape = fs, dir, m, zeroChunk, mapShape
}

// create creates WAL file num and makes its directory entry durable, so a
// write synced into it survives a crash.
func (l *walWriter) create(num base.FileNum) (walFile, error) {
	f, err := l.fs.Create(l.fs.PathJoin(l.dir, base.MakeFilename(base.FileTypeLog, num)))
	if err != nil {
		return walFile{}, fmt.Errorf("lsmgo: create WAL: %w", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		f.Close()
		return walFile{}, err
	}
	wf := walFile{num: num, file: f}
	if wm, ok := f.(vfs.WriteMapper); ok && l.mapShape.chunk > 0 && canMap(wm, l.mapShape.chunk) {
		mapped := l.mapShape
		mapped.f = wm
		wf.mapped = &mapped
		wf.w = record.NewWriter(wf.mapped)
	} else {
		wf.w = record.NewWriter(f)
	}
	return wf, nil
}

// canMap tries a mapping of the empty file: a filesystem that cannot map
// its files (some FUSE and network filesystems) refuses it at once, and
// the file is then written with write(2) rather than failing its first
// write. Mapping past the file's end is allowed; only a store there
// would fault.
func canMap(wm vfs.WriteMapper, chunk int64) bool {
	b, err := wm.Map(0, int(chunk))
	if err != nil {
		return false
	}
	return wm.Unmap(b) == nil
}

// rotate starts WAL file num and retires the current one; db.mu is held.
func (l *walWriter) rotate(num base.FileNum) error {
	// The old WAL is synced before the new one exists, so after a power
	// loss the surviving writes are always a prefix, and a damaged tail
	// can only be in the newest WAL.
	if err := l.sync(); err != nil {
		return err
	}
	next, err := l.create(num)
	if err != nil {
		return err
	}
	if err := l.switchTo(&next); err != nil {
		next.close()
		return err
	}
	return nil
}

// switchTo syncs and closes the current file, if any, and installs next
// (when not nil) in its place. db.mu is held.
//
// When a rotation (next not nil) cannot close the current file, that file
// stays current: the failure may be one that fails only the write that
// rotated (no space), and the writes after it still go to this file
// through cur.w, so it must stay the file that sync fsyncs. A file the
// OS did release refuses those writes, which then fail the DB.
func (l *walWriter) switchTo(next *walFile) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.cur.file != nil {
		if err := l.syncLocked(); err != nil {
			return err
		}
		if err := l.cur.close(); err != nil {
			if next == nil {
				l.cur.file = nil
			}
			return fmt.Errorf("lsmgo: WAL close: %w", err)
		}
		l.cur.file = nil
	}
	if next != nil {
		l.cur = *next
		l.cur.base = l.written.Load()
	}
	return nil
}

// close syncs and closes the WAL at Close. After a background error it
// only closes the file: the error already made the DB read-only, and a
// sync that may fail again would add nothing. db.mu is held.
func (l *walWriter) close(bgErr bool) error {
	if bgErr {
		if l.cur.file != nil {
			l.cur.close()
			l.cur.file = nil
		}
		return nil
	}
	return l.switchTo(nil)
}

// write appends the group's batches to the WAL, with one write or, into a
// mapped file, one copy, and returns the logical WAL position after them.
// Only the commit leader calls it.
func (l *walWriter) write(group []*commitWriter) (uint64, error) {
	f := &l.cur
	for _, w := range group {
		if err := f.w.WriteRecord(w.repr); err != nil {
			return 0, fmt.Errorf("lsmgo: WAL %s: %w", f.name(), err)
		}
	}
	n := f.w.Buffered()
	if err := l.preallocate(f); err != nil {
		return 0, err
	}
	if err := f.w.Flush(); err != nil {
		return 0, fmt.Errorf("lsmgo: WAL write %s: %w", f.name(), err)
	}
	l.m.walBytes.Add(int64(n))
	pos := f.base + uint64(f.w.Size())
	l.written.Store(pos)
	return pos, nil
}

// maxWALZeroChunk is the most a WAL is extended with zeros at a time. The
// commit leader writes the zeros, so a chunk is a pause of 32 page writes
// (about a tenth of a millisecond) for the group it leads, once per 128
// KiB of records; the next fsync also commits the new size to the
// journal, once per chunk.
const maxWALZeroChunk = 128 << 10

// walZeroWrite is the size of each write of zeros: one page. A larger
// write lets the kernel cache the range as one large folio, and a record
// that later dirties a few bytes of it then makes every fsync write back
// the whole folio (measured: 1 MiB per fsync for 1 MiB writes).
const walZeroWrite = 4 << 10

// zeros is read-only.
var zeros [walZeroWrite]byte

// preallocate extends f with zeros, a chunk ahead of the records about to
// be written, when the DB syncs every write. An fsync after an append that
// grew the file must also commit the new size to the filesystem's
// journal; an fsync after records overwrote zeros already in the file need
// only write the data, which measured about a quarter faster on ext4. A
// reader takes a zero tail for the log's end (see internal/record), so a
// crash anywhere leaves a readable WAL.
//
// A mapped file is allocated instead, a chunk ahead, in every sync mode:
// a store into the mapping must never find the disk full.
func (l *walWriter) preallocate(f *walFile) error {
	if f.mapped != nil {
		if err := f.mapped.reserve(f.w.Size()); err != nil {
			return fmt.Errorf("lsmgo: WAL preallocate %s: %w", f.name(), err)
		}
		return nil
	}
	chunk := l.zeroChunk
	end := f.w.Size()
	if chunk == 0 || end <= f.zeroed {
		return nil
	}
	wa, ok := f.file.(io.WriterAt)
	if !ok {
		return nil
	}
	target := (end/chunk + 1) * chunk
	for off := f.zeroed; off < target; {
		n := min(target-off, int64(len(zeros)))
		if _, err := wa.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("lsmgo: WAL preallocate %s: %w", f.name(), err)
		}
		off += n
	}
	f.zeroed = target
	return nil
}

// waitSynced returns once an fsync covers WAL position pos. One waiter
// at a time syncs everything written so far; the others sleep until it is
// done and then either find themselves covered or sync next. wake has
// room for one token and is the caller's own (commitWriter.wake).
func (l *walWriter) waitSynced(pos uint64, wake chan struct{}) error {
	sw := &l.syncWait
	sw.mu.Lock()
	for l.synced.Load() < pos {
		if sw.syncing {
			sw.waiters = append(sw.waiters, syncWaiter{pos: pos, wake: wake})
			sw.mu.Unlock()
			<-wake
			sw.mu.Lock()
			continue
		}
		sw.syncing = true
		sw.mu.Unlock()
		err := l.sync()
		sw.mu.Lock()
		sw.syncing = false
		l.wakeSyncWaitersLocked(err != nil)
		if err != nil {
			sw.mu.Unlock()
			return err
		}
	}
	if !sw.syncing && len(sw.waiters) > 0 {
		// Covered without syncing (e.g. by a rotation's sync) after being
		// picked to sync next: hand the turn on rather than strand the rest.
		l.wakeSyncWaitersLocked(false)
	}
	sw.mu.Unlock()
	return nil
}

// waitSyncDone returns once the fsync a waiter is running, if any, is
// done (or failed). wake is as for waitSynced.
func (l *walWriter) waitSyncDone(wake chan struct{}) {
	sw := &l.syncWait
	sw.mu.Lock()
	if !sw.syncing {
		sw.mu.Unlock()
		return
	}
	// Position 0 is covered by any fsync.
	sw.waiters = append(sw.waiters, syncWaiter{pos: 0, wake: wake})
	sw.mu.Unlock()
	<-wake
}

// wakeSyncWaitersLocked wakes, after an fsync, the waiters it covered, or
// all of them when it failed (each then meets the failure itself), and
// the first waiter it did not cover, to sync next. syncWait.mu is held.
func (l *walWriter) wakeSyncWaitersLocked(failed bool) {
	sw := &l.syncWait
	synced := l.synced.Load()
	kept := sw.waiters[:0]
	for _, w := range sw.waiters {
		if failed || w.pos <= synced {
			w.wake <- struct{}{}
		} else {
			kept = append(kept, w)
		}
	}
	if len(kept) > 0 {
		kept[0].wake <- struct{}{}
		kept = kept[1:]
	}
	n := copy(sw.waiters, kept)
	clear(sw.waiters[n:])
	sw.waiters = sw.waiters[:n]
}

// sync fsyncs the current file if it has unsynced writes.
func (l *walWriter) sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncLocked()
}

// syncLocked is sync with syncMu held. A failed fsync is sticky: after
// one, the kernel may have dropped the dirty pages, so a later fsync that
// succeeds proves nothing.
func (l *walWriter) syncLocked() error {
	if l.syncErr != nil {
		return l.syncErr
	}
	// Every byte up to target is in the current file or an older one,
	// and older ones were synced when they were retired: the file cannot
	// change while syncMu is held.
	target := l.written.Load()
	f := &l.cur
	if l.synced.Load() >= target {
		return nil
	}
	if f.file == nil {
		// Writes the WAL can no longer sync: a waiter must hear of it
		// rather than wait for an fsync that cannot come.
		return fmt.Errorf("lsmgo: WAL sync: %w", ErrClosed)
	}
	if l.beforeSync != nil {
		// Every record below target was written after the blob bytes its
		// pointers refer to, so this covers them all.
		if err := l.beforeSync(); err != nil {
			l.syncErr = err
			return err
		}
	}
	if err := f.file.Sync(); err != nil {
		l.syncErr = &unknownStateError{fmt.Errorf("lsmgo: WAL sync %s: %w", f.name(), err)}
		return l.syncErr
	}
	l.synced.Store(target)
	l.m.walSyncs.Add(1)
	return nil
}

// syncEvery fsyncs the WAL every interval until stop is closed, under
// SyncInterval mode; a failed fsync goes to onErr.
func (l *walWriter) syncEvery(interval time.Duration, stop <-chan struct{}, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if err := l.sync(); err != nil {
			onErr(err)
		}
	}
}

// cutFailedWrite drops what a failed write may have left at the end of
// the current file: it cuts the file back to the end of the last write
// that succeeded and syncs it. The file may then be retired like any
// other; without the cut, a partial record followed by records in a newer
// WAL would be, to the next Open, damage in the middle of the log. A cut
// needs no free space. db.mu is held.
func (l *walWriter) cutFailedWrite() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.syncErr != nil {
		return l.syncErr
	}
	f := &l.cur
	end := l.written.Load()
	if err := vfs.Truncate(l.fs, l.fs.PathJoin(l.dir, f.name()), int64(end-f.base)); err != nil {
		return &unknownStateError{fmt.Errorf("lsmgo: cut the failed write off WAL %s: %w", f.name(), err)}
	}
	if err := f.file.Sync(); err != nil {
		l.syncErr = &unknownStateError{fmt.Errorf("lsmgo: WAL sync %s: %w", f.name(), err)}
		return l.syncErr
	}
	l.synced.Store(end)
	l.m.walSyncs.Add(1)
	return nil
}

// abandon replaces the current file with next without syncing it, and
// forgets a failed sync: for Resume, which has rotated every write the
// abandoned files hold into a memtable it flushes before any new write is
// admitted, so nothing depends on them any more. db.mu is held.
func (l *walWriter) abandon(next walFile) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.cur.file != nil {
		l.cur.close()
	}
	l.cur = next
	l.cur.base = l.written.Load()
	l.synced.Store(l.cur.base)
	l.syncErr = nil
}
