package lsmgo

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/compaction"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// dbMetrics are the DB's own counters; each DB has its own, never global.
type dbMetrics struct {
	commits, commitGroups         atomic.Int64
	walBytes, walSyncs            atomic.Int64
	walRecoveryDropped            atomic.Int64
	walRecoveryLost               atomic.Int64
	flushes, flushBytes           atomic.Int64
	compactions, moves            atomic.Int64
	compactRead, compactWritten   atomic.Int64
	filtered                      atomic.Int64
	stalls, stallNanos, slowdowns atomic.Int64
	backgroundErrors              atomic.Int64
	noSpaceRetries, noSpaceWrites atomic.Int64
	corruptions                   atomic.Int64
	openIters                     atomic.Int64

	blobFilesCreated, blobSyncs         atomic.Int64
	blobBytesWritten, blobValuesWritten atomic.Int64
	blobReads, blobFilesDeleted         atomic.Int64
	blobGCRuns, blobGCValues            atomic.Int64
	blobGCBytes, blobValuesVerified     atomic.Int64
}

// LevelMetrics describes one level of the LSM tree.
type LevelMetrics struct {
	Files int
	Bytes uint64
	// Score is the compaction urgency: >= 1 means the level is over its
	// target and will be compacted.
	Score float64
}

// Metrics is a point-in-time report of a DB's state and counters. String
// prints it as a table for logs and bug reports.
type Metrics struct {
	MemTables struct {
		// Count includes the mutable memtable and those queued for flush.
		Count int
		Bytes int64
	}
	Levels [manifest.NumLevels]LevelMetrics
	WAL    struct {
		Bytes, Syncs int64
		// RecoveryDroppedBytes counts the WAL bytes that Open discarded:
		// torn tails and everything from a damaged record on (see
		// Options.StrictWALRecovery). Nonzero only after a crash.
		RecoveryDroppedBytes int64
		// RecoveryLostEntries counts the entries (sequence numbers)
		// Open dropped that were not a torn tail of the last WAL: intact
		// records after damage, and what a close marker proves lost from
		// a WAL cut short (doc/durability.md, "Lost records"). Open logs
		// each at ERROR; nonzero means data was lost or damaged.
		RecoveryLostEntries int64
		// RetainedFiles are the WAL files kept after their flush
		// (Options.WALRetainSize). RetainedBytes is the disk they take:
		// their size and that of the blob files only they keep (no
		// table points into those any more), RetainedBlobBytes.
		RetainedFiles                    int
		RetainedBytes, RetainedBlobBytes int64
	}
	Commits struct {
		// Batches is the number of committed batches; Groups the number
		// of commit groups they formed (Batches/Groups is the group
		// commit factor).
		Batches, Groups int64
	}
	Flush struct {
		Count, BytesWritten int64
	}
	Compaction struct {
		// Count excludes Moves, which relink a file to the next level
		// without rewriting it.
		Count, Moves, BytesRead, BytesWritten int64
		Running                               int
		// Filtered counts the entries that flushes and compactions
		// turned into deletions because the CompactionFilter said so.
		Filtered int64
	}
	Stall struct {
		// Count and Duration are writes that waited for flush or
		// compaction; Slowdowns commit groups delayed by a millisecond.
		Count     int64
		Duration  time.Duration
		Slowdowns int64
	}
	Cache struct {
		Hits, Misses, Bytes, Blocks int64
	}
	Bloom struct {
		// Negatives are table reads the filter avoided.
		Negatives, Positives int64
	}
	Disk struct {
		// Free and Total are the bytes of the filesystem that holds the
		// DB; both 0 when the FS cannot tell (see vfs.DiskUsager).
		Free, Total uint64
		// NoSpaceRetries counts flushes and compactions that failed for
		// lack of space and were retried; NoSpaceWrites the writes
		// refused with ErrNoSpace.
		NoSpaceRetries, NoSpaceWrites int64
		// WritesRefused says why writes fail now, or may fail at the
		// next write; empty when nothing stands in their way.
		WritesRefused string
	}
	// Blob describes value separation (Options.ValueThreshold) since Open.
	Blob struct {
		// Files and Bytes are the blob files on disk and their size;
		// ReferencedBytes the bytes of the records (header, key and
		// value) the current version's tables point to in them (an
		// upper bound of the live bytes: versions no compaction has
		// dropped yet count too). Bytes - ReferencedBytes is what
		// garbage collection may reclaim, less the file headers.
		Files                  int
		Bytes, ReferencedBytes int64
		// FilesCreated counts the blob files started; ValuesWritten and
		// BytesWritten the values appended to them and the bytes that
		// took, record headers and keys included.
		FilesCreated, ValuesWritten, BytesWritten int64
		// Syncs counts blob file fsyncs; Reads the values read back;
		// FilesDeleted the blob files removed once nothing pointed
		// into them.
		Syncs, Reads, FilesDeleted int64
		// GCRuns counts the compactions that copied values out of blob
		// files below Options.BlobGCThreshold; GCValues and GCBytes the
		// values they copied.
		GCRuns, GCValues, GCBytes int64
		// Verified counts the values ValueReaders checked against their
		// checksums before reading them in place (each once while the
		// DB remembers it: see ValueReader).
		Verified int64
	}
	Snapshots        int
	Iterators        int64
	BackgroundErrors int64
	// Corruptions counts reads and compactions that met damaged data
	// (each is also logged, once per file).
	Corruptions int64
	// ReadOnly is set after a background error.
	ReadOnly bool
	// VisibleSeq is the sequence number new reads use.
	VisibleSeq uint64
}

