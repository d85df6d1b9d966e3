package lsmgo

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// The model test replays seeded random operation sequences against the DB
// and against testutil.Model, and fails at the first difference. A failure
// prints the seed and the command that replays it. The flags have
// environment twins, LSMGO_MODEL_SEED and LSMGO_MODEL_OPS, for runs over
// several packages (go test ./...), where a package-specific flag would
// make the other packages fail.
var (
	modelSeed = flag.Uint64("model.seed", 0, "base seed of TestModel (0: $LSMGO_MODEL_SEED, else the fixed default); configuration i uses seed+i")
	modelOps  = flag.Int("model.ops", 0, "operations of TestModel, shared by the configurations (0: $LSMGO_MODEL_OPS, else the CI default)")
)

const defaultModelSeed = 20240601

// modelFlag returns the flag's value, else the environment variable's,
// else 0.
func modelFlag[T uint64 | int](t *testing.T, flagValue T, env string) T {
	if flagValue != 0 {
		return flagValue
	}
	s := os.Getenv(env)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		t.Fatalf("%s=%q: %v", env, s, err)
	}
	return T(v)
}

// modelOpsTotal is the number of operations the configurations share. It
// is sized so that every CI run, including the race-detector run that CI
// actually does, performs well over the 100,000 operations the issue asks.
func modelOpsTotal(t *testing.T) int {
	if n := modelFlag(t, *modelOps, "LSMGO_MODEL_OPS"); n > 0 {
		return n
	}
	switch {
	case testing.Short():
		return 10000
	case raceEnabled:
		return 105000
	}
	return 200000
}

// modelKeySpace is small, so overwrites, deletes and snapshots keep meeting.
var modelKeySpace = testutil.KeySpace{N: 600}

// modelTinyOptions make flushes and compactions happen every few dozen writes.
func modelTinyOptions() Options {
	return Options{
		MemTableSize:          32 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         64 << 10,
		TargetFileSize:        16 << 10,
		BlockSize:             512,
		// A few dozen blocks: evictions, and the recycling of evicted
		// blocks' buffers, happen all the time.
		CacheSize: 32 << 10,
	}
}

type modelConfig struct {
	name string
	opts Options
	// background says the configuration must see flushes and compactions
	// run on their own, not only through Flush and Compact calls.
	background bool
	// share is the configuration's relative part of the operations; zstd
	// gets less because its encoder is slow under the race detector.
	share int
}

func modelConfigs() []modelConfig {
	zstd := modelTinyOptions()
	zstd.Compression = ZstdCompression
	// The interval syncer then races memtable rotations and Close.
	zstd.Sync = SyncInterval(time.Millisecond)
	plain := modelTinyOptions()
	plain.Compression = NoCompression
	plain.BloomBitsPerKey = -1
	plain.CacheSize = -1
	serial := modelTinyOptions()
	serial.Sync = SyncNone
	serial.MaxConcurrentCompactions = 1
	serial.L0CompactionThreshold = 4
	serial.MemTableStopWritesThreshold = 2
	// Value separation with a threshold in the middle of the generated
	// sizes: batches mix separated and inline values, and a key's
	// versions move between the two.
	blob := modelTinyOptions()
	blob.ValueThreshold = 64
	blobInterval := modelTinyOptions()
	blobInterval.ValueThreshold = 1 << 10
	blobInterval.Sync = SyncInterval(time.Millisecond)
	return []modelConfig{
		{name: "tiny-snappy", opts: modelTinyOptions(), background: true, share: 10},
		{name: "tiny-zstd-syncinterval", opts: zstd, background: true, share: 2},
		{name: "tiny-none-nobloom-nocache", opts: plain, background: true, share: 10},
		{name: "tiny-syncnone-serial", opts: serial, background: true, share: 10},
		// The defaults but a smaller memtable: every Flush, Compact and
		// reopen allocates a fresh one, and 32 MiB each would dominate
		// the test's time without testing anything more.
		{name: "defaults-2MB-memtable", opts: Options{MemTableSize: 2 << 20}, share: 8},
		{name: "tiny-blob64", opts: blob, background: true, share: 10},
		{name: "tiny-blob1k-syncinterval", opts: blobInterval, background: true, share: 4},
	}
}

