package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
	"github.com/lsmgo-dev/lsmgo/internal/compaction"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	dirname string
	opts    Options
	fs      vfs.FS
	lock    io.Closer

	vs         *manifest.VersionSet
	blockCache *cache.Cache
	tables     *tableCache
	sstStats   sstable.Stats
	picker     *compaction.Picker

	// visibleSeq is the sequence number readers read at: every write with a
	// smaller sequence number is fully applied to the memtable.
	visibleSeq atomic.Uint64
	closed     atomic.Bool

	// rs is the immutable bundle of memtables and version that reads use.
	// It is replaced only with db.mu held, but loaded without any lock
	// (loadReadState), so reads never wait behind a commit leader or a
	// file creation.
	rs atomic.Pointer[readState]

	// wal is the write-ahead log the commit pipeline writes.
	wal walWriter
	// blobs holds the values separated from the tree (ValueThreshold).
	blobs blobFiles
	// retain lists the WAL files kept after their flush (wal_retain.go).
	retain walRetention

	// pub orders the publication of committed batches: queue holds the
	// registered batches in sequence order, and visibleSeq moves past a
	// batch only when it and every batch before it are inserted.
	pub struct {
		mu    sync.Mutex
		cond  sync.Cond
		queue []*commitWriter
	}

	mu struct {
		sync.Mutex
		// cond is broadcast when a flush or compaction finishes, when a
		// background error is set and on close: the events stalled
		// writers and waiters in Flush/Compact/Close wait for.
		cond sync.Cond

		writers []*commitWriter // commit queue; writers[0] leads
		nextSeq base.SeqNum
		// walSeq is the sequence number after the last batch written to
		// the WAL: below nextSeq when a write failed for lack of space.
		// Close records it in the close marker (wal_close.go).
		walSeq base.SeqNum

		mem *memTable
		imm []*memTable // oldest first

		bgErr   error
		closing bool
		// flushNoSpace is the error of the last flush when it failed
		// for lack of space and waits to retry; nil once one succeeds.
		flushNoSpace error
		// flushBackoff and compactBackoff are the current retry delays
		// after a full disk (0: no failure streak); no compaction
		// starts before compactRetryAt.
		flushBackoff, compactBackoff time.Duration
		compactRetryAt               time.Time
		// retryNow cuts a no-space backoff short: set when the disk
		// seems to have room again.
		retryNow bool
		// lastNoSpace is when background work last failed for lack of
		// space.
		lastNoSpace time.Time
		// disk caches the filesystem's space for the reserve check.
		disk diskSpace
		// walFailed is set when a WAL write failed for lack of space:
		// the current WAL may end in a partial record, and the next
		// write must first cut it off and continue in a new file.
		walFailed error
		// visibleUnsynced is set when a batch committed with
		// CommitAsync failed its fsync after it was visible: Resume
		// then refuses (ErrVisibleWriteUnsynced).
		visibleUnsynced bool
		// asyncWalPos is the WAL position after the last batch
		// CommitAsync made visible before its fsync: while the WAL's
		// synced position is below it, such a batch's durability is
		// unknown after an error, and Resume refuses as above.
		asyncWalPos uint64
		flushing    bool
		compacting  int
		// started counts the compactions started since Open; running
		// maps each running one to its number, so that Compact can wait
		// for those whose compaction filter read an older state.
		started   uint64
		running   map[*compaction.Compaction]uint64
		snapshots snapshotList
		// nextMemID numbers memtables so Flush can wait for one.
		nextMemID uint64
		flushedID uint64
	}

	bgWG    sync.WaitGroup
	syncerC chan struct{}
	// trimC stops the goroutine that applies the WAL retention's age
	// bound between flushes (trimRetainedEvery).
	trimC chan struct{}

	// memPool recycles the arenas of flushed memtables.
	memPool memtablePool

	// damaged holds the names of the files noteCorruption has logged,
	// so each is logged once however often it is read.
	damaged sync.Map

	m dbMetrics
}

