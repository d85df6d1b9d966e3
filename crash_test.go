package lsmgo

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// This file holds the crash test and the durability checker that the crash,
// kill -9 and fault tests share.
//
// The checker does not need to know the order in which the engine committed
// concurrent writes. Every writer goroutine runs its operations one after
// another, each one a Set, SetWithExpiry, Delete or a multi-key batch whose
// values all carry the batch's id, and the test stamps the start (before
// Apply) and the acknowledgement (after Apply returns) of each with a
// logical clock. A crash image taken between stamps c0 and c1 must then show,
// for every goroutine g, the effect of exactly its first P operations for
// some P between the number acknowledged before c0 and the number started
// before c1: that is "no acknowledged write lost", "no batch partly visible"
// and "no value that was never written" in one rule. Keys that all
// goroutines write (shared keys) are checked by real-time order instead: the
// value seen must come from a write that started before c1 and that no write
// acknowledged before c0 had to follow.

var crashSeed = flag.Uint64("crash.seed", 0, "seed of TestCrash (0: the fixed default)")

const defaultCrashSeed = 20240607

const (
	durOwnedKeys  = 64 // keys each writer goroutine owns
	durSharedKeys = 6  // keys every writer goroutine writes
	// noAck marks an operation that was never acknowledged.
	noAck = math.MaxInt64
)

// durNow is the fixed TTL clock of the durability tests: every expiry is far
// after it, so nothing expires and every expiring write must survive.
var durNow = time.UnixMilli(1_700_000_000_000)

func durNowFunc() time.Time { return durNow }

// durOptions are tiny sizes, so that WAL rotations, flushes and
// compactions happen within a few hundred writes, and the few dozen KiB of
// live data spread over L0, L1 and L2.
func durOptions(fs vfs.FS, sync SyncMode) *Options {
	return &Options{
		FS:                    fs,
		Sync:                  sync,
		Logger:                slog.New(slog.DiscardHandler),
		MemTableSize:          32 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         8 << 10,
		TargetFileSize:        4 << 10,
		BlockSize:             512,
		CacheSize:             1 << 20,
		Now:                   durNowFunc,
	}
}

// durWrite is one key's write within an operation.
type durWrite struct {
	key      string
	kind     base.Kind // KindSet, KindSetExpiry or KindDelete
	value    []byte
	expireMs int64
}

// durOp is one Apply: a single write or an atomic batch.
type durOp []durWrite

func (op durOp) apply(db *DB) error {
	if len(op) == 1 {
		w := op[0]
		switch w.kind {
		case base.KindSet:
			return db.Set([]byte(w.key), w.value, nil)
		case base.KindSetExpiry:
			return db.SetWithExpiry([]byte(w.key), w.value, time.UnixMilli(w.expireMs), nil)
		default:
			return db.Delete([]byte(w.key), nil)
		}
	}
	b := db.NewBatch()
	for _, w := range op {
		switch w.kind {
		case base.KindSet:
			b.Set([]byte(w.key), w.value)
		case base.KindSetExpiry:
			b.SetWithExpiry([]byte(w.key), w.value, time.UnixMilli(w.expireMs))
		default:
			b.Delete([]byte(w.key))
		}
	}
	return db.Apply(b, nil)
}

func durOwnedKey(g, j int) string { return fmt.Sprintf("o%02d-%03d", g, j) }
func durSharedKey(j int) string   { return fmt.Sprintf("s-%02d", j) }

// durGen generates goroutine g's operations. It is deterministic in (seed,
// g), which lets the kill test's parent regenerate what its child wrote.
type durGen struct {
	rng *rand.Rand
	g   int
	n   int
	// large makes about one value in fifty 16 KiB to 1 MiB long, for
	// value separation (the kill test's blob cycles).
	large bool
}

func newDurGen(seed uint64, g int) *durGen {
	return &durGen{rng: rand.New(rand.NewPCG(seed, uint64(g)+1)), g: g}
}

