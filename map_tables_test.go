//go:build unix

package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestMapTables runs writes, overwrites and deletes against a map on
// the OS filesystem with MapTables, and with a MapBudget that maps only
// some tables, with flushes and compactions every few dozen writes (so
// tables are mapped, read and unmapped all the time), checking every key
// after each round and again after a reopen, and with a budget that the
// budget is never overspent and is given back whole.
func TestMapTables(t *testing.T) {
	t.Run("all", func(t *testing.T) { testMapTables(t, true, -1) })
	t.Run("budget", func(t *testing.T) { testMapTables(t, false, 8<<10) })
}

func testMapTables(t *testing.T, mapAll bool, budget int64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := t.TempDir()
	opts := modelTinyOptions()
	opts.FS, opts.MapTables, opts.MapBudget = vfs.Default, mapAll, budget
	// Reads are under test: an fsync per write (SyncAlways) on the OS
	// filesystem took most of the test's time on a busy disk.
	opts.Sync = SyncNone
	db, err := Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	want := map[string][]byte{}
	sawMapped, sawUnmapped := false, false
	check := func(round int) {
		t.Helper()
		if budget > 0 {
			mapped, unmapped := checkMapBudget(t, db, budget)
			sawMapped, sawUnmapped = sawMapped || mapped > 0, sawUnmapped || unmapped > 0
		}
		for i := range 500 {
			k := fmt.Appendf(nil, "key-%04d", i)
			v, err := db.Get(k)
			w, ok := want[string(k)]
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("round %d: Get(%s) = %q, %v; want not found", round, k, v, err)
			case ok && (err != nil || !bytes.Equal(v, w)):
				t.Fatalf("round %d: Get(%s) = %q, %v; want %q", round, k, v, err, w)
			}
		}
	}
	for round := range 20 {
		for range 200 {
			k := fmt.Appendf(nil, "key-%04d", rng.IntN(500))
			if rng.IntN(5) == 0 {
				if err := db.Delete(k, nil); err != nil {
					t.Fatal(err)
				}
				delete(want, string(k))
				continue
			}
			v := bytes.Repeat(fmt.Appendf(nil, "%d-%d.", round, rng.IntN(1000)), 1+rng.IntN(20))
			if err := db.Set(k, v, nil); err != nil {
				t.Fatal(err)
			}
			want[string(k)] = v
		}
		if round%5 == 4 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		check(round)
	}
	if budget > 0 && !(sawMapped && sawUnmapped) {
		t.Fatalf("budget of %d bytes: saw mapped tables %v, unmapped %v; want both", budget, sawMapped, sawUnmapped)
	}
	tables := db.tables
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if left := tables.mapLeft.Load(); budget > 0 && left != budget {
		t.Fatalf("after Close %d bytes of the map budget are left, want all %d", left, budget)
	}
	if db, err = Open(dir, &opts); err != nil {
		t.Fatal(err)
	}
	check(-1)
}

// checkMapBudget checks, once no compaction runs (a table being opened
// has taken its share but not yet recorded it), that the open readers
// hold, between them, what the budget lacks, and that each holds some
// exactly when it is mapped; it returns how many open readers are mapped
// and unmapped.
func checkMapBudget(t *testing.T, db *DB, budget int64) (mapped, unmapped int) {
	t.Helper()
	waitFor(t, "compactions to finish", func() bool { return db.Metrics().Compaction.Running == 0 })
	tc := db.tables
	tc.mu.Lock()
	defer tc.mu.Unlock()
	held := int64(0)
	for num, e := range *tc.readers.Load() {
		e.once.Do(func() {})
		if e.r == nil {
			continue
		}
		if e.r.Mapped() != (e.budgeted > 0) {
			t.Fatalf("table %d: mapped %v but holds %d bytes of the budget", num, e.r.Mapped(), e.budgeted)
		}
		if e.r.Mapped() {
			mapped++
		} else {
			unmapped++
		}
		held += e.budgeted
	}
	if left := tc.mapLeft.Load(); left < 0 || left+held != budget {
		t.Fatalf("map budget %d: %d left and %d held by open readers", budget, left, held)
	}
	return mapped, unmapped
}