// Open opens the database in dir, creating it when it does not exist, and
// recovers every write the WAL holds. A nil opts means all defaults.
func Open(dir string, opts *Options) (*DB, error) {
	o := opts.withDefaults()
	db := &DB{dirname: dir, opts: o, fs: o.FS}
	db.memPool.size = o.MemTableSize
	var zeroChunk int64
	var mapShape walMap
	if o.Sync.kind == syncAlways {
		// A small memtable means a small WAL: a chunk of an eighth of
		// it keeps the zeros in proportion.
		zeroChunk = int64(min(max(o.MemTableSize/8, 4<<10), maxWALZeroChunk))
	} else {
		// Without an fsync per write the write(2) per commit is most of
		// a commit's cost; see doc/durability.md for why SyncAlways
		// keeps it.
		mapShape = newWALMapShape(o.MemTableSize, o.Sync)
	}
	db.wal.init(db.fs, dir, &db.m, zeroChunk, mapShape)
	// No WAL byte may become durable before the blob bytes its pointers
	// refer to: every WAL fsync is preceded by one of the blob files.
	db.wal.beforeSync = db.blobs.sync
	db.mu.cond.L = &db.mu.Mutex
	db.pub.cond.L = &db.pub.mu
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lsmgo: create %s: %w", dir, err)
	}
	// The directory's own entry lives in its parent: sync that too, or a
	// crash right after creating a DB could lose all of it.
	if err := syncDir(db.fs, filepath.Dir(dir)); err != nil {
		return nil, err
	}
	lock, err := db.fs.Lock(db.path(base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return nil, fmt.Errorf("lsmgo: open %s: %w", dir, err)
	}
	db.lock = lock
	if err := db.open(); err != nil {
		db.closeResources()
		return nil, err
	}
	return db, nil
}

func (db *DB) path(name string) string { return db.fs.PathJoin(db.dirname, name) }

// syncDir makes dir's entries durable.
func syncDir(fs vfs.FS, dir string) error {
	if err := vfs.SyncDir(fs, dir); err != nil {
		return fmt.Errorf("lsmgo: sync dir: %w", err)
	}
	return nil
}

func (db *DB) open() error {
	db.blobs.init(db.fs, db.dirname, &db.m, func() base.FileNum { return db.vs.NewFileNum() })
	db.blockCache = cache.New(db.opts.CacheSize)
	db.tables = newTableCache(db.fs, db.dirname, db.blockCache, &db.sstStats, db.opts.MapTables, db.opts.MapBudget)
	db.picker = compaction.NewPicker(db.compactionConfig())
	mopts := manifest.Options{
		FS:             db.fs,
		Dir:            db.dirname,
		OnObsoleteFile: db.deleteObsoleteTable,
	}
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return fmt.Errorf("lsmgo: list %s: %w", db.dirname, err)
	}
	d := classifyDir(names)
	switch {
	case d.current:
		db.vs, err = manifest.Load(mopts)
	case d.data:
		return base.Corruptf(db.path("CURRENT"), -1, "missing, but the directory holds tables or logs")
	default:
		// A crash during the first Open can leave a MANIFEST without CURRENT;
		// Create starts over and the stray file is removed below.
		db.vs, err = manifest.Create(mopts)
	}
	if err != nil {
		return err
	}
	db.blobs.liveInTables = db.vs.LiveBlobFiles
	db.blobs.targetSize = blobTargetFileSize(db.opts.MemTableSize)
	if db.opts.blobFileSize > 0 {
		db.blobs.targetSize = db.opts.blobFileSize
	}
	db.blobs.logger = db.opts.Logger
	db.blobs.addExisting(names)
	db.loadRetained(names)
	if err := db.recover(names); err != nil {
		return err
	}
	db.removeObsoleteFiles()
	// After the cleanup, which would delete the temporary file. The file
	// is a record for people and Check, not needed to open: on a full
	// disk Open goes on without it (the previous one, if any, stays
	// whole).
	if err := writeOptionsFile(db.fs, db.dirname, db.vs.NewFileNum(), db.opts.settings()); err != nil {
		db.opts.Logger.Warn(optionsNotWritten, "err", err)
	}
	// Now every pointer is in a table of the current version: blob files
	// none points into are the active file of an earlier run whose
	// records were lost, or outputs of an interrupted compaction.
	db.blobs.startRemoving()
	if db.opts.Sync.kind == syncInterval {
		db.syncerC = make(chan struct{})
		db.bgWG.Add(1)
		go func() {
			defer db.bgWG.Done()
			db.wal.syncEvery(db.opts.Sync.interval, db.syncerC, func(err error) {
				db.mu.Lock()
				db.setBackgroundErrorLocked(err)
				db.mu.Unlock()
			})
		}()
	}
	db.trimC = make(chan struct{})
	db.bgWG.Add(1)
	go db.trimRetainedEvery(db.trimC)
	// Background work starts only now: removeObsoleteFiles must not
	// see the tables it is writing. Memtables are queued when Open
	// replayed WALs it had no room to flush.
	db.mu.Lock()
	db.maybeScheduleFlushLocked()
	db.maybeScheduleCompaction()
	db.mu.Unlock()
	return nil
}

