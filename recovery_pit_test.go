package lsmgo

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// These tests cover point-in-time recovery of the newest WAL: a power loss
// that wrote the WAL's unsynced pages back out of order leaves damage
// followed by intact records, and Open must recover exactly the records
// before the damage.
//
// The randomized test gives every write keys of its own, so the recovered
// DB says exactly which writes survived. Each write is stamped with a
// logical clock when it starts and when it is acknowledged, and each crash
// image between two stamps c0 and c1. Then the recovered writes W must be
// whole (no batch partly visible), must include every write that was
// durable before c0, must have started before c1, and must have no hole:
// if a write in W started at s, every write acknowledged before s is in W,
// because it had been given an earlier place in the WAL.

var pitSeed = flag.Uint64("pit.seed", 0, "seed of TestRecoveryPointInTime (0: the fixed default)")

const defaultPITSeed = 20250301

// pitOp is one Apply of the randomized test.
type pitOp struct {
	keys   []string
	values [][]byte
	// sync is set for a write made with WriteOptions.Sync.
	sync       bool
	start, ack int64 // clock stamps; ack is noAck until acknowledged
}

// pitSync is a completed Flush or synced write: every write acknowledged
// before start was durable once it returned, before end.
type pitSync struct{ start, end int64 }

// pitHistory is what the writers of one run did.
type pitHistory struct {
	clock atomic.Int64
	mu    sync.Mutex
	ops   []*pitOp
	byKey map[string]*pitOp
	syncs []pitSync
}

// durableBefore returns the start of the latest sync that had ended before
// clock stamp c.
func (h *pitHistory) durableBefore(c int64) int64 {
	latest := int64(-1)
	for _, s := range h.syncs {
		if s.end < c {
			latest = max(latest, s.start)
		}
	}
	return latest
}

// pitImage is a crash image and the stamps around it.
type pitImage struct {
	fs     *vfs.MemFS
	c0, c1 int64
	op     string
}

// pitCrasher is an errorfs injector that fails nothing: before randomly
// chosen mutating operations it takes a CrashCloneReorder of mem. It
// favours the moment before a WAL fsync, when the most unsynced WAL data
// is at stake.
type pitCrasher struct {
	mem   *vfs.MemFS
	clock *atomic.Int64
	mu    sync.Mutex
	rng   *rand.Rand
	ops   int64
	next  int64
	gap   int64
	imgs  []pitImage
}