// next returns operation number gen.n: 15% a shared-key write, 25% a batch
// of 2 to 6 owned keys, the rest a single owned-key write.
func (gen *durGen) next() durOp {
	i := gen.n
	gen.n++
	switch r := gen.rng.IntN(100); {
	case r < 15:
		return durOp{gen.write(durSharedKey(gen.rng.IntN(durSharedKeys)), i)}
	case r < 40:
		n := 2 + gen.rng.IntN(5)
		op := make(durOp, 0, n)
		for _, j := range gen.rng.Perm(durOwnedKeys)[:n] {
			op = append(op, gen.write(durOwnedKey(gen.g, j), i))
		}
		return op
	default:
		return durOp{gen.write(durOwnedKey(gen.g, gen.rng.IntN(durOwnedKeys)), i)}
	}
}

// write makes a write whose value names its key, goroutine, operation and
// kind, so that each value is unique and a misplaced one is recognizable.
func (gen *durGen) write(key string, i int) durWrite {
	w := durWrite{key: key, kind: base.KindSet}
	mark := 's'
	switch r := gen.rng.IntN(100); {
	case r < 15:
		w.kind, mark = base.KindDelete, 'd'
	case r < 30:
		w.kind, mark = base.KindSetExpiry, 'x'
		w.expireMs = durNow.UnixMilli() + int64(1000*time.Hour/time.Millisecond) + int64(i)
	}
	if w.kind != base.KindDelete {
		v := fmt.Appendf(nil, "%s|g%d|i%d|%c|", key, gen.g, i, mark)
		// Random letters compress only so much, so the tables hold enough
		// bytes to fill several levels.
		for n := gen.rng.IntN(160); n > 0; n-- {
			v = append(v, byte('a'+gen.rng.IntN(26)))
		}
		if gen.large && gen.rng.IntN(50) == 0 {
			// A pattern of random letters, cheap to make at 1 MiB, and
			// whose prefix still names the write.
			chunk := fmt.Appendf(nil, "%016x", gen.rng.Uint64())
			for n := 16<<10 + gen.rng.IntN(1<<20-16<<10); len(v) < n; {
				v = append(v, chunk...)
			}
		}
		w.value = v
	}
	return w
}

// durEntry is a key's visible state: its value and expiry (0 for none).
type durEntry struct {
	value    []byte
	expireMs int64
}

func (e durEntry) String() string {
	v := e.value
	if len(v) > 40 {
		v = v[:40]
	}
	if e.expireMs != 0 {
		return fmt.Sprintf("%q (expires %d)", v, e.expireMs)
	}
	return fmt.Sprintf("%q", v)
}

func (e durEntry) equal(o durEntry) bool {
	return bytes.Equal(e.value, o.value) && e.expireMs == o.expireMs
}

// durState is a whole DB's visible state.
type durState map[string]durEntry

// entryOf is what w leaves visible; ok is false for a delete.
func entryOf(w durWrite) (durEntry, bool) {
	if w.kind == base.KindDelete {
		return durEntry{}, false
	}
	return durEntry{value: w.value, expireMs: w.expireMs}, true
}

// opStamp is when an operation started and when it was acknowledged (noAck
// if never), in the logical clock of its test.
type opStamp struct{ start, ack int64 }

// durHistory is what a set of writer goroutines did: ops[g][i] and its
// stamps[g][i]. Goroutine g only appends to its own slices, so writers need
// no lock; the checker reads them once the writers are done (or, in the kill
// test, once the child is dead).
type durHistory struct {
	ops    [][]durOp
	stamps [][]opStamp

	// The index below is built once by prepare, when the history is final.
	owned  map[string][]ownedWrite
	shared map[string][]sharedWrite
}

type ownedWrite struct {
	g, i int
	w    durWrite
}

type sharedWrite struct {
	g, i int
	w    durWrite
}

func newDurHistory(goroutines int) *durHistory {
	return &durHistory{ops: make([][]durOp, goroutines), stamps: make([][]opStamp, goroutines)}
}