func (db *DB) compactionConfig() compaction.Config {
	return compaction.Config{
		L0CompactionThreshold: db.opts.L0CompactionThreshold,
		LBaseMaxBytes:         db.opts.LBaseMaxBytes,
		LevelMultiplier:       db.opts.LevelMultiplier,
		TargetFileSize:        db.opts.TargetFileSize,
	}
}

// dirContents says which kinds of DB files a directory listing holds.
type dirContents struct {
	current, manifest, lock bool
	// data is true when tables or WALs are present: a DB that has held
	// writes, which must not be mistaken for an empty directory.
	data bool
}

func classifyDir(names []string) dirContents {
	var d dirContents
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		switch {
		case !ok:
		case t == base.FileTypeCurrent:
			d.current = true
		case t == base.FileTypeManifest:
			d.manifest = true
		case t == base.FileTypeLock:
			d.lock = true
		case t == base.FileTypeLog || t == base.FileTypeTable:
			d.data = true
		}
	}
	return d
}

// Get returns a copy of the value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	v, _, err := db.GetWithExpiry(key)
	return v, err
}

// GetWithExpiry returns a copy of the value of key and its expiry time (the
// zero time when it has none), or ErrNotFound.
func (db *DB) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if db.closed.Load() {
		return nil, time.Time{}, ErrClosed
	}
	return db.get(nil, key, readSeqLatest)
}

// GetAppend appends the value of key to dst and returns the extended
// slice, or dst and ErrNotFound. It is Get for a caller that reads many
// values into one buffer: a dst with room for the value costs no
// allocation, and a value stored in a blob file is read from the file
// straight into dst (Get reads it into a fresh slice of its own, which
// for a 100 KiB value costs the allocation, its zeroing, and the garbage
// collector's time). dst may be nil.
func (db *DB) GetAppend(dst, key []byte) ([]byte, error) {
	if db.closed.Load() {
		return dst, ErrClosed
	}
	v, _, err := db.get(dst, key, readSeqLatest)
	if err != nil {
		return dst, err
	}
	return v, nil
}

// get appends the value of key at readSeq to dst (see getIn).
func (db *DB) get(dst, key []byte, readSeq base.SeqNum) ([]byte, time.Time, error) {
	rs, readSeq, err := db.loadReadStateAt(readSeq)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rs.unref()
	return db.getIn(rs, dst, key, readSeq)
}

// getIn reads key at readSeq from the pinned read state rs. The value is
// appended to dst, or with a nil dst returned as a copy the caller owns.
func (db *DB) getIn(rs *readState, dst, key []byte, readSeq base.SeqNum) ([]byte, time.Time, error) {
	value, kind, found, blk, err := rs.get(db, key, readSeq)
	if err != nil {
		db.noteCorruption(err)
		return nil, time.Time{}, err
	}
	if !found {
		return nil, time.Time{}, ErrNotFound
	}
	v, expireAt, err := db.resolveValue(dst, kind, value)
	if blk != nil {
		blk.Release()
	}
	return v, expireAt, err
}