func (c *pitCrasher) MaybeError(op errorfs.Op, path string) error {
	switch op {
	case errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpClose, errorfs.OpRemove, errorfs.OpRename:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	walSync := op == errorfs.OpSync && strings.HasSuffix(path, ".log") && c.rng.IntN(pitWALSyncOdds) == 0
	if c.gap == 0 || c.ops < c.next && !walSync {
		return nil
	}
	c.next = c.ops + 1 + c.rng.Int64N(2*c.gap)
	c0 := c.clock.Add(1)
	img := c.mem.CrashCloneReorder(c.rng)
	c1 := c.clock.Add(1)
	c.imgs = append(c.imgs, pitImage{fs: img, c0: c0, c1: c1, op: op.String() + " " + path})
	return nil
}

// logCapture is a slog.Handler that keeps every record as one line.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }

// matching returns the captured lines that contain s.
func (l *logCapture) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

const (
	pitWriters      = 4
	pitOpsPerWriter = 100
	// pitGap is the mean distance, in mutating filesystem operations,
	// between crash images; pitWALSyncOdds the odds against an image
	// before each WAL fsync besides.
	pitGap         = 80
	pitWALSyncOdds = 12
	damagedWALLog  = "lsmgo: WAL damaged"
)

// pitTally counts what the crash images of a test exercised.
type pitTally struct {
	images, damaged, torn, lost int
}

func TestRecoveryPointInTime(t *testing.T) {
	seed := *pitSeed
	if seed == 0 {
		seed = defaultPITSeed
	}
	t.Logf("seed %d (replay with -pit.seed=%d; goroutine scheduling still varies)", seed, seed)
	// Each run checks 40 to 70 images; the race detector's slowdown gets
	// a third of the runs, still over a hundred images.
	runs := 3
	if raceEnabled || testing.Short() {
		runs = 1
	}
	// The last three modes separate the values of 2,000 bytes or more
	// (about one in eight) into blob files, whose unsynced tails a power
	// loss tears too.
	modes := []struct {
		name      string
		mode      SyncMode
		threshold int
	}{
		{"always", SyncAlways, 0}, {"interval", SyncInterval(2 * time.Millisecond), 0}, {"none", SyncNone, 0},
		{"always-blobs", SyncAlways, 2000}, {"interval-blobs", SyncInterval(2 * time.Millisecond), 2000}, {"none-blobs", SyncNone, 2000},
	}
	var total pitTally
	for i, m := range modes {
		var tally pitTally
		for run := range runs {
			runSeed := seed + uint64(i)<<16 + uint64(run)
			if !runPIT(t, runSeed, m.mode, m.threshold, &tally) {
				t.Fatalf("seed %d (%s, run seed %d): failed", seed, m.name, runSeed)
			}
		}
		t.Logf("%s: %d crash images: %d recovered up to a damaged record, %d torn tails, %d with acknowledged writes lost (allowed unless synced)",
			m.name, tally.images, tally.damaged, tally.torn, tally.lost)
		total.images += tally.images
		total.damaged += tally.damaged
	}
	// Without damage followed by intact records the test would not test
	// what it is for.
	if total.damaged == 0 {
		t.Errorf("seed %d: no crash image of %d had a WAL damaged before intact records", seed, total.images)
	}
}

// runPIT runs one workload on a crashable filesystem and verifies every
// crash image taken during it. It reports failures through t and returns
// false after the first.
func runPIT(t *testing.T, seed uint64, mode SyncMode, threshold int, tally *pitTally) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	h := &pitHistory{byKey: map[string]*pitOp{}}
	mem := vfs.NewMem()
	cr := &pitCrasher{mem: mem, clock: &h.clock, rng: rand.New(rand.NewPCG(seed, 2))}
	opts := durOptions(errorfs.Wrap(mem, cr), mode)
	opts.ValueThreshold = threshold
	db, err := Open("/db", opts)
	if err != nil {
		t.Errorf("seed %d: Open: %v", seed, err)
		return false
	}
	cr.mu.Lock()
	cr.gap = pitGap
	cr.next = cr.ops + 1
	cr.mu.Unlock()

	// Generate every operation up front, so the workload is a function of
	// the seed (only its interleaving is not).
	ops := make([][]*pitOp, pitWriters)
	for g := range ops {
		for i := range pitOpsPerWriter {
			op := &pitOp{sync: mode != SyncAlways && rng.IntN(25) == 0, ack: noAck}
			for k := range 1 + rng.IntN(4) {
				key := fmt.Sprintf("w%d-%04d-%d", g, i, k)
				// Mostly small values; some span pages, a few blocks.
				n := 8 + rng.IntN(200)
				switch r := rng.IntN(100); {
				case r < 2:
					n = record.BlockSize + rng.IntN(record.BlockSize)
				case r < 15:
					n = 2000 + rng.IntN(6000)
				}
				v := fmt.Appendf(nil, "%s|", key)
				for len(v) < n {
					v = append(v, byte('a'+rng.IntN(26)))
				}
				op.keys = append(op.keys, key)
				op.values = append(op.values, v)
				h.byKey[key] = op
			}
			ops[g] = append(ops[g], op)
			h.ops = append(h.ops, op)
		}
	}
	var writers, flusher sync.WaitGroup
	errs := make(chan error, pitWriters+1)
	for g := range pitWriters {
		writers.Go(func() {
			for _, op := range ops[g] {
				b := db.NewBatch()
				for k, key := range op.keys {
					b.Set([]byte(key), op.values[k])
				}
				var wo *WriteOptions
				if op.sync {
					wo = Sync
				}
				op.start = h.clock.Add(1)
				if err := db.Apply(b, wo); err != nil {
					errs <- fmt.Errorf("writer %d: %w", g, err)
					return
				}
				h.mu.Lock()
				op.ack = h.clock.Add(1)
				if op.sync {
					h.syncs = append(h.syncs, pitSync{start: op.start, end: op.ack})
				}
				h.mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	flushRng := rand.New(rand.NewPCG(seed, 3))
	flusher.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(flushRng.IntN(4000)) * time.Microsecond):
			}
			start := h.clock.Add(1)
			if err := db.Flush(); err != nil {
				errs <- fmt.Errorf("flush: %w", err)
				return
			}
			h.mu.Lock()
			h.syncs = append(h.syncs, pitSync{start: start, end: h.clock.Add(1)})
			h.mu.Unlock()
		}
	})
	writers.Wait()
	close(done)
	flusher.Wait()
	cr.mu.Lock()
	cr.gap = 0
	imgs := cr.imgs
	cr.mu.Unlock()
	if err := db.Close(); err != nil {
		t.Errorf("seed %d: Close: %v", seed, err)
		return false
	}
	close(errs)
	for err := range errs {
		t.Errorf("seed %d: %v", seed, err)
		return false
	}
	for i := range imgs {
		if err := verifyPITImage(h, mode, &imgs[i], tally); err != nil {
			t.Errorf("seed %d, mode %s, crash image %d of %d (before %s, stamps %d-%d): %v\nfiles of the image:\n%s",
				seed, mode, i, len(imgs), imgs[i].op, imgs[i].c0, imgs[i].c1, err, imgs[i].fs)
			return false
		}
	}
	return true
}