// WriteAmplification is the bytes written to disk per byte the user
// wrote, counting as the latter what reached the WAL and the blob files
// (each user byte goes to exactly one of them once): how many times each
// byte the user wrote was written on disk.
func (m *Metrics) WriteAmplification() float64 {
	user := m.WAL.Bytes + m.Blob.BytesWritten
	if user == 0 {
		return 0
	}
	return float64(user+m.Flush.BytesWritten+m.Compaction.BytesWritten) / float64(user)
}

// Metrics returns the DB's current metrics.
func (db *DB) Metrics() *Metrics {
	m := &Metrics{}
	db.mu.Lock()
	if db.rs.Load() == nil {
		// Closed: nothing is left to measure.
		db.mu.Unlock()
		return m
	}
	m.MemTables.Count = 1 + len(db.mu.imm)
	m.MemTables.Bytes = int64(db.mu.mem.mt.Size())
	for _, im := range db.mu.imm {
		m.MemTables.Bytes += int64(im.mt.Size())
	}
	m.Compaction.Running = db.mu.compacting
	m.Snapshots = db.mu.snapshots.count()
	m.ReadOnly = db.mu.bgErr != nil
	switch {
	case db.mu.bgErr != nil:
		m.Disk.WritesRefused = db.mu.bgErr.Error() + " (call Resume)"
	case db.mu.walFailed != nil:
		m.Disk.WritesRefused = "disk full: the last WAL write failed; the next write retries"
	case db.mu.flushNoSpace != nil:
		m.Disk.WritesRefused = "disk full: flushes fail and are retried; writes are refused once memtables pile up"
	}
	v := db.rs.Load().version
	for _, files := range v.Files {
		for _, f := range files {
			for _, r := range f.BlobRefs {
				m.Blob.ReferencedBytes += int64(r.Bytes)
			}
		}
	}
	scores := compaction.Scores(v, db.compactionConfig())
	for level := range m.Levels {
		m.Levels[level] = LevelMetrics{Files: len(v.Files[level]), Bytes: v.LevelSize(level), Score: scores[level]}
	}
	db.mu.Unlock()

	m.WAL.Bytes, m.WAL.Syncs = db.m.walBytes.Load(), db.m.walSyncs.Load()
	m.WAL.RecoveryDroppedBytes = db.m.walRecoveryDropped.Load()
	m.WAL.RecoveryLostEntries = db.m.walRecoveryLost.Load()
	m.WAL.RetainedFiles, m.WAL.RetainedBytes, m.WAL.RetainedBlobBytes = db.retainedWALStats()
	m.Commits.Batches, m.Commits.Groups = db.m.commits.Load(), db.m.commitGroups.Load()
	m.Flush.Count, m.Flush.BytesWritten = db.m.flushes.Load(), db.m.flushBytes.Load()
	m.Compaction.Count, m.Compaction.Moves = db.m.compactions.Load(), db.m.moves.Load()
	m.Compaction.BytesRead, m.Compaction.BytesWritten = db.m.compactRead.Load(), db.m.compactWritten.Load()
	m.Compaction.Filtered = db.m.filtered.Load()
	m.Stall.Count, m.Stall.Duration, m.Stall.Slowdowns = db.m.stalls.Load(), time.Duration(db.m.stallNanos.Load()), db.m.slowdowns.Load()
	m.Cache.Hits, m.Cache.Misses, m.Cache.Bytes, m.Cache.Blocks = db.blockCache.Metrics()
	m.Bloom.Negatives, m.Bloom.Positives = db.sstStats.BloomNegatives.Load(), db.sstStats.BloomPositives.Load()
	m.Blob.FilesCreated, m.Blob.ValuesWritten = db.m.blobFilesCreated.Load(), db.m.blobValuesWritten.Load()
	m.Blob.BytesWritten, m.Blob.Syncs, m.Blob.Reads = db.m.blobBytesWritten.Load(), db.m.blobSyncs.Load(), db.m.blobReads.Load()
	m.Blob.FilesDeleted, m.Blob.Verified = db.m.blobFilesDeleted.Load(), db.m.blobValuesVerified.Load()
	m.Blob.Files, m.Blob.Bytes = db.blobs.diskUsage()
	m.Blob.GCRuns, m.Blob.GCValues, m.Blob.GCBytes = db.m.blobGCRuns.Load(), db.m.blobGCValues.Load(), db.m.blobGCBytes.Load()
	m.Iterators = db.m.openIters.Load()
	m.BackgroundErrors = db.m.backgroundErrors.Load()
	m.Corruptions = db.m.corruptions.Load()
	m.Disk.Free, m.Disk.Total, _ = vfs.DiskUsage(db.fs, db.dirname)
	m.Disk.NoSpaceRetries, m.Disk.NoSpaceWrites = db.m.noSpaceRetries.Load(), db.m.noSpaceWrites.Load()
	m.VisibleSeq = db.visibleSeq.Load()
	return m
}