// resolveValue turns a found entry into what a reader sees: ErrNotFound
// for tombstones and expired entries, otherwise the user value and its
// expiry. value aliases memory the DB recycles (an arena or a block), so
// the user value is appended to dst, or with a nil dst copied into (or
// read from its blob file into) a new slice.
func (db *DB) resolveValue(dst []byte, kind base.Kind, value []byte) ([]byte, time.Time, error) {
	value, expireAt, err := db.liveValue(kind, value)
	if err != nil {
		return nil, time.Time{}, err
	}
	if kind.IsBlob() {
		v, err := db.blobs.read(dst, value)
		return v, expireAt, err
	}
	if dst == nil {
		dst = make([]byte, 0, len(value))
	}
	return append(dst, value...), expireAt, nil
}

// liveValue returns a found entry's value without its expiry, and the
// expiry: ErrNotFound for a tombstone or an entry that has expired.
func (db *DB) liveValue(kind base.Kind, value []byte) ([]byte, time.Time, error) {
	if kind == base.KindDelete {
		return nil, time.Time{}, ErrNotFound
	}
	if !kind.HasExpiry() {
		return value, time.Time{}, nil
	}
	ms, v, ok := base.DecodeExpiryValue(value)
	if !ok {
		return nil, time.Time{}, base.Corruptf("", -1, "expiring value of %d bytes is shorter than its expiry", len(value))
	}
	if ms <= db.opts.Now().UnixMilli() {
		return nil, time.Time{}, ErrNotFound
	}
	return v, time.UnixMilli(ms), nil
}

// Set writes key=value. A key and value over MaxEntrySize together are
// refused with an error matching ErrValueTooLarge, and nothing is written;
// the same holds for SetWithExpiry and Delete.
func (db *DB) Set(key, value []byte, wo *WriteOptions) error {
	b := db.getBatch()
	b.Set(key, value)
	return db.applyPooled(b, wo)
}

// SetWithExpiry writes key=value that reads as absent from expireAt on;
// compaction removes it some time after.
func (db *DB) SetWithExpiry(key, value []byte, expireAt time.Time, wo *WriteOptions) error {
	b := db.getBatch()
	b.SetWithExpiry(key, value, expireAt)
	return db.applyPooled(b, wo)
}

// Delete removes key. Deleting an absent key is not an error.
func (db *DB) Delete(key []byte, wo *WriteOptions) error {
	b := db.getBatch()
	b.Delete(key)
	return db.applyPooled(b, wo)
}

// batchPool recycles the one-write batches of Set and Delete: the commit
// path copies a batch into the WAL buffer and the memtable, so nothing
// refers to it once Apply returns. A value they separate is not even
// copied (Batch.alias): Apply writes it from the caller's slice.
var batchPool = sync.Pool{New: func() any { return &Batch{repr: batchrepr.New()} }}

// maxPooledBatch keeps a rare huge value from pinning its buffer forever.
const maxPooledBatch = 64 << 10

func (db *DB) getBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.Reset()
	b.threshold, b.alias = db.opts.ValueThreshold, true
	return b
}

func (db *DB) applyPooled(b *Batch, wo *WriteOptions) error {
	err := db.Apply(b, wo)
	// Drop the references to the caller's values before anyone else can
	// get the batch.
	b.Reset()
	if cap(b.repr) <= maxPooledBatch {
		batchPool.Put(b)
	}
	return err
}

