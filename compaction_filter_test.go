package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// The compaction filter tests use a miniature of the server's collections
// (server/collection.go): "m" + name holds the collection's generation,
// and its elements are "e" + name + generation + "/" + element. Names are
// two bytes and generations eight digits, so a key splits without a
// separator. Generations never repeat, so an element whose name has no
// metadata, or metadata with another generation, is dead for good: the
// rule collFilter drops by, reading the filter's state.

const collGenLen = 8

func collMetaKey(name string) string { return "m" + name }

func collElemKey(name string, gen int, elem string) string {
	return fmt.Sprintf("e%s%0*d/%s", name, collGenLen, gen, elem)
}

// collElemGen splits an element key into the metadata key it depends on
// and its generation; ok is false for any other key.
func collElemGen(key []byte) (meta, gen string, ok bool) {
	if len(key) < 1+2+collGenLen || key[0] != 'e' {
		return "", "", false
	}
	return collMetaKey(string(key[1:3])), string(key[3 : 3+collGenLen]), true
}

// collFilter returns the filter factory of the scheme; asked counts the
// questions, so a test knows the filter ran.
func collFilter(asked *atomic.Int64) func(Reader) CompactionFilter {
	return func(state Reader) CompactionFilter {
		return CompactionFilterFunc(func(key []byte) bool {
			meta, gen, ok := collElemGen(key)
			if !ok {
				return false
			}
			asked.Add(1)
			v, err := state.Get([]byte(meta))
			if errors.Is(err, ErrNotFound) {
				return true
			}
			return err == nil && string(v) != gen
		})
	}
}

// collModel is what the DB must hold: vals has every key's last written
// value (a dead element's too, until it is deleted), gens each live
// collection's generation.
type collModel struct {
	vals map[string]string
	gens map[string]int
}

func (m collModel) clone() collModel {
	return collModel{vals: maps.Clone(m.vals), gens: maps.Clone(m.gens)}
}

// live says whether key must read exactly as the model says; a dead
// element may read as its last value or as absent.
func (m collModel) live(key string) bool {
	meta, gen, ok := collElemGen([]byte(key))
	if !ok {
		return true
	}
	g, exists := m.gens[meta[1:]]
	return exists && fmt.Sprintf("%0*d", collGenLen, g) == gen
}

// check compares what a reader holds (got, every key and value) with the
// model; reclaimed says dead elements must be gone.
func (m collModel) check(got map[string]string, reclaimed bool) error {
	for _, k := range slices.Sorted(maps.Keys(m.vals)) {
		want := m.vals[k]
		v, ok := got[k]
		switch {
		case m.live(k) && (!ok || v != want):
			return fmt.Errorf("live key %q reads %q (found %v), want %q", k, v, ok, want)
		case !m.live(k) && ok && v != want:
			return fmt.Errorf("dead key %q reads %q, want %q or nothing", k, v, want)
		case !m.live(k) && ok && reclaimed:
			return fmt.Errorf("dead key %q still reads %q after a full compaction", k, v)
		}
	}
	for k, v := range got {
		if _, ok := m.vals[k]; !ok {
			return fmt.Errorf("key %q reads %q, never written or deleted", k, v)
		}
	}
	return nil
}

// readAll returns every key and value r holds.
func readAll(r Reader) (map[string]string, error) {
	it, err := r.NewIter(nil)
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	return got, it.Close()
}

// collWorkload drives the scheme: each call to step does one random write
// to the DB and the model.
type collWorkload struct {
	rng     *rand.Rand
	model   collModel
	nextGen int
	tag     int
	bigVals bool // some values large enough to be separated
}

func newCollWorkload(seed uint64, bigVals bool) *collWorkload {
	return &collWorkload{
		rng:     rand.New(rand.NewPCG(seed, 11)),
		model:   collModel{vals: map[string]string{}, gens: map[string]int{}},
		nextGen: 1,
		bigVals: bigVals,
	}
}

func (w *collWorkload) name() string { return fmt.Sprintf("c%d", w.rng.IntN(8)) }

func (w *collWorkload) value() string {
	w.tag++
	v := fmt.Sprintf("v%d-", w.tag)
	if w.bigVals && w.rng.IntN(4) == 0 {
		return v + strings.Repeat("x", 100+w.rng.IntN(200))
	}
	return v
}

