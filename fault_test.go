package lsmgo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// The fault test injects ENOSPC and EIO, with torn writes on or off, into
// one kind of filesystem operation at a time, after a random number of them
// have succeeded, while a DB recovers, takes concurrent writes, flushes and
// compacts. It checks that a failure surfaces as an error (and leaves the DB
// read-only, with reads still correct), that no acknowledged write is lost
// and no batch is partly visible, and that once the fault is gone the DB
// reopens, on the same filesystem and on a crash image of it.

var faultSeed = flag.Uint64("fault.seed", 0, "seed of TestFaults (0: the fixed default)")

const (
	defaultFaultSeed = 20240613
	faultWriters     = 3
	faultOpsPerWrite = 120
	// faultSetupOps are written, fault-free, before the faulty session, so
	// that its Open has a WAL to replay and tables to keep.
	faultSetupOps = 150
)

// faultTarget is a kind of operation to fail.
type faultTarget struct {
	name  string
	match func(op errorfs.Op, path string) bool
	// compactOnly enables the fault only for the final manual Compact,
	// instead of from the faulty session's Open on.
	compactOnly bool
}

func opIn(op errorfs.Op, ops ...errorfs.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func faultTargets() []faultTarget {
	file := func(suffix string, ops ...errorfs.Op) func(errorfs.Op, string) bool {
		return func(op errorfs.Op, path string) bool { return opIn(op, ops...) && strings.Contains(path, suffix) }
	}
	w, s, c := errorfs.OpWrite, errorfs.OpSync, errorfs.OpCreate
	return []faultTarget{
		{name: "wal-write", match: file(".log", w)},
		{name: "wal-sync", match: file(".log", s)},
		{name: "wal-create", match: file(".log", c)},
		{name: "wal-close", match: file(".log", errorfs.OpClose)},
		{name: "sst-write", match: file(".sst", w)},
		{name: "sst-sync", match: file(".sst", s)},
		{name: "sst-create", match: file(".sst", c)},
		{name: "compaction", match: file(".sst", w, s, c, errorfs.OpRead), compactOnly: true},
		{name: "manifest-write", match: file("MANIFEST", w)},
		{name: "manifest-sync", match: file("MANIFEST", s)},
		{name: "manifest-create", match: file("MANIFEST", c)},
		// CURRENT is replaced by writing a temp file and renaming it; the
		// rename's path names both.
		{name: "current", match: file(".tmp", c, w, s, errorfs.OpRename)},
		{name: "dir-sync", match: func(op errorfs.Op, path string) bool {
			return (op == errorfs.OpSync || op == errorfs.OpOpenDir) && (path == "/db" || path == "/")
		}},
		{name: "any", match: func(errorfs.Op, string) bool { return true }},
	}
}

// faultInjector fails target's operations through a Toggle (which counts
// and tears writes) and counts the matching operations while armed.
type faultInjector struct {
	match   func(errorfs.Op, string) bool
	toggle  *errorfs.Toggle
	armed   atomic.Bool
	matched atomic.Int64
}

func (f *faultInjector) MaybeError(op errorfs.Op, path string) error {
	if !f.armed.Load() || !f.match(op, path) {
		return nil
	}
	f.matched.Add(1)
	return f.toggle.MaybeError(op, path)
}

func (f *faultInjector) TornPrefix(n int) int { return f.toggle.TornPrefix(n) }

func faultRepeats() int {
	switch {
	case testing.Short():
		return 1
	case raceEnabled:
		return 6
	}
	return 10
}

func TestFaults(t *testing.T) {
	seed := *faultSeed
	if seed == 0 {
		seed = defaultFaultSeed
	}
	t.Logf("seed %d (replay with -fault.seed=%d; goroutine scheduling still varies)", seed, seed)
	start := time.Now()
	cases, injected := 0, 0
	for ti, target := range faultTargets() {
		// A fault-free run counts the target's operations, so that the
		// failure can be placed uniformly among them.
		dry := &faultCase{target: target, seed: seed + uint64(ti)<<32}
		if err := dry.run(nil, 0, false); err != nil {
			t.Fatalf("seed %d: %s without a fault: %v", seed, target.name, err)
		}
		total := dry.inj.matched.Load()
		if total == 0 {
			t.Fatalf("seed %d: %s: the workload never performs the target operation", seed, target.name)
		}
		for _, mkErr := range []func() error{errorfs.ENOSPC, errorfs.EIO} {
			for rep := range faultRepeats() {
				cseed := seed + uint64(ti)<<32 + uint64(rep)<<8
				rng := rand.New(rand.NewPCG(cseed, 1))
				after := rng.Int64N(total)
				torn := rep%2 == 0
				c := &faultCase{target: target, seed: cseed}
				if err := c.run(mkErr(), after, torn); err != nil {
					t.Fatalf("seed %d: %s fault (%v, after %d of ~%d operations, torn writes %v): %v",
						seed, target.name, mkErr(), after, total, torn, err)
				}
				cases++
				if c.inj.toggle.Count() > 0 {
					injected++
				}
			}
		}
	}
	t.Logf("%d fault cases (%d with at least one injected failure) in %v", cases, injected, time.Since(start).Round(time.Millisecond))
}

// faultCase is one run: a fault-free setup session, a faulty session and
// the checks after it.
type faultCase struct {
	target faultTarget
	seed   uint64
	inj    *faultInjector
	clock  atomic.Int64
}

// run fails the target's operations after the first after of them with
// injErr (none when injErr is nil).
func (c *faultCase) run(injErr error, after int64, torn bool) error {
	mem := vfs.NewMem()
	c.inj = &faultInjector{match: c.target.match, toggle: errorfs.NewToggle(injErr, nil, "")}
	if injErr != nil {
		c.inj.toggle.AfterN(after)
		c.inj.toggle.SetTornWrites(torn, c.seed)
	}
	fs := errorfs.Wrap(mem, c.inj)

	// Setup: a DB whose last writes are only in the WAL.
	db, err := Open("/db", durOptions(fs, SyncAlways))
	if err != nil {
		return fmt.Errorf("setup Open: %w", err)
	}
	base := durState{}
	gen := newDurGen(c.seed, faultWriters)
	for range faultSetupOps {
		op := gen.next()
		if err := op.apply(db); err != nil {
			return fmt.Errorf("setup write: %w", err)
		}
		for _, w := range op {
			if e, ok := entryOf(w); ok {
				base[w.key] = e
			} else {
				delete(base, w.key)
			}
		}
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("setup Close: %w", err)
	}

	// The faulty session. surfaced collects every error it returned.
	var surfacedMu sync.Mutex
	var surfaced []error
	surface := func(err error) {
		surfacedMu.Lock()
		surfaced = append(surfaced, err)
		surfacedMu.Unlock()
	}
	h := newDurHistory(faultWriters)
	if !c.target.compactOnly {
		c.inj.armed.Store(true)
	}
	opts := durOptions(fs, SyncAlways)
	// A failed OPTIONS write reaches the log, not a caller: Open goes
	// on without it (options_file.go).
	opts.Logger = slog.New(optionsWarnings(surface))
	db, err = Open("/db", opts)
	if err != nil {
		if injErr == nil {
			return fmt.Errorf("Open: %w", err)
		}
		if !errors.Is(err, errorfs.ErrInjected) {
			return fmt.Errorf("Open failed with an error that does not wrap the injected one: %w", err)
		}
		surface(err)
	} else {
		c.write(db, h, surface)
		if err := db.Flush(); err != nil {
			surface(err)
		}
		c.inj.armed.Store(true)
		if err := db.Compact(nil, nil); err != nil {
			surface(err)
		}
	}
	c.inj.armed.Store(false)
	h.prepare()
	if injErr == nil && len(surfaced) > 0 {
		return fmt.Errorf("errors without a fault: %v", surfaced)
	}

	if db != nil {
		if err := c.checkLive(db, h, base, surfaced); err != nil {
			return err
		}
		if err := db.Close(); err != nil {
			surface(err)
		}
	}
	if c.inj.toggle.Count() > 0 && len(surfaced) == 0 && c.target.name != "any" {
		// "any" may hit an operation whose failure costs only disk space,
		// such as removing an obsolete file; every other target's failure
		// must reach a caller.
		return fmt.Errorf("%d operations failed but no call returned an error", c.inj.toggle.Count())
	}

	// Once the fault is gone, the DB reopens with every acknowledged write,
	// both as the faulty session left it and after a power loss.
	img := mem.CrashClone()
	for _, check := range []struct {
		name string
		fs   vfs.FS
	}{{"the same filesystem", fs}, {"a crash image", img}} {
		if err := checkImage(check.fs, "/db"); err != nil {
			return fmt.Errorf("on %s after the fault: %w", check.name, err)
		}
		db, err := Open("/db", durOptions(check.fs, SyncAlways))
		if err != nil {
			return fmt.Errorf("reopen on %s after the fault: %w", check.name, err)
		}
		st, err := readDurState(db, h.keys(), true)
		// The probe write was refused, so it is most likely absent; but
		// like every write that returned an error, it may be present.
		delete(st, "probe")
		if err == nil {
			end := c.clock.Add(1)
			err = h.check(base, st, end, end)
		}
		if err == nil {
			// The reopened DB takes writes again.
			err = db.Set([]byte("after-fault"), []byte("ok"), nil)
		}
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("Close: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("reopened on %s after the fault: %w", check.name, err)
		}
	}
	return nil
}

// write runs the concurrent writers of the faulty session. Each stops at its
// first error, so a failed operation is always its goroutine's last, which
// is what lets the checker treat it like one in flight at a crash.
func (c *faultCase) write(db *DB, h *durHistory, surface func(error)) {
	var wg sync.WaitGroup
	for g := range faultWriters {
		wg.Go(func() {
			gen := newDurGen(c.seed+1, g)
			for range faultOpsPerWrite {
				if err := h.run(db, &c.clock, g, gen.next()); err != nil {
					surface(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// optionsWarnings is a log handler that hands the error of each
// optionsNotWritten warning to surface and drops every other record.
type optionsWarnings func(error)

func (optionsWarnings) Enabled(context.Context, slog.Level) bool { return true }
func (h optionsWarnings) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h optionsWarnings) WithGroup(string) slog.Handler          { return h }

func (h optionsWarnings) Handle(_ context.Context, r slog.Record) error {
	if r.Message == optionsNotWritten {
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
				h(err)
			}
			return true
		})
	}
	return nil
}

// checkLive checks the faulty session's DB after the fault is disabled: if
// anything failed, writes must be refused as read-only and name the cause;
// reads must still work and show every acknowledged write.
func (c *faultCase) checkLive(db *DB, h *durHistory, base durState, surfaced []error) error {
	if len(surfaced) > 0 {
		for _, err := range surfaced {
			if !errors.Is(err, errorfs.ErrInjected) && !errors.Is(err, ErrReadOnly) {
				return fmt.Errorf("a call failed with an error that is neither the injected one nor read-only: %w", err)
			}
		}
		readOnly := db.Metrics().ReadOnly
		for _, err := range surfaced {
			readOnly = readOnly || errors.Is(err, ErrReadOnly)
		}
		err := db.Set([]byte("probe"), []byte("x"), nil)
		if readOnly && (!errors.Is(err, ErrReadOnly) || !errors.Is(err, errorfs.ErrInjected)) {
			return fmt.Errorf("after %v, a write returned %v; want an error matching ErrReadOnly and the injected error", surfaced[0], err)
		}
		// A full disk makes no DB read-only: once the fault is gone,
		// writes succeed again, at the latest when the background work
		// that failed has retried (its first backoffs are short).
		for deadline := time.Now().Add(20 * time.Second); !readOnly && err != nil; {
			if !errors.Is(err, ErrNoSpace) || time.Now().After(deadline) {
				return fmt.Errorf("after %v and the fault gone, a write returned %v; want success", surfaced[0], err)
			}
			time.Sleep(10 * time.Millisecond)
			err = db.Set([]byte("probe"), []byte("x"), nil)
		}
	}
	st, err := readDurState(db, h.keys(), true)
	if err != nil {
		return fmt.Errorf("reading the faulty session's DB: %w", err)
	}
	// The probe write succeeds when the fault healed by itself.
	delete(st, "probe")
	now := c.clock.Add(1)
	if err := h.check(base, st, now, now); err != nil {
		return fmt.Errorf("the faulty session's DB: %w", err)
	}
	return nil
}

// TestFaultManifestSyncKeepsTables: when the manifest edit of a flush is
// written but its fsync fails, the edit may still be read at the next Open
// (the OS kept the bytes), so the tables it names must not be deleted.
func TestFaultManifestSyncKeepsTables(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, "MANIFEST")
	fs := errorfs.Wrap(mem, toggle)
	db := openTestDB(t, "/db", durOptions(fs, SyncAlways))
	if err := db.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	if err := db.Flush(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Flush with a failing manifest sync: %v, want ErrReadOnly", err)
	}
	toggle.Disable()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fs := range []vfs.FS{mem.CrashClone(), mem} {
		db := openTestDB(t, "/db", durOptions(fs, SyncAlways))
		if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("Get(k) = %q, %v", v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