// verifyPITImage checks one crash image: Check finds at most the damage
// Open recovers from, Open succeeds and logs what it dropped, the state is
// one the history allows, and two more Opens see exactly that state.
func verifyPITImage(h *pitHistory, mode SyncMode, img *pitImage, tally *pitTally) error {
	report, err := Check("/db", &Options{FS: img.fs})
	if err != nil {
		return fmt.Errorf("Check: %w", err)
	}
	checkDamaged := false
	for _, p := range report.Problems {
		if !strings.Contains(p.Error(), "Open recovers the records before offset") {
			return fmt.Errorf("Check: %w", p)
		}
		checkDamaged = true
	}

	logs := &logCapture{}
	opts := durOptions(img.fs, SyncAlways)
	opts.Logger = slog.New(logs)
	db, err := Open("/db", opts)
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	dropped := db.Metrics().WAL.RecoveryDroppedBytes
	got, err := readPIT(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	damaged, torn := logs.matching(damagedWALLog), logs.matching("torn write")
	switch {
	case (len(damaged) > 0) != checkDamaged:
		return fmt.Errorf("Open logged %q; Check reported %v", damaged, report.Problems)
	case (len(damaged)+len(torn) > 0) != (dropped > 0):
		return fmt.Errorf("Open logged %q and %q, but Metrics says %d bytes dropped", damaged, torn, dropped)
	}
	for _, line := range damaged {
		if !strings.Contains(line, "file=/db/") || !strings.Contains(line, " offset=") || !strings.Contains(line, " dropped_bytes=") {
			return fmt.Errorf("the warning does not name the file, offset and bytes dropped: %s", line)
		}
	}
	lost, err := h.checkPIT(got, mode, img.c0, img.c1)
	if err != nil {
		return err
	}
	tally.images++
	if len(damaged) > 0 {
		tally.damaged++
	}
	if len(torn) > 0 {
		tally.torn++
	}
	if lost {
		tally.lost++
	}

	// Recovery wrote what it kept to tables and started a new WAL: the
	// dropped tail must never come back. Reopening costs as much as the
	// rest, so images where nothing was dropped get it only now and then.
	if dropped == 0 && tally.images%4 != 0 {
		return nil
	}
	for i := range 2 {
		db, err := Open("/db", durOptions(img.fs, SyncAlways))
		if err != nil {
			return fmt.Errorf("reopen %d: %w", i+1, err)
		}
		again, err := readPIT(db)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("reopen %d: %w", i+1, err)
		}
		if !maps.EqualFunc(got, again, bytes.Equal) {
			return fmt.Errorf("reopen %d: %d keys, the first recovery %d", i+1, len(again), len(got))
		}
	}
	if report, err := Check("/db", &Options{FS: img.fs}); err != nil || !report.OK() || len(report.Warnings) > 0 {
		return fmt.Errorf("Check after recovery: %v, problems %v, warnings %v", err, report.Problems, report.Warnings)
	}
	return nil
}