// step applies one random write and returns its description.
func (w *collWorkload) step(db *DB) (string, error) {
	name := w.name()
	gen, exists := w.model.gens[name]
	b := db.NewBatch()
	var desc string
	switch op := w.rng.IntN(10); {
	case op < 2 || !exists && op < 6:
		// A new collection, replacing any old one, with its first elements
		// in the same batch, as the server writes them.
		gen = w.nextGen
		w.nextGen++
		w.model.gens[name] = gen
		b.Set([]byte(collMetaKey(name)), fmt.Appendf(nil, "%0*d", collGenLen, gen))
		w.model.vals[collMetaKey(name)] = fmt.Sprintf("%0*d", collGenLen, gen)
		n := 1 + w.rng.IntN(20)
		for range n {
			k, v := collElemKey(name, gen, fmt.Sprint(w.rng.IntN(40))), w.value()
			b.Set([]byte(k), []byte(v))
			w.model.vals[k] = v
		}
		desc = fmt.Sprintf("create %s gen %d with %d writes", name, gen, n)
	case !exists:
		k, v := fmt.Sprintf("p%d", w.rng.IntN(50)), w.value()
		b.Set([]byte(k), []byte(v))
		w.model.vals[k] = v
		desc = "set " + k
	case op < 6:
		k, v := collElemKey(name, gen, fmt.Sprint(w.rng.IntN(40))), w.value()
		b.Set([]byte(k), []byte(v))
		w.model.vals[k] = v
		desc = "set element " + k
	case op < 8:
		k := collElemKey(name, gen, fmt.Sprint(w.rng.IntN(40)))
		b.Delete([]byte(k))
		delete(w.model.vals, k)
		desc = "delete element " + k
	default:
		// Deleting the metadata kills every element at once.
		b.Delete([]byte(collMetaKey(name)))
		delete(w.model.vals, collMetaKey(name))
		delete(w.model.gens, name)
		desc = "drop " + name
	}
	return desc, db.Apply(b, nil)
}

// TestCompactionFilterModel runs random writes of the scheme with the
// filter installed, interleaved with reads, snapshots, flushes,
// compactions and reopens, and checks the filter's promises: live keys
// always read exactly; a dead element reads as its last value or not at
// all; a snapshot reads exactly what was live when it was taken, however
// many compactions dropped it since; and once every snapshot is closed, a
// full compaction leaves no dead element behind.
func TestCompactionFilterModel(t *testing.T) {
	steps := 8000
	if testing.Short() {
		steps = 1000
	}
	for i, cfg := range []struct {
		name string
		opts Options
	}{
		{"inline", modelTinyOptions()},
		{"blob", func() Options { o := modelTinyOptions(); o.ValueThreshold = 64; o.blobFileSize = 16 << 10; return o }()},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			seed := uint64(9100 + i)
			t.Logf("seed %d", seed)
			var asked atomic.Int64
			opts := cfg.opts
			opts.FS = vfs.NewMem()
			opts.Logger = slog.New(slog.DiscardHandler)
			opts.NewCompactionFilter = collFilter(&asked)
			db := openTestDB(t, "/db", &opts)
			w := newCollWorkload(seed, opts.ValueThreshold > 0)
			type snap struct {
				s     *Snapshot
				model collModel
			}
			var snaps []snap
			var history []string
			var filtered, reclaims int64
			fail := func(format string, args ...any) {
				t.Helper()
				if len(history) > 30 {
					history = history[len(history)-30:]
				}
				t.Fatalf("seed %d: %s\nlast operations:\n  %s", seed, fmt.Sprintf(format, args...), strings.Join(history, "\n  "))
			}
			for step := range steps {
				var desc string
				switch op := w.rng.IntN(100); {
				case op < 70:
					var err error
					if desc, err = w.step(db); err != nil {
						fail("%s: %v", desc, err)
					}
				case op < 80:
					desc = "check latest"
					got, err := readAll(db)
					if err == nil {
						err = w.model.check(got, false)
					}
					if err != nil {
						fail("step %d, latest: %v", step, err)
					}
				case op < 85:
					if len(snaps) < 3 {
						desc = "snapshot"
						snaps = append(snaps, snap{db.NewSnapshot(), w.model.clone()})
						break
					}
					j := w.rng.IntN(len(snaps))
					desc = fmt.Sprintf("check and close snapshot %d", j)
					got, err := readAll(snaps[j].s)
					if err == nil {
						err = snaps[j].model.check(got, false)
					}
					if err != nil {
						fail("step %d, snapshot %d: %v", step, j, err)
					}
					snaps[j].s.Close()
					snaps = slices.Delete(snaps, j, j+1)
				case op < 92:
					desc = "flush"
					if err := db.Flush(); err != nil {
						fail("Flush: %v", err)
					}
				case op < 98:
					lo, hi := []byte(collElemKey(w.name(), 0, "")), []byte(collElemKey(w.name(), 1<<30, ""))
					if bytes.Compare(lo, hi) > 0 {
						lo, hi = hi, lo
					}
					desc = fmt.Sprintf("Compact(%q, %q)", lo, hi)
					if err := db.Compact(lo, hi); err != nil {
						fail("%s: %v", desc, err)
					}
				case op < 99 || step == steps-1:
					// With every snapshot closed, a full compaction shows
					// each element to the filter with no reader holding it.
					desc = "close snapshots, Compact(nil, nil), check reclaimed"
					for _, s := range snaps {
						s.s.Close()
					}
					snaps = nil
					if err := db.Compact(nil, nil); err != nil {
						fail("Compact: %v", err)
					}
					got, err := readAll(db)
					if err == nil {
						err = w.model.check(got, true)
					}
					if err != nil {
						fail("step %d, after a full compaction: %v", step, err)
					}
					// The tables point only to the live separated values
					// now: the dropped ones left the blob references.
					var live int64
					for k, v := range got {
						if opts.ValueThreshold > 0 && len(v) >= opts.ValueThreshold {
							live += blobRecordBytes(k, v)
						}
					}
					if ref := db.Metrics().Blob.ReferencedBytes; ref != live {
						fail("step %d, after a full compaction: tables reference %d blob bytes, the live records are %d", step, ref, live)
					}
					reclaims++
				default:
					desc = "reopen"
					for _, s := range snaps {
						s.s.Close()
					}
					snaps = nil
					filtered += db.Metrics().Compaction.Filtered
					if err := db.Close(); err != nil {
						fail("Close: %v", err)
					}
					db = openTestDB(t, "/db", &opts)
				}
				history = append(history, fmt.Sprintf("%d: %s", step, desc))
			}
			for _, s := range snaps {
				s.s.Close()
			}
			filtered += db.Metrics().Compaction.Filtered
			t.Logf("%d steps, %d full-compaction checks; the filter was asked %d times and dropped %d entries",
				steps, reclaims, asked.Load(), filtered)
			if reclaims == 0 || filtered == 0 {
				t.Fatalf("the run checked %d full compactions and the filter dropped %d entries: it tested nothing", reclaims, filtered)
			}
		})
	}
}