// String formats the metrics as a table.
func (m *Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level  files        size  score\n")
	var files int
	var size uint64
	for level, l := range m.Levels {
		fmt.Fprintf(&b, "%5d  %5d  %10s  %5.2f\n", level, l.Files, humanBytes(int64(l.Bytes)), l.Score)
		files += l.Files
		size += l.Bytes
	}
	fmt.Fprintf(&b, "total  %5d  %10s\n", files, humanBytes(int64(size)))
	fmt.Fprintf(&b, "memtables: %d (%s)\n", m.MemTables.Count, humanBytes(m.MemTables.Bytes))
	fmt.Fprintf(&b, "wal: %s written, %d syncs, %s dropped by recovery; commits: %d batches in %d groups\n",
		humanBytes(m.WAL.Bytes), m.WAL.Syncs, humanBytes(m.WAL.RecoveryDroppedBytes), m.Commits.Batches, m.Commits.Groups)
	fmt.Fprintf(&b, "flush: %d (%s); compactions: %d + %d moves, %d running, read %s, wrote %s, filtered %d; write-amp %.2f\n",
		m.Flush.Count, humanBytes(m.Flush.BytesWritten), m.Compaction.Count, m.Compaction.Moves, m.Compaction.Running,
		humanBytes(m.Compaction.BytesRead), humanBytes(m.Compaction.BytesWritten), m.Compaction.Filtered, m.WriteAmplification())
	fmt.Fprintf(&b, "stalls: %d (%s), slowdowns: %d\n", m.Stall.Count, m.Stall.Duration, m.Stall.Slowdowns)
	fmt.Fprintf(&b, "cache: %d hits, %d misses, %s in %d blocks; bloom: %d negatives, %d positives\n",
		m.Cache.Hits, m.Cache.Misses, humanBytes(m.Cache.Bytes), m.Cache.Blocks, m.Bloom.Negatives, m.Bloom.Positives)
	fmt.Fprintf(&b, "blobs: %d files, %s, %s referenced; ", m.Blob.Files, humanBytes(m.Blob.Bytes), humanBytes(m.Blob.ReferencedBytes))
	fmt.Fprintf(&b, "%d files created, %d deleted, %d values (%s) written, %d syncs, %d reads; gc: %d runs copied %d values (%s)\n",
		m.Blob.FilesCreated, m.Blob.FilesDeleted, m.Blob.ValuesWritten, humanBytes(m.Blob.BytesWritten), m.Blob.Syncs, m.Blob.Reads,
		m.Blob.GCRuns, m.Blob.GCValues, humanBytes(m.Blob.GCBytes))
	fmt.Fprintf(&b, "snapshots: %d, iterators: %d, background errors: %d, corruptions: %d, read-only: %t\n",
		m.Snapshots, m.Iterators, m.BackgroundErrors, m.Corruptions, m.ReadOnly)
	fmt.Fprintf(&b, "disk: %s free of %s; no-space retries: %d, writes refused: %d",
		humanBytes(int64(m.Disk.Free)), humanBytes(int64(m.Disk.Total)), m.Disk.NoSpaceRetries, m.Disk.NoSpaceWrites)
	if m.Disk.WritesRefused != "" {
		fmt.Fprintf(&b, " (now: %s)", m.Disk.WritesRefused)
	}
	b.WriteString("\n")
	return b.String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