// run has goroutine g start op, apply it and record the outcome; it
// returns Apply's error.
func (h *durHistory) run(db *DB, clock *atomic.Int64, g int, op durOp) error {
	h.ops[g] = append(h.ops[g], op)
	h.stamps[g] = append(h.stamps[g], opStamp{start: clock.Add(1), ack: noAck})
	err := op.apply(db)
	if err == nil {
		h.stamps[g][len(h.stamps[g])-1].ack = clock.Add(1)
	}
	return err
}

// prepare indexes the writes by key.
func (h *durHistory) prepare() {
	h.owned = map[string][]ownedWrite{}
	h.shared = map[string][]sharedWrite{}
	for g, ops := range h.ops {
		for i, op := range ops {
			for _, w := range op {
				if strings.HasPrefix(w.key, "s-") {
					h.shared[w.key] = append(h.shared[w.key], sharedWrite{g, i, w})
				} else {
					h.owned[w.key] = append(h.owned[w.key], ownedWrite{g, i, w})
				}
			}
		}
	}
}

// keys returns every key the history writes.
func (h *durHistory) keys() []string {
	if h == nil {
		return nil
	}
	return append(slices.Collect(maps.Keys(h.owned)), slices.Collect(maps.Keys(h.shared))...)
}

// check reports whether obs, the state of a DB recovered from a crash image
// taken between clock stamps c0 and c1, is one that the history allows when
// the DB held exactly base before the history began. A nil h allows only
// base itself.
func (h *durHistory) check(base, obs durState, c0, c1 int64) error {
	written := map[string]bool{}
	for _, k := range h.keys() {
		written[k] = true
	}
	for k, e := range base {
		if written[k] {
			continue
		}
		if o, ok := obs[k]; !ok {
			return fmt.Errorf("key %q, untouched since the last verified state, is missing (was %v)", k, e)
		} else if !o.equal(e) {
			return fmt.Errorf("key %q, untouched since the last verified state, holds %v, want %v", k, o, e)
		}
	}
	for k, o := range obs {
		if _, ok := base[k]; !ok && !written[k] {
			return fmt.Errorf("key %q = %v was never written", k, o)
		}
	}
	if h == nil {
		return nil
	}

	// lo[g] and hi[g] bound how many of g's operations the image holds.
	lo := make([]int, len(h.ops))
	hi := make([]int, len(h.ops))
	for g, st := range h.stamps {
		for i, s := range st {
			if s.ack < c0 {
				if lo[g] != i {
					return fmt.Errorf("goroutine %d: operation %d acknowledged before an earlier one", g, i)
				}
				lo[g] = i + 1
			}
			if s.start < c1 {
				hi[g] = i + 1
			}
		}
	}
	for k, ws := range h.shared {
		g, i, err := h.checkShared(k, ws, base, obs, c0, c1)
		if err != nil {
			return err
		}
		if g >= 0 {
			// The WAL is a log: if g's operation i survived, so did all
			// of g's operations before it.
			lo[g] = max(lo[g], i+1)
		}
	}
	byG := make([][]string, len(h.ops))
	for k, ws := range h.owned {
		byG[ws[0].g] = append(byG[ws[0].g], k)
	}
	for g, keys := range byG {
		if err := h.checkOwned(g, keys, base, obs, lo[g], hi[g]); err != nil {
			return err
		}
	}
	return nil
}

// ownedAt is owned key k's state after the first p operations of its
// goroutine.
func (h *durHistory) ownedAt(k string, p int, base durState) (durEntry, bool) {
	ws := h.owned[k]
	j := sort.Search(len(ws), func(j int) bool { return ws[j].i >= p })
	if j == 0 {
		e, ok := base[k]
		return e, ok
	}
	return entryOf(ws[j-1].w)
}