// TestCompactionFilterCrash crashes a DB whose filter drops entries while
// the scheme's writes, flushes and compactions run, at random filesystem
// operations, on the in-memory filesystem that loses every unsynced byte.
// Each crash image must pass Check, open, and read as the model after the
// acknowledged writes (plus the one in flight, if any): no live key lost
// or changed by a filtered compaction cut short. Some images are then
// compacted in full, which must reclaim every dead element.
func TestCompactionFilterCrash(t *testing.T) {
	steps, target := 1500, 150
	if testing.Short() {
		steps, target = 500, 40
	}
	seed := uint64(5150)
	t.Logf("seed %d", seed)
	var clock atomic.Int64
	var asked atomic.Int64
	mem := vfs.NewMem()
	cr := newCrasher(mem, &clock, seed)
	cr.randomGap(int64(30), "filter")
	optsFor := func(fs vfs.FS) *Options {
		o := durOptions(fs, SyncAlways)
		o.ValueThreshold = 64
		o.blobFileSize = 16 << 10
		o.NewCompactionFilter = collFilter(&asked)
		return o
	}
	db := openTestDB(t, "/db", optsFor(errorfs.Wrap(mem, cr)))
	w := newCollWorkload(seed, true)
	// states[k] is the model after k steps; ends[k] the clock after
	// step k was acknowledged, starts[k] before it began (both 1-based).
	states := []collModel{w.model.clone()}
	starts, ends := []int64{0}, []int64{0}
	for k := 1; k <= steps; k++ {
		starts = append(starts, clock.Add(1))
		desc := "compact"
		var err error
		switch op := w.rng.IntN(50); {
		case op == 0:
			err = db.Compact(nil, nil)
		case op < 3:
			lo, hi := collElemKey(w.name(), 0, ""), collElemKey(w.name(), 1<<30, "")
			err = db.Compact([]byte(min(lo, hi)), []byte(max(lo, hi)))
		default:
			desc, err = w.step(db)
		}
		if err != nil {
			t.Fatalf("step %d, %s: %v", k, desc, err)
		}
		ends = append(ends, clock.Add(1))
		states = append(states, w.model.clone())
	}
	filtered := db.Metrics().Compaction.Filtered
	cr.stopRandom()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if filtered == 0 || len(cr.points) < target {
		t.Fatalf("the filter dropped %d entries and the run took %d crash images, want some and %d", filtered, len(cr.points), target)
	}
	for i, p := range cr.points {
		// Steps acknowledged before the image began are in it; those
		// that started before it was complete may be. That can be more
		// than one: on a loaded machine the goroutine taking the image
		// can be descheduled between c0 and the clone while the workload
		// acknowledges several steps.
		acked := 0
		for acked+1 <= steps && ends[acked+1] < p.c0 {
			acked++
		}
		started := acked
		for started+1 <= steps && starts[started+1] < p.c1 {
			started++
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, crash image %d (before %s, %d steps acknowledged, %d more started): %s",
				seed, i, p.op, acked, started-acked, fmt.Sprintf(format, args...))
		}
		if err := checkImage(p.fs, "/db"); err != nil {
			fail("%v", err)
		}
		img, err := Open("/db", optsFor(p.fs))
		if err != nil {
			fail("Open: %v", err)
		}
		got, err := readAll(img)
		if err != nil {
			fail("read: %v", err)
		}
		want := states[acked]
		err = want.check(got, false)
		for k := acked + 1; err != nil && k <= started; k++ {
			if states[k].check(got, false) == nil {
				want, err = states[k], nil
			}
		}
		if err != nil {
			fail("%v", err)
		}
		if i%8 == 0 {
			if err := img.Compact(nil, nil); err != nil {
				fail("Compact: %v", err)
			}
			if got, err = readAll(img); err == nil {
				err = want.check(got, true)
			}
			if err != nil {
				fail("after a full compaction of the recovered DB: %v", err)
			}
		}
		if err := img.Close(); err != nil {
			fail("Close: %v", err)
		}
	}
	t.Logf("%d steps, %d crash images checked; the filter was asked %d times and dropped %d entries before the crashes",
		steps, len(cr.points), asked.Load(), filtered)
}

