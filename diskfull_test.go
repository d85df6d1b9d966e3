package lsmgo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// diskFullOptions are durOptions with a memtable large enough that the WAL
// fills a small disk before any flush, which is the case that needed a
// restart before writes healed by themselves.
func diskFullOptions(fs vfs.FS, sync SyncMode) *Options {
	o := durOptions(fs, sync)
	o.MemTableSize = 256 << 10
	// No reserve: these tests are about what happens when the disk
	// really is full (TestDiskReserve covers the reserve).
	o.DiskReserve = -1
	return o
}

// incompressible returns a value of n random bytes, so tables take as much
// space as the WAL did.
func incompressible(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// fillDisk writes keys until a write fails, which must be for lack of
// space, and returns the acknowledged ones.
func fillDisk(t *testing.T, db *DB, rng *rand.Rand, prefix string) map[string][]byte {
	t.Helper()
	acked := map[string][]byte{}
	for i := 0; ; i++ {
		k, v := fmt.Sprintf("%s%06d", prefix, i), incompressible(rng, 1000)
		err := db.Set([]byte(k), v, nil)
		if err != nil {
			if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrReadOnly) {
				t.Fatalf("write %d on a full disk: %v; want ErrNoSpace and not ErrReadOnly", i, err)
			}
			return acked
		}
		acked[k] = v
		if i > 10000 {
			t.Fatal("the disk never filled up")
		}
	}
}

func checkKeys(t *testing.T, db *DB, want map[string][]byte) {
	t.Helper()
	for k, v := range want {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != string(v) {
			t.Fatalf("Get(%s) = %d bytes, %v; want the acknowledged value", k, len(got), err)
		}
	}
}