// checkOwned looks for a prefix length p in [lo, hi] of goroutine g's
// operations that explains every one of g's keys at once.
func (h *durHistory) checkOwned(g int, keys []string, base, obs durState, lo, hi int) error {
	if lo > hi {
		return fmt.Errorf("goroutine %d: the image holds operation %d, which had not started when the image was taken (%d had)", g, lo-1, hi)
	}
	slices.Sort(keys)
	var first error
	for p := lo; p <= hi; p++ {
		var err error
		for _, k := range keys {
			want, wantOK := h.ownedAt(k, p, base)
			got, gotOK := obs[k]
			if gotOK != wantOK || gotOK && !got.equal(want) {
				err = fmt.Errorf("goroutine %d: key %q = %s, want %s after its first %d operations (the image may hold %d to %d of them)%s",
					g, k, showEntry(got, gotOK), showEntry(want, wantOK), p, lo, hi, h.describeKey(k, obs))
				break
			}
		}
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func showEntry(e durEntry, ok bool) string {
	if !ok {
		return "absent"
	}
	return e.String()
}

// describeKey lists an owned key's writes, for failure messages.
func (h *durHistory) describeKey(k string, obs durState) string {
	var b strings.Builder
	b.WriteString("; its writes:")
	for _, w := range h.owned[k] {
		s := h.stamps[w.g][w.i]
		e, ok := entryOf(w.w)
		fmt.Fprintf(&b, "\n\top %d (%d keys, start %d ack %d): %s", w.i, len(h.ops[w.g][w.i]), s.start, s.ack, showEntry(e, ok))
		// A partly visible batch shows as other keys of the same batch
		// holding its values.
		if len(h.ops[w.g][w.i]) > 1 {
			for _, o := range h.ops[w.g][w.i] {
				oe, ook := obs[o.key]
				fmt.Fprintf(&b, "\n\t\tbatch key %q now %s", o.key, showEntry(oe, ook))
			}
		}
	}
	return b.String()
}

// checkShared checks a key that several goroutines write. It returns the
// goroutine and operation whose value the key holds (g = -1 when absent or
// unchanged since base).
func (h *durHistory) checkShared(k string, ws []sharedWrite, base, obs durState, c0, c1 int64) (int, int, error) {
	// A write w may be visible unless some write acknowledged before the
	// image started after w was acknowledged: that one is then ordered
	// after w and must have replaced it.
	latestAckedStart := int64(math.MinInt64)
	for _, w := range ws {
		if s := h.stamps[w.g][w.i]; s.ack < c0 {
			latestAckedStart = max(latestAckedStart, s.start)
		}
	}
	possible := func(w sharedWrite) bool {
		s := h.stamps[w.g][w.i]
		return s.start < c1 && s.ack >= latestAckedStart
	}
	got, gotOK := obs[k]
	baseOK := latestAckedStart == math.MinInt64
	if b, ok := base[k]; baseOK && gotOK == ok && (!ok || b.equal(got)) {
		return -1, 0, nil
	}
	for _, w := range ws {
		want, wantOK := entryOf(w.w)
		if wantOK == gotOK && (!gotOK || want.equal(got)) && possible(w) {
			if !gotOK {
				return -1, 0, nil
			}
			return w.g, w.i, nil
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "shared key %q = %s, which no write that may be last explains (image between stamps %d and %d); its writes:", k, showEntry(got, gotOK), c0, c1)
	if e, ok := base[k]; ok {
		fmt.Fprintf(&b, "\n\tbefore: %s", e)
	}
	for _, w := range ws {
		s := h.stamps[w.g][w.i]
		e, ok := entryOf(w.w)
		fmt.Fprintf(&b, "\n\tgoroutine %d op %d (start %d ack %d): %s", w.g, w.i, s.start, s.ack, showEntry(e, ok))
	}
	return 0, 0, errors.New(b.String())
}

// readDurState reads the whole visible state of db with an iterator. When
// thorough, it also scans backward and checks that Get agrees with the scan
// on every key scanned and on every key of extra (reporting absent ones as
// absent); otherwise it uses Get only for the expiry of values written with
// one, which is what the scan cannot see.
func readDurState(db *DB, extra []string, thorough bool) (durState, error) {
	st := durState{}
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		st[string(it.Key())] = durEntry{value: bytes.Clone(it.Value())}
	}
	n := len(st)
	if thorough {
		n = 0
	}
	for ok := thorough && it.Last(); ok; ok = it.Prev() {
		n++
		if e, found := st[string(it.Key())]; !found || !bytes.Equal(e.value, it.Value()) {
			it.Close()
			return nil, fmt.Errorf("reverse scan found %q = %q, forward scan %v (found %v)", it.Key(), it.Value(), e, found)
		}
	}
	err = errors.Join(it.Error(), it.Close())
	if err != nil {
		return nil, err
	}
	if n != len(st) {
		return nil, fmt.Errorf("reverse scan found %d keys, forward scan %d", n, len(st))
	}
	for k, e := range st {
		if !thorough && !bytes.Contains(e.value, []byte("|x|")) {
			continue
		}
		v, exp, err := db.GetWithExpiry([]byte(k))
		if err != nil || !bytes.Equal(v, e.value) {
			return nil, fmt.Errorf("Get(%q) = %q, %v; the scan found %q", k, v, err, e.value)
		}
		if !exp.IsZero() {
			e.expireMs = exp.UnixMilli()
			st[k] = e
		}
	}
	for _, k := range extra {
		if _, ok := st[k]; ok || !thorough {
			continue
		}
		if v, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("Get(%q) = %q, %v; the scan did not find it", k, v, err)
		}
	}
	return st, nil
}

// crasher is an errorfs injector that never fails anything: before chosen
// mutating filesystem operations it takes a CrashClone of mem, so crash
// images fall exactly between two operations, whichever goroutine (commit
// leader, flush, compaction, Close) runs them.
type crasher struct {
	mem   *vfs.MemFS
	clock *atomic.Int64
	ops   atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
	// next is the operation count before which to clone; 0: none.
	next int64
	// gap, when positive, re-arms next to a random count about gap
	// operations later after each clone.
	gap    int64
	phase  string
	points []crashPoint
}

// crashPoint is one crash image with the clock stamps around it.
type crashPoint struct {
	fs     *vfs.MemFS
	c0, c1 int64
	phase  string
	op     string
}

func newCrasher(mem *vfs.MemFS, clock *atomic.Int64, seed uint64) *crasher {
	return &crasher{mem: mem, clock: clock, rng: rand.New(rand.NewPCG(seed, 7))}
}

// armIn clones before the n-th mutating operation from now and labels it
// (and the random ones after it) with phase.
func (c *crasher) armIn(n int64, phase string) {
	c.mu.Lock()
	c.next = c.ops.Load() + n
	c.phase = phase
	c.mu.Unlock()
}

// stopRandom turns the random crash points off; an armed one stays.
func (c *crasher) stopRandom() {
	c.mu.Lock()
	c.gap = 0
	c.mu.Unlock()
}

// randomGap re-arms the random crash points, about gap operations apart.
func (c *crasher) randomGap(gap int64, phase string) {
	c.mu.Lock()
	c.gap, c.phase = gap, phase
	c.next = c.ops.Load() + 1 + c.rng.Int64N(2*gap)
	c.mu.Unlock()
}

func (c *crasher) MaybeError(op errorfs.Op, path string) error {
	switch op {
	case errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpClose,
		errorfs.OpRemove, errorfs.OpRename, errorfs.OpMkdirAll, errorfs.OpLock, errorfs.OpLink:
	default:
		return nil
	}
	n := c.ops.Add(1)
	c.mu.Lock()
	if c.next == 0 || n < c.next {
		c.mu.Unlock()
		return nil
	}
	c.next = 0
	if c.gap > 0 {
		c.next = n + 1 + c.rng.Int64N(2*c.gap)
	}
	phase := c.phase
	c.mu.Unlock()

	c0 := c.clock.Add(1)
	img := c.mem.CrashClone()
	c1 := c.clock.Add(1)
	c.mu.Lock()
	c.points = append(c.points, crashPoint{fs: img, c0: c0, c1: c1, phase: phase, op: op.String() + " " + path})
	c.mu.Unlock()
	return nil
}

// checkImage runs Check on a crash image: whatever a crash leaves is a DB
// that Check, like Open, accepts, with at most warnings about what Open
// repairs. An image from before the DB existed is fine too.
func checkImage(fs vfs.FS, dir string) error {
	r, err := Check(dir, &Options{FS: fs})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return fmt.Errorf("Check: %w", err)
	}
	return nil
}