func TestModel(t *testing.T) {
	seed := modelFlag(t, *modelSeed, "LSMGO_MODEL_SEED")
	if seed == 0 {
		seed = defaultModelSeed
	}
	configs := modelConfigs()
	shares := 0
	for _, cfg := range configs {
		shares += cfg.share
	}
	total := 0
	for i, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			r := newModelRun(t, cfg, seed, seed+uint64(i))
			r.run((modelOpsTotal(t)*cfg.share + shares - 1) / shares)
			total += r.ops
		})
	}
	t.Logf("seed %d: %d operations in total", seed, total)
}

// modelClock is the TTL clock; background compactions read it, so it is
// atomic. It only moves forward, as the engine's expiry logic assumes.
type modelClock struct{ ms atomic.Int64 }

func (c *modelClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// modelSnap pairs a DB snapshot with the model frozen at the same moment.
type modelSnap struct {
	snap  *Snapshot
	model *testutil.Model
	id    int
}

// modelIter pairs a DB iterator with the model iterator it must follow.
type modelIter struct {
	it    *Iterator
	model *testutil.Iter
	desc  string
}

type modelRun struct {
	t        *testing.T
	cfg      modelConfig
	baseSeed uint64
	seed     uint64
	rng      *rand.Rand
	fs       *vfs.MemFS
	opts     Options
	db       *DB
	clock    *modelClock
	model    *testutil.Model
	snaps    []*modelSnap
	iters    []*modelIter
	nextID   int
	tag      uint64
	batch    *Batch

	ops    int
	counts map[string]int
	// Totals of the DB's metrics over every open.
	flushes, compactions, moves, stalls int64
	blobValues, blobReads               int64
	blobFiles, blobFilesDeleted         int64
	blobGCValues                        int64
	history                             []string // the most recent operations, for failure messages
}

const modelHistory = 40

func newModelRun(t *testing.T, cfg modelConfig, baseSeed, seed uint64) *modelRun {
	r := &modelRun{
		t: t, cfg: cfg, baseSeed: baseSeed, seed: seed,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		fs:     vfs.NewMem(),
		clock:  &modelClock{},
		model:  testutil.NewModel(),
		counts: map[string]int{},
	}
	r.clock.ms.Store(1_700_000_000_000)
	r.opts = cfg.opts
	r.opts.FS = r.fs
	r.opts.Now = r.clock.now
	r.opts.Logger = slog.New(slog.DiscardHandler)
	t.Logf("seed %d (replay: go test -run 'TestModel/%s$' -model.seed=%d, or LSMGO_MODEL_SEED=%d)", seed, cfg.name, baseSeed, baseSeed)
	r.open()
	return r
}

// fatalf fails with everything needed to replay and understand the failure.
func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nconfig %s, seed %d, operation %d; replay: go test -run 'TestModel/%s$' -model.seed=%d (or LSMGO_MODEL_SEED=%[6]d)\nrecent operations, oldest first:\n  %s",
		fmt.Sprintf(format, args...), r.cfg.name, r.seed, r.ops, r.cfg.name, r.baseSeed, strings.Join(r.history, "\n  "))
}

func (r *modelRun) note(format string, args ...any) {
	if len(r.history) == modelHistory {
		copy(r.history, r.history[1:])
		r.history = r.history[:modelHistory-1]
	}
	r.history = append(r.history, fmt.Sprintf("%d: ", r.ops)+fmt.Sprintf(format, args...))
}

func (r *modelRun) nowMs() int64 { return r.clock.ms.Load() }

func (r *modelRun) open() {
	db, err := Open("/db", &r.opts)
	if err != nil {
		r.fatalf("Open: %v", err)
	}
	r.db = db
}

type modelOp struct {
	name   string
	weight int
	run    func(r *modelRun)
}