// readPIT returns every key and value of db.
func readPIT(db *DB) (map[string][]byte, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	got := map[string][]byte{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = bytes.Clone(it.Value())
	}
	return got, errors.Join(it.Error(), it.Close())
}

// checkPIT checks a recovered state against the history for a crash image
// taken between stamps c0 and c1. lost reports whether acknowledged writes
// that were not yet durable are missing, which the mode allows.
func (h *pitHistory) checkPIT(got map[string][]byte, mode SyncMode, c0, c1 int64) (lost bool, err error) {
	present := map[*pitOp]int{}
	for k, v := range got {
		op := h.byKey[k]
		if op == nil {
			return false, fmt.Errorf("key %q was never written", k)
		}
		if want := op.values[slices.Index(op.keys, k)]; !bytes.Equal(v, want) {
			return false, fmt.Errorf("key %q holds %.30q..., want %.30q...", k, v, want)
		}
		present[op]++
	}
	latestStart := int64(-1)
	var latest *pitOp
	for op, n := range present {
		if n != len(op.keys) {
			return false, fmt.Errorf("batch %v partly visible: %d of its %d keys", op.keys, n, len(op.keys))
		}
		if op.start > c1 {
			return false, fmt.Errorf("write %v started at %d, after the image", op.keys, op.start)
		}
		if op.start > latestStart {
			latestStart, latest = op.start, op
		}
	}
	durable := c0
	if mode != SyncAlways {
		durable = h.durableBefore(c0)
	}
	for _, op := range h.ops {
		if present[op] > 0 {
			continue
		}
		switch {
		case op.ack < durable || op.sync && op.ack < c0:
			return false, fmt.Errorf("write %v, acknowledged at %d and durable before the image (%d), is missing", op.keys, op.ack, durable)
		case op.ack < latestStart:
			return false, fmt.Errorf("hole: write %v, acknowledged at %d, is missing, but write %v, started at %d, is present", op.keys, op.ack, latest.keys, latest.start)
		case op.ack < c0:
			lost = true
		}
	}
	return lost, nil
}

// damagedWAL is a closed DB whose only WAL holds pitFixtureBatches records
// of about 1.5 KiB each, and the same DB with one page of that WAL zeroed,
// as a power loss leaves a page that was never written back.
type damagedWAL struct {
	pristine, damaged *vfs.MemFS
	wal               string  // the WAL's path
	size              int64   // the size of its records, without the zeros after them
	starts            []int64 // each record's offset
	// hit is the first record the zeroed page touches: recovery must keep
	// exactly the records before it.
	hit int
}

const pitFixtureBatches = 12

func pitFixtureKey(i int) string { return fmt.Sprintf("k%02d", i) }

func pitFixtureValue(i int) []byte {
	return append([]byte(pitFixtureKey(i)+"|"), bytes.Repeat([]byte{'a' + byte(i)}, 1500)...)
}