// TestCompactionFilterReclaims deletes the metadata of a collection of
// 20,000 elements (5,000 under -short), half of them with separated values, and checks that a
// Compact of the element range gives the disk space back: the tables
// shrink to a few blocks and the blob files go away.
func TestCompactionFilterReclaims(t *testing.T) {
	var asked atomic.Int64
	opts := durOptions(vfs.NewMem(), SyncNone)
	opts.ValueThreshold = 512
	opts.blobFileSize = 64 << 10
	opts.NewCompactionFilter = collFilter(&asked)
	db := openTestDB(t, "/db", opts)
	n := 20000
	if testing.Short() {
		n = 5000
	}
	value := func(i int) []byte { return bytes.Repeat([]byte{'v'}, 100+(i%2)*1000) }
	b := db.NewBatch()
	b.Set([]byte(collMetaKey("c1")), fmt.Appendf(nil, "%0*d", collGenLen, 1))
	for i := range n {
		b.Set([]byte(collElemKey("c1", 1, fmt.Sprintf("%06d", i))), value(i))
		if b.Count() == 1000 {
			if err := db.Apply(b, nil); err != nil {
				t.Fatal(err)
			}
			b = db.NewBatch()
		}
	}
	if err := db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	lo, hi := []byte(collElemKey("c1", 0, "")), []byte(collElemKey("c1", 2, ""))
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	usage := func() (tables, blobs int64) {
		m := db.Metrics()
		for _, l := range m.Levels {
			tables += int64(l.Bytes)
		}
		return tables, m.Blob.Bytes
	}
	tablesBefore, blobsBefore := usage()
	if err := db.Delete([]byte(collMetaKey("c1")), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(lo, hi); err != nil {
		t.Fatal(err)
	}
	tablesAfter, blobsAfter := usage()
	m := db.Metrics()
	t.Logf("%d elements: tables %d -> %d bytes, blob files %d -> %d bytes; %d entries filtered",
		n, tablesBefore, tablesAfter, blobsBefore, blobsAfter, m.Compaction.Filtered)
	if m.Compaction.Filtered < int64(n) {
		t.Errorf("the filter dropped %d entries, want at least %d", m.Compaction.Filtered, n)
	}
	if tablesAfter > tablesBefore/50 || blobsAfter > blobsBefore/10 {
		t.Errorf("reclaiming left tables of %d bytes (from %d) and blob files of %d bytes (from %d)",
			tablesAfter, tablesBefore, blobsAfter, blobsBefore)
	}
	it, err := db.NewIter(&IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("element %q survived", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
