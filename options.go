package lsmgo

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Defaults used for every zero field of Options. A nil *Options means all
// defaults.
const (
	DefaultMemTableSize                = 32 << 20
	DefaultMemTableStopWritesThreshold = 4
	DefaultL0CompactionThreshold       = 4
	DefaultL0SlowdownWritesThreshold   = 12
	DefaultL0StopWritesThreshold       = 20
	DefaultLBaseMaxBytes               = 64 << 20
	DefaultLevelMultiplier             = 10
	DefaultTargetFileSize              = 8 << 20
	DefaultBlockSize                   = 2 << 10
	DefaultBloomBitsPerKey             = 10
	DefaultCacheSize                   = 64 << 20
	DefaultSyncInterval                = time.Second
	DefaultBlobGCThreshold             = 0.5
	DefaultValueThreshold              = 4 << 10
)

// Compression selects how table blocks are compressed.
type Compression int

// Compression algorithms.
const (
	// SnappyCompression is fast and the default.
	SnappyCompression Compression = iota
	// NoCompression stores blocks as they are.
	NoCompression
	// ZstdCompression trades CPU for a smaller footprint.
	ZstdCompression
)

// String names the algorithm.
func (c Compression) String() string { return c.sstableCompression().String() }

// sstableCompression is the one mapping from the public enum to the type
// byte tables store (internal/sstable, doc/format.md). The numberings
// differ on purpose: the public one starts at Snappy so that the zero
// Options means the default, the stored one is fixed by the file format.
// A value outside the declared ones means the default, as zero does.
func (c Compression) sstableCompression() sstable.Compression {
	switch c {
	case NoCompression:
		return sstable.NoCompression
	case ZstdCompression:
		return sstable.ZstdCompression
	}
	return sstable.SnappyCompression
}

// SyncMode says when the write-ahead log is fsynced. Every mode hands each
// acknowledged write to the operating system (one write(2) per commit
// group) before the write returns, so a crash of the process alone
// (kill -9) never loses an acknowledged write; the modes differ in what a
// power loss or kernel crash may lose. doc/durability.md has the details.
type SyncMode struct {
	interval time.Duration
	kind     syncKind
}

type syncKind uint8

const (
	syncAlways syncKind = iota
	syncInterval
	syncNone
)

var (
	// SyncAlways fsyncs the WAL before any write returns. Concurrent
	// writers share fsyncs (group commit). Nothing acknowledged is ever
	// lost. This is the default.
	SyncAlways = SyncMode{kind: syncAlways}
	// SyncNone never fsyncs the WAL on the write path; the WAL is fsynced
	// only when a memtable is rotated and on Close. A power loss may lose
	// any write since the last rotation.
	SyncNone = SyncMode{kind: syncNone}
)

// SyncInterval fsyncs the WAL from a background goroutine every d (Redis'
// appendfsync everysec). A power loss may lose the writes of the last d
// (plus the duration of one fsync); a process crash loses nothing.
func SyncInterval(d time.Duration) SyncMode {
	if d <= 0 {
		d = DefaultSyncInterval
	}
	return SyncMode{kind: syncInterval, interval: d}
}

// String names the mode.
func (m SyncMode) String() string {
	switch m.kind {
	case syncInterval:
		return fmt.Sprintf("interval(%s)", m.interval)
	case syncNone:
		return "none"
	}
	return "always"
}