func newDamagedWAL(t *testing.T) *damagedWAL {
	t.Helper()
	mem := vfs.NewMem()
	opts := durOptions(mem, SyncAlways)
	// Big enough that every batch stays in the WAL.
	opts.MemTableSize = 1 << 20
	db := openTestDB(t, "/db", opts)
	for i := range pitFixtureBatches {
		b := db.NewBatch()
		b.Set([]byte(pitFixtureKey(i)), pitFixtureValue(i))
		b.Set([]byte(pitFixtureKey(i)+"-twin"), pitFixtureValue(i))
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The cases judge the WAL's end as after a crash.
	dropCloseMarker(t, mem, "/db")
	d := &damagedWAL{pristine: mem}
	names, err := mem.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if typ, _, ok := base.ParseFilename(name); ok && typ == base.FileTypeLog {
			d.wal = "/db/" + name
		}
	}
	data := readAllFile(t, mem, d.wal)
	// The size of the records: zeros written ahead of them follow.
	d.size = int64(len(bytes.TrimRight(data, "\x00")))
	r := record.NewReader(bytes.NewReader(data), d.wal)
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		d.starts = append(d.starts, r.Offset())
	}
	if len(d.starts) != pitFixtureBatches || d.size < 4*vfs.CrashPageSize {
		t.Fatalf("fixture WAL %s: %d records in %d bytes", d.wal, len(d.starts), d.size)
	}
	const lost = vfs.CrashPageSize
	for d.hit+1 < len(d.starts) && d.starts[d.hit+1] <= lost {
		d.hit++
	}
	d.damaged = mem.CrashClone()
	clear(data[lost : 2*lost])
	writeFile(t, d.damaged, d.wal, data)
	return d
}

func writeFile(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
}