// crashTest runs rounds of a concurrent workload, each on the image that
// the previous round's verification left, until enough crash points are
// checked.
type crashTest struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	clock atomic.Int64

	// gap is the mean distance, in mutating filesystem operations,
	// between random crash points of a round.
	gap int64
	// points counts SyncAlways crash points, by phase in byPhase;
	// noSyncPoints the SyncNone ones; nested the crashes during recovery.
	points       int
	noSyncPoints int
	// blobPoints counts the crash points just before an operation on a
	// blob file; blobGCRuns the compactions that relocated blob values.
	blobPoints int
	blobGCRuns int64
	nested     int
	byPhase    map[string]int
}

const (
	crashWriters      = 4
	crashOpsPerWriter = 150
	crashPointsPerRnd = 25
	// crashNestedWrites is how many writes follow the reopen of a crash
	// image before it is closed, in the crash-during-recovery check.
	crashNestedWrites = 12
)

// crashPointTarget is the number of SyncAlways crash points a run checks:
// the 1,000 issue 2 asks for without -short, under the race detector too;
// 100 under -short, which CI runs. Either way the run goes on until it has
// had a SyncNone round (every fifth), so -short covers that mode too.
func crashPointTarget() int {
	if testing.Short() {
		return 100
	}
	return 1000
}