// Flush writes the memtable to an L0 table and waits until every write
// acknowledged before the call is in a table.
func (db *DB) Flush() error {
	if db.closed.Load() {
		return ErrClosed
	}
	w := &commitWriter{rotate: true}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.enqueueLocked(w)
	if w.err != nil {
		return w.err
	}
	// A flush that failed for lack of space goes on retrying in the
	// background, but Flush returns rather than wait for an operator.
	for db.mu.flushedID < w.rotatedID && db.mu.bgErr == nil && !db.mu.closing {
		if db.mu.flushNoSpace != nil && !db.spaceBackLocked() {
			break
		}
		db.maybeScheduleFlushLocked()
		db.mu.cond.Wait()
	}
	switch {
	case db.mu.flushedID >= w.rotatedID:
		return nil
	case db.mu.bgErr != nil:
		return db.mu.bgErr
	case db.mu.flushNoSpace != nil:
		return &noSpaceError{fmt.Errorf("flush will be retried: %w", db.mu.flushNoSpace)}
	}
	return ErrClosed
}

// Compact flushes the memtable, then compacts every table overlapping the
// user-key range [start, end] (nil means unbounded) down level by level,
// dropping overwritten versions, tombstones and expired entries that no
// snapshot needs. With a compaction filter (Options.NewCompactionFilter)
// it then also rewrites each table of the last level in the range that
// it has not rewritten yet, so that the filter sees every entry of the
// range. It returns when done.
func (db *DB) Compact(start, end []byte) error {
	if err := db.Flush(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	var unseen map[base.FileNum]bool
	if db.opts.NewCompactionFilter != nil {
		// A compaction running now may have started its filter from a
		// state older than the caller's last write, and its outputs would
		// then count as seen; wait for it to finish first.
		for last := db.mu.started; db.runningSinceLocked(last) && db.mu.bgErr == nil && !db.closed.Load(); {
			db.mu.cond.Wait()
		}
		unseen = make(map[base.FileNum]bool)
		for _, f := range db.rs.Load().version.Overlaps(manifest.NumLevels-1, start, end) {
			unseen[f.FileNum] = true
		}
	}
	for level := 0; level < manifest.NumLevels-1; level++ {
		for {
			if db.mu.bgErr != nil {
				return db.mu.bgErr
			}
			if db.closed.Load() {
				return ErrClosed
			}
			v := db.rs.Load().version
			if len(v.Overlaps(level, start, end)) == 0 {
				break
			}
			c := db.picker.PickManual(v, level, start, end)
			if c == nil {
				// Background work holds a file we need; wait for it.
				db.mu.cond.Wait()
				continue
			}
			if err := db.runManualLocked(c); err != nil {
				return err
			}
			break
		}
	}
	return db.rewriteUnseenLocked(start, end, unseen)
}

// rewriteUnseenLocked rewrites in place, one at a time, the tables of the
// last level overlapping [start, end] whose numbers are in unseen: tables
// that no compaction of the Compact call took as input, and that the
// compaction filter has therefore not seen. A table another compaction
// holds is waited for; if that compaction replaced it, its filter has
// seen it. db.mu is held.
func (db *DB) rewriteUnseenLocked(start, end []byte, unseen map[base.FileNum]bool) error {
	for len(unseen) > 0 {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.closed.Load() {
			return ErrClosed
		}
		v := db.rs.Load().version
		var f *manifest.FileMetadata
		busy := false
		for _, g := range v.Overlaps(manifest.NumLevels-1, start, end) {
			switch {
			case !unseen[g.FileNum]:
			case g.Compacting:
				busy = true
			case f == nil:
				f = g
			}
		}
		if f == nil {
			if !busy {
				return nil
			}
			db.mu.cond.Wait()
			continue
		}
		delete(unseen, f.FileNum)
		if err := db.runManualLocked(compaction.InPlace(v, manifest.NumLevels-1, f)); err != nil {
			return err
		}
	}
	return nil
}

// runningSinceLocked reports whether a compaction numbered n or lower is
// still running. db.mu is held.
func (db *DB) runningSinceLocked(n uint64) bool {
	for _, m := range db.mu.running {
		if m <= n {
			return true
		}
	}
	return false
}

// runManualLocked runs c, a compaction Compact asked for, with db.mu
// released meanwhile. db.mu is held.
func (db *DB) runManualLocked(c *compaction.Compaction) error {
	db.startCompactionLocked(c)
	db.mu.Unlock()
	err := db.runCompaction(c, nil)
	db.mu.Lock()
	db.finishCompactionLocked(c, err)
	if retryable(err) {
		return &noSpaceError{fmt.Errorf("compaction postponed: %w", err)}
	}
	return err
}

// noteCorruption counts a read or compaction that met damaged data and
// logs it at ERROR the first time for each file: the caller gets the error
// for its own key or range only, and the operator must hear of it
// (doc/operations.md, "A damaged table").
func (db *DB) noteCorruption(err error) {
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return
	}
	db.m.corruptions.Add(1)
	if _, seen := db.damaged.LoadOrStore(ce.File, true); !seen {
		db.opts.Logger.Error("lsmgo: damaged data; reads of it fail, and a compaction that meets it makes the DB read-only: stop the DB and run lsmgo repair (doc/operations.md)",
			"dir", db.dirname, "file", ce.File, "err", err)
	}
}