// checkFixtureState checks that fs's DB holds exactly the fixture's first
// n batches plus extra.
func checkFixtureState(t *testing.T, fs vfs.FS, n int, extra map[string][]byte) {
	t.Helper()
	db := openTestDB(t, "/db", durOptions(fs, SyncAlways))
	got, err := readPIT(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	maps.Copy(want, extra)
	for i := range n {
		want[pitFixtureKey(i)] = pitFixtureValue(i)
		want[pitFixtureKey(i)+"-twin"] = pitFixtureValue(i)
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("the DB holds %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// TestRecoveryStrictWAL: with StrictWALRecovery, damage followed by intact
// records refuses the DB with a corruption error naming file and offset,
// and changes nothing, so a later default Open still recovers.
func TestRecoveryStrictWAL(t *testing.T) {
	d := newDamagedWAL(t)
	opts := durOptions(d.damaged, SyncAlways)
	opts.StrictWALRecovery = true
	db, err := Open("/db", opts)
	if err == nil {
		db.Close()
		t.Fatal("Open with StrictWALRecovery accepted a WAL damaged before intact records")
	}
	var ce *CorruptionError
	if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != d.wal || ce.Offset != d.starts[d.hit] {
		t.Fatalf("Open = %v; want a corruption error naming %s at offset %d", err, d.wal, d.starts[d.hit])
	}
	if !strings.Contains(err.Error(), d.wal) || !strings.Contains(err.Error(), fmt.Sprint("offset ", d.starts[d.hit])) {
		t.Fatalf("the message does not name the file and offset: %v", err)
	}
	checkFixtureState(t, d.damaged, d.hit, nil)
}

// TestRecoveryDamagedWAL: by default Open keeps exactly the records before
// the damaged one, says so in the log and the metrics, and the DB then
// takes writes and reopens to the same state, twice.
func TestRecoveryDamagedWAL(t *testing.T) {
	d := newDamagedWAL(t)
	if d.hit == 0 || d.hit >= pitFixtureBatches-1 {
		t.Fatalf("the zeroed page hits record %d of %d; the test needs records on both sides", d.hit, pitFixtureBatches)
	}
	report, err := Check("/db", &Options{FS: d.damaged})
	if err != nil {
		t.Fatal(err)
	}
	wantMsg := fmt.Sprintf("Open recovers the records before offset %d", d.starts[d.hit])
	if len(report.Problems) != 1 || !namesAny(report.Problems[0], []string{d.wal}, d.starts[d.hit]) ||
		!strings.Contains(report.Problems[0].Error(), wantMsg) {
		t.Fatalf("Check problems %v; want one naming %s at offset %d that says %q", report.Problems, d.wal, d.starts[d.hit], wantMsg)
	}

	logs := &logCapture{}
	opts := durOptions(d.damaged, SyncAlways)
	opts.Logger = slog.New(logs)
	db := openTestDB(t, "/db", opts)
	wantDropped := d.size - d.starts[d.hit]
	if got := db.Metrics().WAL.RecoveryDroppedBytes; got != wantDropped {
		t.Errorf("Metrics().WAL.RecoveryDroppedBytes = %d, want %d", got, wantDropped)
	}
	if !strings.Contains(db.Metrics().String(), "dropped by recovery") {
		t.Errorf("Metrics().String() does not show the bytes dropped:\n%s", db.Metrics())
	}
	// Damage followed by intact records is not a torn tail: an ERROR
	// that counts the intact records dropped after the damage.
	intact := 0
	for _, start := range d.starts {
		if start >= 2*vfs.CrashPageSize {
			intact++
		}
	}
	warned := logs.matching(damagedWALLog)
	wantAttrs := fmt.Sprintf("file=%s offset=%d dropped_bytes=%d intact_records_dropped=%d intact_entries_dropped=%d keys=",
		d.wal, d.starts[d.hit], wantDropped, intact, 2*intact)
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "ERROR ") || !strings.Contains(warned[0], wantAttrs) {
		t.Errorf("logged %q; want one ERROR with %q", warned, wantAttrs)
	}
	if got := db.Metrics().WAL.RecoveryLostEntries; got != int64(2*intact) {
		t.Errorf("Metrics().WAL.RecoveryLostEntries = %d, want %d", got, 2*intact)
	}
	// New writes reuse the dropped records' sequence numbers; they must
	// not mix with the dropped tail on any later Open.
	extra := map[string][]byte{}
	for i := range 3 {
		k := fmt.Sprintf("new%d", i)
		extra[k] = []byte("after recovery " + k)
		if err := db.Set([]byte(k), extra[k], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkFixtureState(t, d.damaged, d.hit, extra)
	checkFixtureState(t, d.damaged, d.hit, extra)
	if report, err := Check("/db", &Options{FS: d.damaged}); err != nil || !report.OK() || len(report.Warnings) > 0 {
		t.Fatalf("Check after recovery: %v, problems %v, warnings %v", err, report.Problems, report.Warnings)
	}
}

// TestRecoveryDamagedWALInterrupted crashes the Open that recovers a
// damaged WAL before each of its filesystem operations in turn. The image
// then holds the damaged WAL and, after the new WAL's creation, an empty
// newer one: Open must still recover the same records, never refuse.
func TestRecoveryDamagedWALInterrupted(t *testing.T) {
	d := newDamagedWAL(t)
	n := crashEachOp(t, "recovery", d.damaged.CrashClone, func(img crashPoint) {
		checkFixtureState(t, img.fs, d.hit, nil)
	})
	t.Logf("checked crashes before each of the %d operations of the recovering Open and Close", n)
}

// TestRecoveryDamagedOlderWAL: damage in a WAL that a newer WAL with
// records follows is not a power loss (the older one was synced before the
// newer one existed), so Open refuses it even by default.
func TestRecoveryDamagedOlderWAL(t *testing.T) {
	d := newDamagedWAL(t)
	newer := "/db/" + base.MakeFilename(base.FileTypeLog, 900)
	writeFile(t, d.damaged, newer, readAllFile(t, d.pristine, d.wal))
	db, err := Open("/db", durOptions(d.damaged, SyncAlways))
	if err == nil {
		db.Close()
		t.Fatal("Open accepted damage in a WAL followed by a newer WAL with records")
	}
	if !namesAny(err, []string{d.wal}, d.starts[d.hit]) {
		t.Fatalf("Open = %v; want a corruption error naming %s at or before offset %d", err, d.wal, d.starts[d.hit])
	}
	report, err := Check("/db", &Options{FS: d.damaged})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(report.Problems, func(err error) bool {
		return namesAny(err, []string{d.wal}, d.starts[d.hit]) && !strings.Contains(err.Error(), "Open recovers")
	}) {
		t.Fatalf("Check problems %v; want one naming %s that does not promise recovery", report.Problems, d.wal)
	}
}