func TestCrash(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = defaultCrashSeed
	}
	ct := &crashTest{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), gap: 40, byPhase: map[string]int{}}
	t.Logf("seed %d (replay with -crash.seed=%d; goroutine scheduling still varies)", seed, seed)
	start := time.Now()
	mem, state := vfs.NewMem(), durState{}
	target := crashPointTarget()
	for round := 0; ct.points < target || ct.noSyncPoints == 0; round++ {
		mem, state = ct.round(round, mem, state)
	}
	t.Logf("%d SyncAlways crash points (%v), %d SyncNone crash points (%d of all of them before an operation on a blob file; %d blob GC runs), %d crash points during recovery of a crash image, in %v",
		ct.points, ct.byPhase, ct.noSyncPoints, ct.blobPoints, ct.blobGCRuns, ct.nested, time.Since(start).Round(time.Millisecond))
	if ct.blobPoints == 0 {
		t.Errorf("no crash point fell before an operation on a blob file")
	}
}

// fail stops the test with the seed and the crash image's files.
func (ct *crashTest) fail(p *crashPoint, format string, args ...any) {
	ct.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if p != nil {
		msg = fmt.Sprintf("crash point (phase %s, before %s, stamps %d-%d): %s\nfiles of the image:\n%s", p.phase, p.op, p.c0, p.c1, msg, p.fs)
	}
	ct.t.Fatalf("seed %d: %s", ct.seed, msg)
}