// setEventually retries a write refused for lack of space until the
// background work it waits for has retried.
func setEventually(t *testing.T, db *DB, k, v []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := db.Set(k, v, nil)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrNoSpace) || time.Now().After(deadline) {
			t.Fatalf("Set(%s) after space was freed: %v", k, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDiskFullWALHeals fills a disk with the WAL through the engine API:
// the write that does not fit fails with ErrNoSpace, nothing acknowledged
// is lost, the DB never turns read-only, and once space is freed writes
// succeed again without a restart. Then the DB restarts on a disk whose
// free space is smaller than its WAL: Open serves from memory, and the
// flush happens once space is back.
func TestDiskFullWALHeals(t *testing.T) {
	for _, sync := range []SyncMode{SyncAlways, SyncInterval(time.Millisecond), SyncNone} {
		t.Run(sync.String(), func(t *testing.T) { testDiskFullWALHeals(t, sync) })
	}
}

func testDiskFullWALHeals(t *testing.T, sync SyncMode) {
	mem := vfs.NewMem()
	mem.SetCapacity(300 << 10)
	rng := rand.New(rand.NewPCG(1, 2))
	db, err := Open("/db", diskFullOptions(mem, sync))
	if err != nil {
		t.Fatal(err)
	}
	acked := fillDisk(t, db, rng, "a")
	if len(acked) < 100 {
		t.Fatalf("only %d writes fit in 300 KiB", len(acked))
	}
	// Writes on the still full disk fail for lack of space and nothing
	// else. One may fit: the cut gave back the failed write's partial
	// bytes, a record at the start of a new WAL needs no block padding,
	// and background work may have freed a WAL meanwhile; such a write is
	// acknowledged like any other.
	for i := range 3 {
		k, v := fmt.Sprintf("x%d", i), incompressible(rng, 1100)
		switch err := db.Set([]byte(k), v, nil); {
		case err == nil:
			acked[k] = v
		case errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrReadOnly):
		default:
			t.Fatalf("write on a still full disk: %v, want ErrNoSpace", err)
		}
	}
	if db.Metrics().ReadOnly {
		t.Fatal("a full WAL made the DB read-only")
	}
	checkKeys(t, db, acked)

	// Background work may free space meanwhile (a flush whose table fit
	// retires its WAL, and Close waits for a flush in progress): fill the
	// disk again until three writes in a row are refused, close, and start
	// over from a reopen until the closed DB leaves the disk full, so that
	// the restart below really has less free space than its WALs hold.
	for attempt := 0; ; attempt++ {
		for i, refusals := 0, 0; refusals < 3; i++ {
			if i > 10000 {
				t.Fatal("the disk never filled up again")
			}
			k, v := fmt.Sprintf("r%d-%06d", attempt, i), incompressible(rng, 1000)
			switch err := db.Set([]byte(k), v, nil); {
			case err == nil:
				acked[k], refusals = v, 0
			case errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrReadOnly):
				refusals++
			default:
				t.Fatalf("write on a full disk: %v, want ErrNoSpace", err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		free, _, _ := mem.DiskUsage("/")
		if free <= 64<<10 {
			break
		}
		if attempt == 10 {
			t.Fatalf("%d bytes free after filling the disk %d times", free, attempt+1)
		}
		if db, err = Open("/db", diskFullOptions(mem, sync)); err != nil {
			t.Fatalf("reopen with %d bytes free: %v", free, err)
		}
		checkKeys(t, db, acked)
	}

	// Restart on a disk with less free space than the WAL holds.
	db, err = Open("/db", diskFullOptions(mem, sync))
	if err != nil {
		t.Fatalf("Open on a full disk: %v", err)
	}
	checkKeys(t, db, acked)
	if err := db.Flush(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Flush on a full disk: %v, want ErrNoSpace", err)
	}
	// A power loss while serving from memory loses nothing: the WALs
	// are all still there, the torn one cut where its replay stopped.
	img := mem.CrashClone()
	img.SetCapacity(0)
	imgDB, err := Open("/db", diskFullOptions(img, sync))
	if err != nil {
		t.Fatalf("Open after a crash while serving from memory: %v", err)
	}
	checkKeys(t, imgDB, acked)
	if err := imgDB.Close(); err != nil {
		t.Fatal(err)
	}

	// Space comes back: writes resume by themselves, until the disk is
	// full again.
	mem.SetCapacity(4 << 20)
	setEventually(t, db, []byte("after"), []byte("restart"))
	acked["after"] = []byte("restart")
	for k, v := range fillDisk(t, db, rng, "b") {
		acked[k] = v
	}
	checkKeys(t, db, acked)
	mem.SetCapacity(16 << 20)
	setEventually(t, db, []byte("end"), []byte("1"))
	acked["end"] = []byte("1")
	// A flush that failed just before space came back may still be
	// reported once; the retry is at most minNoSpaceBackoff away.
	waitFor(t, "a flush once space is back", func() bool { return db.Flush() == nil })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fs := range []vfs.FS{mem.CrashClone(), mem} {
		db, err := Open("/db", diskFullOptions(fs, sync))
		if err != nil {
			t.Fatal(err)
		}
		checkKeys(t, db, acked)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskFullCrashAfterFailedWrite: a power loss right after a WAL write
// failed for lack of space, or right after the write that healed it,
// loses nothing acknowledged and leaves a WAL the next Open reads.
func TestDiskFullCrashAfterFailedWrite(t *testing.T) {
	mem := vfs.NewMem()
	mem.SetCapacity(200 << 10)
	rng := rand.New(rand.NewPCG(3, 4))
	db, err := Open("/db", diskFullOptions(mem, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acked := fillDisk(t, db, rng, "a")
	images := []*vfs.MemFS{mem.CrashClone()}
	mem.SetCapacity(1 << 20)
	if err := db.Set([]byte("healed"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	images = append(images, mem.CrashClone())
	for i, img := range images {
		img.SetCapacity(0)
		db, err := Open("/db", diskFullOptions(img, SyncAlways))
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		checkKeys(t, db, acked)
		if _, err := db.Get([]byte("healed")); i == 1 && err != nil {
			t.Fatalf("image %d: the write after healing: %v", i, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskFullFlushAndCompactionRetry: a flush and a compaction that fail
// with ENOSPC leave the DB writable and readable, remove what they wrote,
// and succeed by themselves once space is back.
func TestDiskFullFlushAndCompactionRetry(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.ENOSPC(), []errorfs.Op{errorfs.OpWrite}, ".sst")
	toggle.SetTornWrites(true, 1)
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, toggle), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acked := map[string][]byte{}
	write := func(n int) {
		for range n {
			k := fmt.Sprintf("k%04d", len(acked))
			v := []byte(k + "-value")
			if err := db.Set([]byte(k), v, nil); err != nil {
				t.Fatal(err)
			}
			acked[k] = v
		}
	}
	write(100)
	toggle.Enable()
	if err := db.Flush(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Flush on a full disk: %v, want ErrNoSpace", err)
	}
	write(10)
	checkKeys(t, db, acked)
	if m := db.Metrics(); m.ReadOnly || m.Levels[0].Files != 0 {
		t.Fatalf("after a failed flush: read-only %v, %d L0 tables", m.ReadOnly, m.Levels[0].Files)
	}
	if n := countFiles(t, mem, ".sst"); n != 0 {
		t.Fatalf("%d table files left by failed flushes", n)
	}
	toggle.Disable()
	waitFor(t, "the flush retry", func() bool { return db.Metrics().Levels[0].Files > 0 })
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(100)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	if err := db.Compact(nil, nil); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Compact on a full disk: %v, want ErrNoSpace", err)
	}
	write(10)
	checkKeys(t, db, acked)
	toggle.Disable()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatalf("Compact once space is back: %v", err)
	}
	if m := db.Metrics(); m.ReadOnly || m.Levels[0].Files != 0 {
		t.Fatalf("after the compaction: read-only %v, %d L0 tables", m.ReadOnly, m.Levels[0].Files)
	}
	checkKeys(t, db, acked)
	if err := checkImage(mem, "/db"); err == nil {
		t.Fatal("checkImage passed on an open DB?")
	}
}

// TestFsyncErrorNeedsResume: a failed WAL fsync makes the DB read-only, and
// it stays so after the fault is gone, until Resume, which flushes what
// memory holds; every acknowledged write survives a power loss after it.
func TestFsyncErrorNeedsResume(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, ".log")
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, toggle), SyncNone))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acked := map[string][]byte{}
	for i := range 50 {
		k := fmt.Sprintf("k%04d", i)
		if err := db.Set([]byte(k), []byte(k), nil); err != nil {
			t.Fatal(err)
		}
		acked[k] = []byte(k)
	}
	toggle.Enable()
	if err := db.Set([]byte("synced"), []byte("x"), Sync); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write whose fsync failed: %v, want ErrReadOnly", err)
	}
	toggle.Disable()
	if err := db.Set([]byte("later"), []byte("x"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write after the fsync error, before Resume: %v, want ErrReadOnly", err)
	}
	checkKeys(t, db, acked)
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := db.Set([]byte("resumed"), []byte("x"), Sync); err != nil {
		t.Fatalf("write after Resume: %v", err)
	}
	acked["resumed"] = []byte("x")
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume of a writable DB: %v", err)
	}
	// The data the failed fsync covered is in synced tables now: a power
	// loss that drops every unsynced byte keeps it.
	img := mem.CrashClone()
	db2, err := Open("/db", durOptions(img, SyncNone))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	checkKeys(t, db2, acked)
}

func countFiles(t *testing.T, fs vfs.FS, suffix string) int {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDiskReserve: writes are refused, with an error that names the free
// space and the reserve, before the disk is full, and accepted again once
// space is freed; compactions whose output cannot fit are postponed, not
// failed.
func TestDiskReserve(t *testing.T) {
	mem := vfs.NewMem()
	mem.SetCapacity(1 << 20)
	o := durOptions(mem, SyncAlways)
	o.DiskReserve = 256 << 10
	// Everything stays in the WAL, so only writes use the disk and the
	// reserve check (every quarter reserve of WAL) refuses before it
	// is full.
	o.MemTableSize = 2 << 20
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	acked := map[string][]byte{}
	var refused error
	for i := 0; refused == nil; i++ {
		k, v := fmt.Sprintf("k%06d", i), incompressible(rng, 1000)
		if refused = db.Set([]byte(k), v, nil); refused == nil {
			acked[k] = v
		}
	}
	if !errors.Is(refused, ErrNoSpace) || !strings.Contains(refused.Error(), "below the reserve of 256.0K") {
		t.Fatalf("write below the reserve: %v", refused)
	}
	m := db.Metrics()
	if m.Disk.Free < 128<<10 || m.Disk.Total != 1<<20 || m.Disk.NoSpaceWrites == 0 || m.ReadOnly {
		t.Fatalf("metrics below the reserve: %+v, read-only %v", m.Disk, m.ReadOnly)
	}
	checkKeys(t, db, acked)
	mem.SetCapacity(8 << 20)
	setEventually(t, db, []byte("after"), []byte("1"))
	acked["after"] = []byte("1")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, db, acked)
}

// TestCompactionPostponedForSpace: a compaction whose output would not fit
// next to room for the memtables is not started (so it cannot fail part
// way); it runs by itself once space is back.
func TestCompactionPostponedForSpace(t *testing.T) {
	mem := vfs.NewMem()
	o := durOptions(mem, SyncNone)
	o.MemTableSize = 64 << 10
	o.L0CompactionThreshold = 2
	o.DiskReserve = -1
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	// One table, then room for little more than a second one.
	for i := range 40 {
		if err := db.Set(fmt.Appendf(nil, "a%03d", i), incompressible(rng, 1000), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	used := memUsed(mem)
	mem.SetCapacity(used + 150<<10)
	for i := range 40 {
		if err := db.Set(fmt.Appendf(nil, "b%03d", i), incompressible(rng, 1000), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	m := db.Metrics()
	if m.Levels[0].Files != 2 || m.Compaction.Count != 0 || m.Disk.NoSpaceRetries == 0 || m.ReadOnly {
		t.Fatalf("on a nearly full disk: L0 %d files, %d compactions, %d no-space retries, read-only %v",
			m.Levels[0].Files, m.Compaction.Count, m.Disk.NoSpaceRetries, m.ReadOnly)
	}
	mem.SetCapacity(used + 4<<20)
	waitFor(t, "the postponed compaction", func() bool { return db.Metrics().Compaction.Count > 0 })
}

// memUsed returns the bytes mem's files hold, whatever its budget.
func memUsed(mem *vfs.MemFS) int64 {
	const huge = 1 << 40
	mem.SetCapacity(huge)
	free, _, _ := mem.DiskUsage("/")
	mem.SetCapacity(0)
	return huge - int64(free)
}

// TestDiskFullBlobHeals fills the disk with separated values: a blob
// write that fails for lack of space fails only its batch, like a WAL
// write, and the DB does not turn read-only; once space is freed, writes
// resume in a new blob file, and after a crash every acknowledged value
// is there.
func TestDiskFullBlobHeals(t *testing.T) {
	for _, sync := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(sync.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			mem.SetCapacity(600 << 10)
			rng := rand.New(rand.NewPCG(5, 6))
			opts := diskFullOptions(mem, sync)
			opts.ValueThreshold = 1024
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			acked := map[string][]byte{}
			for i := 0; ; i++ {
				k, v := fmt.Sprintf("b%06d", i), incompressible(rng, 8<<10)
				err := db.Set([]byte(k), v, nil)
				if err != nil {
					if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrReadOnly) {
						t.Fatalf("write %d on a full disk: %v; want ErrNoSpace and not ErrReadOnly", i, err)
					}
					break
				}
				acked[k] = v
				if i > 10000 {
					t.Fatal("the disk never filled up")
				}
			}
			if len(acked) < 10 {
				t.Fatalf("only %d values fit", len(acked))
			}
			if m := db.Metrics(); m.ReadOnly || m.Blob.Files == 0 {
				t.Fatalf("after a failed blob write: read-only %v, %d blob files", m.ReadOnly, m.Blob.Files)
			}
			checkKeys(t, db, acked)
			mem.SetCapacity(8 << 20)
			healed := incompressible(rng, 8<<10)
			setEventually(t, db, []byte("healed"), healed)
			acked["healed"] = healed
			if err := db.Flush(); err != nil {
				t.Fatalf("Flush once space is back: %v", err)
			}
			img := mem.CrashClone()
			img.SetCapacity(0)
			db2, err := Open("/db", diskFullOptions(img, sync))
			if err != nil {
				t.Fatalf("reopen after the crash: %v", err)
			}
			checkKeys(t, db2, acked)
			if err := db2.Close(); err != nil {
				t.Fatal(err)
			}
			report, err := Check("/db", &Options{FS: img})
			if err != nil || !report.OK() {
				t.Fatalf("Check after the crash: %v %v", err, report)
			}
		})
	}
}