var modelOpTable = []modelOp{
	{"set", 240, (*modelRun).opSet},
	{"delete", 80, (*modelRun).opDelete},
	{"set-expiry", 60, (*modelRun).opSetExpiry},
	{"batch", 80, (*modelRun).opBatch},
	{"advance-clock", 30, (*modelRun).opAdvanceClock},
	{"get", 250, (*modelRun).opGet},
	{"iterate", 80, (*modelRun).opIterate},
	{"step-open-iter", 60, (*modelRun).opStepOpenIter},
	{"snapshot", 20, (*modelRun).opSnapshot},
	{"snapshot-close", 18, (*modelRun).opSnapshotClose},
	{"scan", 3, (*modelRun).opScan},
	{"flush", 4, (*modelRun).opFlush},
	{"compact", 2, (*modelRun).opCompact},
	{"reopen", 2, (*modelRun).opReopen},
}

var modelOpWeights = func() int {
	n := 0
	for _, op := range modelOpTable {
		n += op.weight
	}
	return n
}()

func (r *modelRun) run(n int) {
	start := time.Now()
	for r.ops = 0; r.ops < n; r.ops++ {
		w := r.rng.IntN(modelOpWeights)
		for _, op := range modelOpTable {
			if w < op.weight {
				r.counts[op.name]++
				op.run(r)
				break
			}
			w -= op.weight
		}
	}
	// A final full comparison, before and after a reopen.
	r.opScan()
	r.opReopen()
	r.opScan()
	r.closeDB()
	r.t.Logf("%d operations in %s: %v", r.ops, time.Since(start).Round(time.Millisecond), r.counts)
	r.t.Logf("over all opens: %d flushes, %d compactions, %d moves, %d stalls",
		r.flushes, r.compactions, r.moves, r.stalls)
	if r.cfg.opts.ValueThreshold > 0 {
		r.t.Logf("over all opens: %d values written to %d blob files, %d read back; %d blob files deleted, %d values copied by GC",
			r.blobValues, r.blobFiles, r.blobReads, r.blobFilesDeleted, r.blobGCValues)
		if r.ops >= 500 && (r.blobValues == 0 || r.blobReads == 0) {
			r.fatalf("the configuration separates values, but %d were written to blob files and %d read back", r.blobValues, r.blobReads)
		}
	}
	// A few thousand operations write enough to fill many tiny memtables.
	if r.cfg.background && r.ops >= 2000 && r.compactions+r.moves <= int64(r.counts["compact"]) {
		r.fatalf("the configuration is meant to compact in the background, but only Compact calls did")
	}
}

func (r *modelRun) key() []byte { return modelKeySpace.Random(r.rng) }

func (r *modelRun) value(key []byte) []byte {
	r.tag++
	return testutil.Value(r.rng, key, r.tag)
}

// expiry returns an expiry time near the clock: mostly in the future, so
// keys expire while the sequence runs, sometimes already past.
func (r *modelRun) expiry() int64 { return r.nowMs() + int64(r.rng.IntN(6000)) - 500 }

func (r *modelRun) opSet() {
	k := r.key()
	v := r.value(k)
	r.note("Set(%q, %s)", k, testutil.Describe(v))
	if err := r.db.Set(k, v, nil); err != nil {
		r.fatalf("Set: %v", err)
	}
	r.model.Set(k, v)
}

func (r *modelRun) opDelete() {
	k := r.key()
	r.note("Delete(%q)", k)
	if err := r.db.Delete(k, nil); err != nil {
		r.fatalf("Delete: %v", err)
	}
	r.model.Delete(k)
}

func (r *modelRun) opSetExpiry() {
	k := r.key()
	v := r.value(k)
	exp := r.expiry()
	r.note("SetWithExpiry(%q, %s, now%+dms)", k, testutil.Describe(v), exp-r.nowMs())
	if err := r.db.SetWithExpiry(k, v, time.UnixMilli(exp), nil); err != nil {
		r.fatalf("SetWithExpiry: %v", err)
	}
	r.model.SetWithExpiry(k, v, exp)
}