// setBackgroundError makes the DB read-only; mu must be held.
func (db *DB) setBackgroundErrorLocked(err error) {
	if db.mu.bgErr == nil {
		db.mu.bgErr = &backgroundError{cause: err}
		db.opts.Logger.Error("lsmgo: background error; the DB is now read-only", "dir", db.dirname, "err", err)
		db.m.backgroundErrors.Add(1)
	}
	db.mu.cond.Broadcast()
}

// Close waits for background work, syncs the WAL and releases the
// directory. Iterators and snapshots still open are reported to the logger.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	db.mu.Lock()
	db.mu.closing = true
	db.mu.cond.Broadcast()
	for len(db.mu.writers) > 0 || db.mu.flushing || db.mu.compacting > 0 {
		db.mu.cond.Wait()
	}
	db.mu.Unlock()
	db.waitPublished()
	db.mu.Lock()
	if n := db.mu.snapshots.count(); n > 0 {
		db.opts.Logger.Warn("lsmgo: Close with open snapshots", "count", n)
	}
	err := db.mu.bgErr
	db.mu.Unlock()
	if db.syncerC != nil {
		close(db.syncerC)
	}
	close(db.trimC)
	db.bgWG.Wait()
	if n := db.m.openIters.Load(); n > 0 {
		db.opts.Logger.Warn("lsmgo: Close with open iterators", "count", n)
	}
	db.mu.Lock()
	cerr := db.wal.close(db.mu.bgErr != nil)
	// A WAL that may end in part of a failed write is not whole.
	whole := cerr == nil && db.mu.bgErr == nil && db.mu.walFailed == nil
	walSeq := db.mu.walSeq
	db.mu.Unlock()
	if cerr != nil && err == nil {
		err = cerr
	}
	if whole {
		db.markWALClosed(walSeq)
	}
	if cerr := db.closeResources(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, ErrReadOnly) {
		// The sticky error was already returned to writers; closing a
		// read-only DB is not itself a failure.
		err = nil
	}
	return err
}

// closeResources releases everything Open acquired, in reverse order.
func (db *DB) closeResources() error {
	var err error
	// db.mu keeps a concurrent Metrics away while the read state and the
	// memtables go. The memtable list's references go too: a memtable an
	// open iterator still reads is freed when that iterator closes.
	// Memtables not flushed release their pins below, but their WALs
	// still point into the blob files: nothing is deleted from here on.
	db.blobs.stopRemoving()
	db.mu.Lock()
	if rs := db.rs.Swap(nil); rs != nil {
		rs.unref()
	}
	if db.mu.mem != nil {
		db.mu.mem.unref()
		db.mu.mem = nil
	}
	for _, m := range db.mu.imm {
		m.unref()
	}
	db.mu.imm = nil
	db.mu.Unlock()
	db.memPool.close()
	// After the WAL's last sync, which synced the blob files first.
	err = errors.Join(err, db.blobs.close())
	if db.tables != nil {
		err = errors.Join(err, db.tables.close())
	}
	if db.vs != nil {
		err = errors.Join(err, db.vs.Close())
	}
	if db.lock != nil {
		err = errors.Join(err, db.lock.Close())
	}
	return err
}