// Options configures a DB. The zero value of every field means its default.
type Options struct {
	// FS is the filesystem; default vfs.Default.
	FS vfs.FS
	// Logger receives background events and warnings; default slog.Default().
	Logger *slog.Logger
	// Sync is the WAL sync mode; default SyncAlways.
	Sync SyncMode
	// MemTableSize is the capacity of one memtable in bytes; default 32 MiB.
	// Memtables of this size live in memory mapped outside the Go heap,
	// and a flushed one is kept for reuse: budget (MemTableStopWritesThreshold
	// + 1) × MemTableSize for them, plus CacheSize for the block cache.
	MemTableSize int
	// MemTableStopWritesThreshold is how many memtables (the mutable one
	// plus those waiting to be flushed) may exist before writes stall;
	// default 4.
	MemTableStopWritesThreshold int
	// L0CompactionThreshold is the L0 file count that triggers an L0
	// compaction; default 4.
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the L0 file count at which each commit
	// group is delayed by a millisecond; default 12.
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold is the L0 file count at which writes wait for
	// compaction; default 20.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the target size of L1; default 64 MiB.
	LBaseMaxBytes int64
	// LevelMultiplier is the size ratio between adjacent levels; default 10.
	LevelMultiplier int
	// TargetFileSize is the size at which compaction cuts output tables;
	// default 8 MiB.
	TargetFileSize int64
	// BlockSize is the uncompressed size of a table data block; default 2
	// KiB. A point read decodes one whole block, so the block size is
	// most of what a read from a mapped table costs: with 1M keys, every
	// table mapped, CPU per point read was 4.9, 3.7 and 3.3 µs at 4, 2 and
	// 1 KiB (BenchmarkReadRandom); 1 KiB quadruples the index held in
	// memory and compresses worse, for the last tenth.
	BlockSize int
	// BloomBitsPerKey sizes each table's bloom filter; default 10 (about 1%
	// false positives). Negative disables filters.
	BloomBitsPerKey int
	// Compression of table blocks; default SnappyCompression.
	Compression Compression
	// CacheSize is the block cache budget in bytes; default 64 MiB.
	// Negative disables the cache.
	CacheSize int64
	// MapTables reads every table through a read-only memory mapping of
	// its file, as MapBudget does for the tables within its budget,
	// instead of pread(2) through the block cache. The cost is memory the
	// process is charged for: every page of a table that a read has
	// touched counts in its resident set (RSS) until the table is
	// deleted, up to the size of the tables on disk, although the kernel
	// may reclaim those pages like any page cache. Off by default. An I/O
	// error on a mapped page is returned as an error, like a failed read.
	MapTables bool
	// MapBudget bounds, when MapTables is off, the bytes of table files
	// read through mappings instead of pread(2): tables are mapped as they
	// are opened while the sizes of the mapped ones add up to at most
	// this, and the rest are read with pread through the block cache. A
	// mapped table's blocks are decoded straight from the mapping and
	// enter the block cache only when read twice in a row (a hot block):
	// its pages are the page cache's, which a pread table uses just the
	// same, only counted in this process's resident set, and the kernel
	// can reclaim them; a decoded copy of every block read would hold the
	// bytes a second time, uncompressed, on the Go heap, whose collector
	// lets it grow to about twice what is live.
	// Default 2×CacheSize (128 MiB at the default cache); negative maps
	// nothing. With 1M keys (~110 MB of tables) every table is then
	// mapped, and a uniform point read costs 3.7 µs of CPU against 9.5 µs
	// read by pread through a 64 MiB cache (BenchmarkReadRandom).
	MapBudget int64
	// MaxConcurrentCompactions bounds the compaction worker pool; default
	// min(2, GOMAXPROCS). Flushes run on their own goroutine.
	MaxConcurrentCompactions int
	// Now is the clock used for TTL expiry; default time.Now.
	Now func() time.Time
	// StrictWALRecovery makes Open refuse, with an error matching
	// ErrCorruption that names the file and offset, a newest WAL in which
	// damage is followed by intact records. By default Open keeps every
	// record before the damage and drops the rest of the log with a
	// warning, because that is what a power loss leaves when the kernel
	// wrote the log's unsynced pages back out of order, and no record from
	// the damage on can be replayed without leaving a hole. The same
	// damage in the synced part of the log is bit rot, though, and the
	// default then drops acknowledged writes; set this to rather have Open
	// fail (and investigate with lsmgo check) than lose them. A torn tail
	// (damage that nothing intact follows) is recovered either way.
	StrictWALRecovery bool
	// DiskReserve is the free space, in bytes, below which writes are
	// refused with ErrNoSpace (they succeed again once space is freed).
	// It keeps the WAL from filling the disk to the last byte, so that the
	// work that turns memtables into tables and frees the WALs (a flush,
	// a manifest, the new WAL of the next Open) still finds room; flushes
	// and compactions may use it. The default is two memtables, capped at
	// a sixteenth of the filesystem so a small one stays usable: 64 MiB
	// with the default memtable size on any filesystem of 1 GiB or more.
	// Negative disables it. It needs an FS that reports its free space
	// (vfs.DiskUsager; the OS filesystem on Linux, macOS and FreeBSD does).
	DiskReserve int64
	// ValueThreshold is the size from which values are separated
	// (doc/blob.md): a value of at least this many bytes is written once,
	// to a blob file, and the tree (WAL, memtables, tables) holds a
	// pointer to it, so flushes and compactions do not copy it. Such a
	// value may be up to MaxValueSize bytes. Default 4 KiB, twice the
	// table block size: a larger value fills blocks of its own anyway, and
	// separated it halved write amplification and wrote 1.3-1.8 times
	// faster in BenchmarkBlobThreshold. Negative turns separation off:
	// every value is stored in the tree, and key plus value are limited
	// to MaxEntrySize. A DB written with separation holds blob files and
	// must be opened by a version that reads them.
	ValueThreshold int
	// BlobGCThreshold is the fraction of a blob file's bytes that tables
	// must still point to for the file to be left alone: below it,
	// compactions copy the values they keep out of the file, which is
	// deleted once nothing points into it. Default 0.5: at most about
	// half of the blob bytes on disk are garbage, and each live value is
	// copied at most once per halving. Negative turns collection off.
	BlobGCThreshold float64
	// NewCompactionFilter, when set, makes the CompactionFilter of each
	// flush and compaction from a Reader of the DB's state when it
	// began; a nil result means no filter for that run. The filter lets
	// the application reclaim entries it knows are dead (see
	// CompactionFilter for the rules it must follow).
	NewCompactionFilter func(state Reader) CompactionFilter
	// OnCommit, when set, is called with each batch written to the WAL,
	// in commit order (the order of their sequence numbers), with its
	// first sequence number and its portable encoding, which
	// ApplyReplicated applies on a replica (see SeqMismatchError). It is
	// how a primary follows its commits to replicate them. It runs on
	// the commit path with the commit queue held: it must be quick (copy
	// data into a buffer, which is valid only during the call) and must
	// not call into the DB. A batch whose WAL write failed (ErrNoSpace)
	// is not reported, and leaves a gap of its sequence numbers that a
	// replica following the commits sees as one.
	OnCommit func(seq uint64, data []byte)

	// WALRetainSize, when positive, keeps each WAL file after its
	// memtable is flushed, renamed NNNNNN.rlog, instead of deleting it,
	// up to this many bytes of such files in all (the oldest go first),
	// counting the blob files that only retained files keep (values
	// their records point to that no table holds any more), so that
	// NewLogReader can read the committed batches back: a
	// primary's replication backlog that outlives a restart. Recovery
	// never reads a retained file. 0 (the default) deletes each WAL once
	// flushed. SetWALRetention changes it on an open DB.
	WALRetainSize int64
	// WALRetainAge, when positive, also deletes a retained WAL file once
	// it has been retained this long (checked at each flush and each
	// NewLogReader). 0: no age bound.
	WALRetainAge time.Duration

	// blobFileSize, when set (by tests), replaces blobTargetFileSize, so
	// that a test writing a few hundred KiB sees blob files retired and
	// collected.
	blobFileSize int64
}