// opBatch commits a batch of mixed writes, the same key possibly several
// times (the last write wins), and sometimes an empty batch. Half the
// batches reuse one Batch through Reset.
func (r *modelRun) opBatch() {
	b := r.batch
	if b == nil || r.rng.IntN(2) == 0 {
		b = r.db.NewBatch()
		r.batch = b
	} else {
		b.Reset()
	}
	n := r.rng.IntN(13)
	var desc strings.Builder
	var apply []func()
	for range n {
		k := r.key()
		switch r.rng.IntN(5) {
		case 0:
			fmt.Fprintf(&desc, " del(%q)", k)
			b.Delete(k)
			apply = append(apply, func() { r.model.Delete(k) })
		case 1:
			v := r.value(k)
			exp := r.expiry()
			fmt.Fprintf(&desc, " setexp(%q, %d bytes, now%+dms)", k, len(v), exp-r.nowMs())
			b.SetWithExpiry(k, v, time.UnixMilli(exp))
			apply = append(apply, func() { r.model.SetWithExpiry(k, v, exp) })
		default:
			v := r.value(k)
			fmt.Fprintf(&desc, " set(%q, %d bytes)", k, len(v))
			b.Set(k, v)
			apply = append(apply, func() { r.model.Set(k, v) })
		}
	}
	r.note("Apply(batch of %d:%s)", n, desc.String())
	if b.Count() != n {
		r.fatalf("batch Count %d, want %d", b.Count(), n)
	}
	if err := r.db.Apply(b, nil); err != nil {
		r.fatalf("Apply: %v", err)
	}
	for _, f := range apply {
		f()
	}
}

func (r *modelRun) opAdvanceClock() {
	d := int64(r.rng.IntN(1500))
	r.note("clock += %dms", d)
	r.clock.ms.Add(d)
}

// reader picks the DB or one of the open snapshots, with its model.
func (r *modelRun) reader() (get func([]byte) ([]byte, time.Time, error), newIter func(*IterOptions) (*Iterator, error), m *testutil.Model, desc string) {
	if len(r.snaps) > 0 && r.rng.IntN(3) == 0 {
		s := r.snaps[r.rng.IntN(len(r.snaps))]
		return s.snap.GetWithExpiry, s.snap.NewIter, s.model, fmt.Sprintf("snapshot %d", s.id)
	}
	return r.db.GetWithExpiry, r.db.NewIter, r.model, "db"
}

func (r *modelRun) opGet() {
	get, _, m, desc := r.reader()
	k := r.key()
	r.note("%s: Get(%q)", desc, k)
	v, exp, err := get(k)
	want, ok := m.Get(k, r.nowMs())
	switch {
	case err != nil && !errors.Is(err, ErrNotFound):
		r.fatalf("%s: Get(%q): %v", desc, k, err)
	case !ok && err == nil:
		r.fatalf("%s: Get(%q) = %s, want not found", desc, k, testutil.Describe(v))
	case ok && err != nil:
		r.fatalf("%s: Get(%q): %v, want %s", desc, k, err, testutil.Describe(want.Value))
	case ok && !bytes.Equal(v, want.Value):
		r.fatalf("%s: Get(%q) = %s, want %s", desc, k, testutil.Describe(v), testutil.Describe(want.Value))
	case ok && want.ExpireAtMs == 0 && !exp.IsZero():
		r.fatalf("%s: Get(%q) expiry %v, want none", desc, k, exp)
	case ok && want.ExpireAtMs != 0 && exp.UnixMilli() != want.ExpireAtMs:
		r.fatalf("%s: Get(%q) expiry %d, want %d", desc, k, exp.UnixMilli(), want.ExpireAtMs)
	}
}