// round opens the DB on mem, whose state is base, runs the concurrent
// workload with Flush and Compact calls mixed in and closes it, taking
// crash images throughout; then it verifies every image and the final
// state. It returns a verified filesystem to continue from and its state.
func (ct *crashTest) round(round int, mem *vfs.MemFS, base durState) (*vfs.MemFS, durState) {
	cr := newCrasher(mem, &ct.clock, ct.seed+uint64(round)<<20)
	fs := errorfs.Wrap(mem, cr)
	cr.armIn(1+ct.rng.Int64N(30), "open")
	// Every fifth round runs without fsyncs. A crash may then lose any
	// acknowledged write, but what survives must still be a prefix of each
	// writer's operations with no batch split.
	mode := SyncAlways
	if round%5 == 4 {
		mode = SyncNone
	}
	opts := durOptions(fs, mode)
	if round%3 == 2 {
		// Every third round separates about half the values (they are
		// 16 to 190 bytes long), so crash points fall inside blob
		// appends and syncs, and later rounds read what it wrote with
		// separation off.
		opts.ValueThreshold = 96
		// Files of a few dozen values, so garbage collection runs, and
		// crash points fall inside it too.
		opts.blobFileSize = 4 << 10
	} else {
		opts.ValueThreshold = -1
	}
	db, err := Open("/db", opts)
	if err != nil {
		ct.fail(nil, "round %d: Open: %v", round, err)
	}
	cr.randomGap(ct.gap, "write")
	opsBefore := cr.ops.Load()

	h := newDurHistory(crashWriters)
	var wg sync.WaitGroup
	var ops atomic.Int64 // the writers' operations so far
	errs := make(chan error, crashWriters+1)
	for g := range crashWriters {
		wg.Go(func() {
			gen := newDurGen(ct.seed+uint64(round)<<8, g)
			for range crashOpsPerWriter {
				if err := h.run(db, &ct.clock, g, gen.next()); err != nil {
					errs <- fmt.Errorf("writer %d: %w", g, err)
					return
				}
				ops.Add(1)
			}
		})
	}
	done := make(chan struct{})
	var chaos sync.WaitGroup
	chaosRng := rand.New(rand.NewPCG(ct.seed, uint64(round)))
	chaos.Go(func() {
		for last := int64(0); ; {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(chaosRng.IntN(3000)) * time.Microsecond):
			}
			// And a few writes since the last flush or compaction: on a
			// starved machine the writers crawl while the timer does not,
			// and a flush every few milliseconds would pile up tiny files
			// whose recovery every nested crash point replays (a CI run
			// spent 11 minutes of CPU in one TestCrash that way).
			for next := last + 1 + chaosRng.Int64N(20); ops.Load() < next; {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
			last = ops.Load()
			var err error
			if chaosRng.IntN(3) == 0 {
				cr.armIn(1+chaosRng.Int64N(15), "compact")
				lo := durOwnedKey(chaosRng.IntN(crashWriters), chaosRng.IntN(durOwnedKeys))
				hi := durOwnedKey(chaosRng.IntN(crashWriters), chaosRng.IntN(durOwnedKeys))
				if lo > hi {
					lo, hi = hi, lo
				}
				err = db.Compact([]byte(lo), []byte(hi))
			} else {
				cr.armIn(1+chaosRng.Int64N(8), "flush")
				err = db.Flush()
			}
			cr.randomGap(ct.gap, "write")
			if err != nil {
				errs <- fmt.Errorf("flush/compact: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(done)
	chaos.Wait()
	close(errs)
	for err := range errs {
		ct.fail(nil, "round %d: %v", round, err)
	}
	cr.stopRandom()
	cr.armIn(1+ct.rng.Int64N(6), "close")
	ct.blobGCRuns += db.Metrics().Blob.GCRuns
	if err := db.Close(); err != nil {
		ct.fail(nil, "round %d: Close: %v", round, err)
	}
	// Aim the next round at crashPointsPerRnd random points.
	ct.gap = max(4, (cr.ops.Load()-opsBefore)/crashPointsPerRnd)
	h.prepare()

	end := ct.clock.Add(1)
	final := crashPoint{fs: mem, c0: end, c1: end, phase: "after close", op: "nothing"}
	next, nextState := mem, ct.verify(&final, base, h, false)
	for i := range cr.points {
		p := &cr.points[i]
		// The race detector makes the run several times slower; checking
		// recovery from a crash during recovery for every other image keeps
		// the CI run short while still covering hundreds of them.
		if mode == SyncNone {
			p.c0 = math.MinInt64
			p.phase = "syncnone " + p.phase
			ct.noSyncPoints++
		} else {
			ct.points++
			ct.byPhase[p.phase]++
		}
		if strings.HasSuffix(p.op, ".blob") {
			ct.blobPoints++
		}
		st := ct.verify(p, base, h, !raceEnabled || i%2 == 0)
		if ct.rng.IntN(len(cr.points)) == 0 {
			next, nextState = p.fs, st
		}
	}
	return next, nextState
}

// verify opens the image of p, which must succeed, checks its state against
// base and h, closes it and returns the state. With nested, it also runs
// the crash-during-recovery check on a copy of the image.
func (ct *crashTest) verify(p *crashPoint, base durState, h *durHistory, nested bool) durState {
	var copyFS *vfs.MemFS
	if nested {
		// Every byte of a crash image is durable, so its CrashClone is an
		// exact copy.
		copyFS = p.fs.CrashClone()
	}
	thorough := p.phase == "after close" || ct.rng.IntN(4) == 0
	if thorough {
		if err := checkImage(p.fs, "/db"); err != nil {
			ct.fail(p, "%v", err)
		}
	}
	counter := newCrasher(p.fs, &ct.clock, 0)
	db, err := Open("/db", durOptions(errorfs.Wrap(p.fs, counter), SyncAlways))
	if err != nil {
		ct.fail(p, "Open: %v", err)
	}
	openOps := counter.ops.Load()
	st, err := readDurState(db, h.keys(), thorough)
	if err != nil {
		ct.fail(p, "reading the recovered DB: %v", err)
	}
	if err := h.check(base, st, p.c0, p.c1); err != nil {
		ct.fail(p, "%v", err)
	}
	if err := db.Close(); err != nil {
		ct.fail(p, "Close: %v", err)
	}
	if nested {
		ct.crashDuringRecovery(p, copyFS, st, openOps)
	}
	return st
}

// crashDuringRecovery reopens an exact copy of p's image, crashes it at a
// random point of its Open, a few writes and Close, and checks that the
// image of that second crash recovers to want, the state the first
// recovery produced, plus a prefix of the writes.
func (ct *crashTest) crashDuringRecovery(p *crashPoint, mem *vfs.MemFS, want durState, openOps int64) {
	cr := newCrasher(mem, &ct.clock, ct.rng.Uint64())
	cr.armIn(1+ct.rng.Int64N(openOps+2*crashNestedWrites+4), "recovery")
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, cr), SyncAlways))
	if err != nil {
		ct.fail(p, "reopening a copy of the image: %v", err)
	}
	st, err := readDurState(db, nil, false)
	if err != nil {
		ct.fail(p, "reading a copy of the image: %v", err)
	}
	if err := (*durHistory)(nil).check(want, st, 0, 0); err != nil {
		ct.fail(p, "a copy of the image recovers differently: %v", err)
	}
	h := newDurHistory(1)
	gen := newDurGen(ct.rng.Uint64(), 0)
	for range crashNestedWrites {
		if err := h.run(db, &ct.clock, 0, gen.next()); err != nil {
			ct.fail(p, "writing after recovery: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		ct.fail(p, "closing the recovered copy: %v", err)
	}
	h.prepare()
	for i := range cr.points {
		q := &cr.points[i]
		q.phase = "recovery of " + p.phase + " image, " + q.phase
		ct.verify(q, want, h, false)
		ct.nested++
	}
}

// TestCrashDuringCreate crashes the very first Open of a DB before each of
// its filesystem operations in turn: Open must accept every image, and
// Check must accept every image that holds a DB.
func TestCrashDuringCreate(t *testing.T) {
	n := crashEachOp(t, "create", vfs.NewMem, func(img crashPoint) {
		if err := checkImage(img.fs, "/db"); err != nil {
			t.Errorf("crash before %s: %v\nfiles:\n%s", img.op, err, img.fs)
		}
		db, err := Open("/db", durOptions(img.fs, SyncAlways))
		if err != nil {
			t.Fatalf("crash before %s: Open: %v\nfiles:\n%s", img.op, err, img.fs)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("checked crashes before each of the %d operations of a first Open and Close", n)
}

// crashEachOp opens and closes a DB on a fresh filesystem from newFS,
// crashing it before its n-th filesystem operation, for n = 1, 2, … until
// an Open and Close run to the end; check gets each crash image. It
// returns how many operations the Open and Close made.
func crashEachOp(t *testing.T, phase string, newFS func() *vfs.MemFS, check func(img crashPoint)) int64 {
	t.Helper()
	var clock atomic.Int64
	for n := int64(1); ; n++ {
		mem := newFS()
		cr := newCrasher(mem, &clock, 0)
		cr.armIn(n, phase)
		db := openTestDB(t, "/db", durOptions(errorfs.Wrap(mem, cr), SyncAlways))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if len(cr.points) == 0 {
			return n - 1
		}
		check(cr.points[0])
	}
}