// WriteOptions adjusts a single write.
type WriteOptions struct {
	// Sync forces an fsync of this write's WAL record before returning,
	// whatever the DB's sync mode.
	Sync bool
}

// Sync is a WriteOptions that forces an fsync.
var Sync = &WriteOptions{Sync: true}

// IterOptions bounds an iterator.
type IterOptions struct {
	// LowerBound is the inclusive lower bound; nil means unbounded.
	LowerBound []byte
	// UpperBound is the exclusive upper bound; nil means unbounded.
	UpperBound []byte
}

// withDefaults returns a copy of o with every zero field set.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.MemTableSize <= 0 {
		r.MemTableSize = DefaultMemTableSize
	}
	if r.MemTableStopWritesThreshold <= 1 {
		r.MemTableStopWritesThreshold = DefaultMemTableStopWritesThreshold
	}
	if r.L0CompactionThreshold <= 0 {
		r.L0CompactionThreshold = DefaultL0CompactionThreshold
	}
	if r.L0SlowdownWritesThreshold <= 0 {
		r.L0SlowdownWritesThreshold = DefaultL0SlowdownWritesThreshold
	}
	if r.L0StopWritesThreshold <= 0 {
		r.L0StopWritesThreshold = DefaultL0StopWritesThreshold
	}
	if r.L0StopWritesThreshold < r.L0CompactionThreshold+1 {
		r.L0StopWritesThreshold = r.L0CompactionThreshold + 1
	}
	if r.LBaseMaxBytes <= 0 {
		r.LBaseMaxBytes = DefaultLBaseMaxBytes
	}
	if r.LevelMultiplier <= 1 {
		r.LevelMultiplier = DefaultLevelMultiplier
	}
	if r.TargetFileSize <= 0 {
		r.TargetFileSize = DefaultTargetFileSize
	}
	if r.BlockSize <= 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.BloomBitsPerKey == 0 {
		r.BloomBitsPerKey = DefaultBloomBitsPerKey
	} else if r.BloomBitsPerKey < 0 {
		r.BloomBitsPerKey = 0
	}
	if r.ValueThreshold == 0 {
		r.ValueThreshold = DefaultValueThreshold
	}
	if r.BlobGCThreshold == 0 {
		r.BlobGCThreshold = DefaultBlobGCThreshold
	}
	if r.CacheSize == 0 {
		r.CacheSize = DefaultCacheSize
	} else if r.CacheSize < 0 {
		r.CacheSize = 0
	}
	if r.MapBudget == 0 {
		r.MapBudget = 2 * r.CacheSize
	} else if r.MapBudget < 0 {
		r.MapBudget = 0
	}
	if r.MaxConcurrentCompactions <= 0 {
		r.MaxConcurrentCompactions = min(2, runtime.GOMAXPROCS(0))
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}