// newIter opens an iterator on the DB or a snapshot with random bounds
// (sometimes none, sometimes crossed) and the model iterator it must match.
func (r *modelRun) newIter() *modelIter {
	_, newIter, m, desc := r.reader()
	var o *IterOptions
	var lower, upper []byte
	if r.rng.IntN(4) != 0 {
		lower, upper = modelKeySpace.Bound(r.rng, 30), modelKeySpace.Bound(r.rng, 30)
		if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 && r.rng.IntN(10) != 0 {
			lower, upper = upper, lower
		}
		o = &IterOptions{LowerBound: lower, UpperBound: upper}
	}
	desc = fmt.Sprintf("%s iter [%q, %q)", desc, lower, upper)
	r.note("NewIter: %s", desc)
	it, err := newIter(o)
	if err != nil {
		r.fatalf("%s: NewIter: %v", desc, err)
	}
	return &modelIter{it: it, model: m.NewIter(lower, upper, r.nowMs()), desc: desc}
}

// step makes one random positioning call on both iterators and compares.
func (r *modelRun) step(mi *modelIter) {
	var name string
	var got, want bool
	switch c := r.rng.IntN(20); {
	case c < 2:
		name = "First"
		got, want = mi.it.First(), mi.model.First()
	case c < 4:
		name = "Last"
		got, want = mi.it.Last(), mi.model.Last()
	case c < 6:
		k := modelKeySpace.Bound(r.rng, 0)
		name = fmt.Sprintf("SeekGE(%q)", k)
		got, want = mi.it.SeekGE(k), mi.model.SeekGE(k)
	case c < 8:
		k := modelKeySpace.Bound(r.rng, 0)
		name = fmt.Sprintf("SeekLT(%q)", k)
		got, want = mi.it.SeekLT(k), mi.model.SeekLT(k)
	case c < 14:
		name = "Next"
		got, want = mi.it.Next(), mi.model.Next()
	default:
		name = "Prev"
		got, want = mi.it.Prev(), mi.model.Prev()
	}
	r.note("  %s.%s", mi.desc, name)
	r.compareIter(mi, name, got, want)
}

func (r *modelRun) compareIter(mi *modelIter, name string, got, want bool) {
	if err := mi.it.Error(); err != nil {
		r.fatalf("%s: %s: %v", mi.desc, name, err)
	}
	if got != want || mi.it.Valid() != want {
		at := "<invalid>"
		if want {
			at = fmt.Sprintf("%q", mi.model.Entry().Key)
		}
		gotAt := "<invalid>"
		if mi.it.Valid() {
			gotAt = fmt.Sprintf("%q", mi.it.Key())
		}
		r.fatalf("%s: %s = %v at %s, want %v at %s", mi.desc, name, got, gotAt, want, at)
	}
	if !want {
		return
	}
	e := mi.model.Entry()
	if !bytes.Equal(mi.it.Key(), e.Key) || !bytes.Equal(mi.it.Value(), e.Value) {
		r.fatalf("%s: %s at %q = %s (error %v), want %q = %s", mi.desc, name,
			mi.it.Key(), testutil.Describe(mi.it.Value()), mi.it.Error(), e.Key, testutil.Describe(e.Value))
	}
}

// opIterate walks a fresh iterator through random moves, then closes it or
// keeps it open so later writes, flushes and compactions run under it.
func (r *modelRun) opIterate() {
	mi := r.newIter()
	for range 1 + r.rng.IntN(30) {
		r.step(mi)
	}
	if len(r.iters) < 3 && r.rng.IntN(3) == 0 {
		r.iters = append(r.iters, mi)
		return
	}
	r.closeIter(mi)
}

func (r *modelRun) closeIter(mi *modelIter) {
	r.note("close %s", mi.desc)
	if err := mi.it.Close(); err != nil {
		r.fatalf("%s: Close: %v", mi.desc, err)
	}
}

// opStepOpenIter moves a long-lived iterator, which must still show the
// state of its creation; sometimes it is closed afterwards.
func (r *modelRun) opStepOpenIter() {
	if len(r.iters) == 0 {
		r.opIterate()
		return
	}
	i := r.rng.IntN(len(r.iters))
	mi := r.iters[i]
	for range 1 + r.rng.IntN(10) {
		r.step(mi)
	}
	if r.rng.IntN(4) == 0 {
		r.iters = append(r.iters[:i], r.iters[i+1:]...)
		r.closeIter(mi)
	}
}

// opScan compares a full forward and a full backward scan of the DB (or a
// snapshot) with the model.
func (r *modelRun) opScan() {
	_, newIter, m, desc := r.reader()
	r.note("%s: full scan", desc)
	it, err := newIter(nil)
	if err != nil {
		r.fatalf("%s: NewIter: %v", desc, err)
	}
	mi := &modelIter{it: it, model: m.NewIter(nil, nil, r.nowMs()), desc: desc + " full scan"}
	want := m.Range(nil, nil, r.nowMs())
	n := 0
	for ok := it.First(); ; ok = it.Next() {
		mok := n < len(want)
		if n == 0 {
			mi.model.First()
		} else {
			mi.model.Next()
		}
		r.compareIter(mi, fmt.Sprintf("forward #%d", n), ok, mok)
		if !ok {
			break
		}
		n++
	}
	n = 0
	for ok := it.Last(); ; ok = it.Prev() {
		if n == 0 {
			mi.model.Last()
		} else {
			mi.model.Prev()
		}
		r.compareIter(mi, fmt.Sprintf("backward #%d", n), ok, n < len(want))
		if !ok {
			break
		}
		n++
	}
	if err := it.Close(); err != nil {
		r.fatalf("%s: Close: %v", desc, err)
	}
}

func (r *modelRun) opSnapshot() {
	if len(r.snaps) >= 5 {
		r.opSnapshotClose()
		return
	}
	r.nextID++
	r.note("NewSnapshot -> %d", r.nextID)
	r.snaps = append(r.snaps, &modelSnap{snap: r.db.NewSnapshot(), model: r.model.Snapshot(), id: r.nextID})
}

func (r *modelRun) opSnapshotClose() {
	if len(r.snaps) == 0 {
		return
	}
	i := r.rng.IntN(len(r.snaps))
	s := r.snaps[i]
	r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
	r.note("close snapshot %d", s.id)
	if err := s.snap.Close(); err != nil {
		r.fatalf("snapshot %d: Close: %v", s.id, err)
	}
}

func (r *modelRun) opFlush() {
	r.note("Flush")
	if err := r.db.Flush(); err != nil {
		r.fatalf("Flush: %v", err)
	}
}

func (r *modelRun) opCompact() {
	start, end := modelKeySpace.Bound(r.rng, 25), modelKeySpace.Bound(r.rng, 25)
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		start, end = end, start
	}
	r.note("Compact(%q, %q)", start, end)
	if err := r.db.Compact(start, end); err != nil {
		r.fatalf("Compact: %v", err)
	}
}

// closeAll closes every open iterator and snapshot.
func (r *modelRun) closeAll() {
	for _, mi := range r.iters {
		r.closeIter(mi)
	}
	r.iters = nil
	for len(r.snaps) > 0 {
		r.opSnapshotClose()
	}
}

// opReopen closes the DB and opens it again on the same filesystem: every
// write survives, the open snapshots and iterators do not.
func (r *modelRun) opReopen() {
	r.note("Close and reopen")
	r.closeDB()
	r.open()
}

// closeDB closes the open iterators and snapshots, then the DB, adding its
// metrics to the run's totals.
func (r *modelRun) closeDB() {
	r.closeAll()
	m := r.db.Metrics()
	if m.Iterators != 0 || m.Snapshots != 0 {
		r.fatalf("metrics count %d iterators and %d snapshots after all were closed", m.Iterators, m.Snapshots)
	}
	r.flushes += m.Flush.Count
	r.compactions += m.Compaction.Count
	r.moves += m.Compaction.Moves
	r.stalls += m.Stall.Count
	r.blobValues += m.Blob.ValuesWritten
	r.blobReads += m.Blob.Reads
	r.blobFiles += m.Blob.FilesCreated
	r.blobFilesDeleted += m.Blob.FilesDeleted
	r.blobGCValues += m.Blob.GCValues
	if err := r.db.Close(); err != nil {
		r.fatalf("Close: %v", err)
	}
}
