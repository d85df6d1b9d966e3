package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// requireCheckOK runs Check on the closed DB in dir and fails t on any
// problem. Tests call it after a scenario to verify the files on disk.
func requireCheckOK(t testing.TB, fs vfs.FS, dir string) *CheckReport {
	t.Helper()
	report, err := Check(dir, &Options{FS: fs})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !report.OK() {
		t.Fatalf("Check found %d problem(s):\n%v", len(report.Problems), report.Err())
	}
	return report
}

// fsSnapshot is every file under dir with its contents.
func fsSnapshot(t testing.TB, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range names {
		out[name] = string(readAllFile(t, fs, fs.PathJoin(dir, name)))
	}
	return out
}

func TestCheckHealthyDB(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := vfs.NewMem()
	opts := &Options{
		FS: fs, MemTableSize: 32 << 10, L0CompactionThreshold: 2, LBaseMaxBytes: 64 << 10,
		TargetFileSize: 16 << 10, BlockSize: 512, Logger: corruptOptions(nil).Logger,
	}
	var report *CheckReport
	for round := range 3 {
		db := openTestDB(t, corruptDir, opts)
		for i := range 3000 {
			k := fmt.Appendf(nil, "k%05d", rng.IntN(5000))
			var err error
			switch rng.IntN(10) {
			case 0:
				err = db.Delete(k, nil)
			case 1:
				err = db.SetWithExpiry(k, k, time.Now().Add(time.Duration(rng.IntN(100))*time.Millisecond-50*time.Millisecond), nil)
			default:
				err = db.Set(k, bytes.Repeat(k, 1+rng.IntN(8)), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if i == 1500 && round == 1 {
				if err := db.Compact(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		report = requireCheckOK(t, fs, corruptDir)
		if len(report.Warnings) > 0 {
			t.Fatalf("round %d: warnings on a cleanly closed DB: %v", round, report.Warnings)
		}
	}
	if report.Tables < 2 || report.TableEntries == 0 || report.Logs < 2 || report.LogRecords == 0 || report.ManifestEdits == 0 {
		t.Fatalf("report counts nothing useful: %s", report)
	}
	if !strings.HasSuffix(report.String(), "; OK") {
		t.Fatalf("summary %q does not end in OK", report)
	}
	t.Log(report)
}

func TestCheckRefusesOpenDB(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, corruptDir, corruptOptions(fs))
	if err := db.Set([]byte("a"), []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(corruptDir, &Options{FS: fs}); !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "the DB is open") {
		t.Fatalf("Check of an open DB: %v, want a refusal", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	requireCheckOK(t, fs, corruptDir)
	// Check released the lock.
	db = openTestDB(t, corruptDir, corruptOptions(fs))
	db.Close()
}

// TestCheckLockNotAFile: a LOCK that cannot be opened (here a directory)
// is reported as what it is, with the file named, not as an open DB; Open
// says the same.
func TestCheckLockNotAFile(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "LOCK")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Check(dir, nil)
	if err == nil || errors.Is(err, vfs.ErrLocked) || strings.Contains(err.Error(), "is open") ||
		!strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Check with LOCK a directory: %v", err)
	}
	if _, err := Open(dir, nil); err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open with LOCK a directory: %v", err)
	}
}

func TestCheckNotADB(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := Check("/nowhere", &Options{FS: fs}); err == nil {
		t.Fatal("Check of a missing directory succeeded")
	}
	if err := fs.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Check("/empty", &Options{FS: fs}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check of an empty directory: %v, want os.ErrNotExist", err)
	}
	if names, _ := fs.List("/empty"); len(names) != 0 {
		t.Fatalf("Check wrote %v into an empty directory", names)
	}
}

// TestCheckWritesNothing runs Check on healthy and damaged directories and
// compares every file before and after.
func TestCheckWritesNothing(t *testing.T) {
	fx := buildCorruptFixture(t)
	table := fx.filesOfType(base.FileTypeTable)[0]
	for _, c := range []struct{ name, file string }{{"healthy", ""}, {"damaged table", table}, {"damaged manifest", "MANIFEST-000001"}} {
		var data []byte
		if c.file != "" {
			data = flipByte(fx.files[c.file], 100)
		}
		fs, err := fx.fsWith(c.file, data)
		if err != nil {
			t.Fatal(err)
		}
		before := fsSnapshot(t, fs, corruptDir)
		report, err := Check(corruptDir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if report.OK() != (c.file == "") {
			t.Errorf("%s: OK = %v, problems %v", c.name, report.OK(), report.Problems)
		}
		if after := fsSnapshot(t, fs, corruptDir); !mapsEqual(before, after) {
			t.Errorf("%s: Check changed the directory", c.name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCheckReportsEveryProblem damages several files at once: Check must
// name each of them, not stop at the first.
func TestCheckReportsEveryProblem(t *testing.T) {
	fx := buildCorruptFixture(t)
	tables := fx.filesOfType(base.FileTypeTable)
	if len(tables) < 3 {
		t.Fatalf("fixture has %d tables, want 3", len(tables))
	}
	fs, err := fx.fsWith(tables[0], flipByte(fx.files[tables[0]], 7))
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, fs, tables[1], flipByte(fx.files[tables[1]], len(fx.files[tables[1]])-3))
	if err := fs.Remove(corruptPath(tables[2])); err != nil {
		t.Fatal(err)
	}
	log := fx.filesOfType(base.FileTypeLog)[0]
	rewrite(t, fs, log, flipByte(fx.files[log], 20))

	report, err := Check(corruptDir, &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		file   string
		maxOff int64
	}{{tables[0], 7}, {tables[1], int64(len(fx.files[tables[1]]))}, {tables[2], -1}, {log, 20}} {
		if !anyNamesFile(report.Problems, corruptPath(want.file), want.maxOff) {
			t.Errorf("no problem names %s: %v", want.file, report.Problems)
		}
	}
	if len(report.Problems) != 4 {
		t.Errorf("%d problems, want 4: %v", len(report.Problems), report.Problems)
	}
	for _, p := range report.Problems {
		if !errors.Is(p, ErrCorruption) {
			t.Errorf("problem %v does not match ErrCorruption", p)
		}
	}
	if !errors.Is(report.Err(), ErrCorruption) || !strings.Contains(report.String(), "4 problem(s)") {
		t.Errorf("Err %v, String %q", report.Err(), report)
	}
}

func rewrite(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	writeFile(t, fs, corruptPath(name), data)
}

// TestCheckManifestDisagrees records wrong metadata for a healthy table
// through the version set, as a buggy compaction might: Check compares
// each table's contents with what the manifest says about it.
func TestCheckManifestDisagrees(t *testing.T) {
	fx := buildCorruptFixture(t)
	for _, c := range []struct {
		name   string
		alter  func(m *manifest.FileMetadata)
		reason string
	}{
		{"smallest key", func(m *manifest.FileMetadata) {
			m.Smallest = base.MakeInternalKey([]byte("a"), m.Smallest.Seq(), base.KindSet)
		}, "is not the manifest's smallest"},
		{"largest key", func(m *manifest.FileMetadata) {
			m.Largest.Trailer = base.MakeTrailer(m.Largest.Seq()+1, m.Largest.Kind())
		}, "is not the manifest's largest"},
		{"seqnums", func(m *manifest.FileMetadata) { m.LargestSeq++ }, "properties give seqnums"},
		{"size", func(m *manifest.FileMetadata) { m.Size++ }, "the manifest says"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, err := fx.fsWith("", nil)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := manifest.Load(manifest.Options{FS: fs, Dir: corruptDir})
			if err != nil {
				t.Fatal(err)
			}
			v := vs.Current()
			level, f := 0, v.Files[0][0]
			v.Unref()
			altered := *f
			c.alter(&altered)
			if err := vs.LogAndApply(&manifest.VersionEdit{DeletedFiles: []manifest.DeletedFile{{Level: level, FileNum: f.FileNum}}}); err != nil {
				t.Fatal(err)
			}
			if err := vs.LogAndApply(&manifest.VersionEdit{NewFiles: []manifest.NewFile{{Level: level, Meta: &altered}}}); err != nil {
				t.Fatal(err)
			}
			if err := vs.Close(); err != nil {
				t.Fatal(err)
			}
			report, err := Check(corruptDir, &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			name := corruptPath(base.MakeFilename(base.FileTypeTable, f.FileNum))
			if len(report.Problems) != 1 || !anyNamesFile(report.Problems, name, -1) || !strings.Contains(report.Problems[0].Error(), c.reason) {
				t.Fatalf("problems %v, want one about %s saying %q", report.Problems, name, c.reason)
			}
		})
	}
}

// TestCheckTornTailsAndStrayFiles: what Open repairs by itself is a
// warning, not a problem.
func TestCheckTornTailsAndStrayFiles(t *testing.T) {
	fx := buildCorruptFixture(t)
	fs, err := fx.fsWith("", nil)
	if err != nil {
		t.Fatal(err)
	}
	log := fx.filesOfType(base.FileTypeLog)[0]
	manifestName := fx.filesOfType(base.FileTypeManifest)[0]
	// A WAL record cut short, and half a fragment header after the
	// manifest's last edit: both what an interrupted write leaves.
	rewrite(t, fs, log, fx.files[log][:len(fx.files[log])-5])
	rewrite(t, fs, manifestName, append(bytes.Clone(fx.files[manifestName]), 0x12, 0x34, 0x56))
	stray := []string{"000003.sst", "000002.log", "MANIFEST-000004", "000005.tmp"}
	for _, name := range stray {
		rewrite(t, fs, name, []byte("leftover"))
	}
	report := requireCheckOK(t, fs, corruptDir)
	spans := fx.walRecords[log]
	wantWarn := []string{corruptPath(log), corruptPath(manifestName)}
	for _, name := range stray {
		wantWarn = append(wantWarn, corruptPath(name))
	}
	for _, w := range wantWarn {
		if !slices.ContainsFunc(report.Warnings, func(err error) bool { return strings.Contains(err.Error(), w) }) {
			t.Errorf("no warning about %s: %v", w, report.Warnings)
		}
	}
	if len(report.Warnings) != len(wantWarn) {
		t.Errorf("%d warnings, want %d: %v", len(report.Warnings), len(wantWarn), report.Warnings)
	}
	if !anyNamesFile(report.Warnings, corruptPath(log), spans[len(spans)-1].start) {
		t.Errorf("the WAL warning does not give the torn record's offset %d: %v", spans[len(spans)-1].start, report.Warnings)
	}
	// Open agrees: it recovers, and afterwards nothing is left to warn of.
	r := fx.readAll(fs, fx.stateBefore(spans[len(spans)-1].seq))
	if len(r.wrong) > 0 || len(r.errs()) > 0 {
		t.Fatalf("Open after torn tails: wrong %v, errors %v", r.wrong, r.errs())
	}
	if report := requireCheckOK(t, fs, corruptDir); len(report.Warnings) > 0 {
		t.Fatalf("warnings after Open repaired everything: %v", report.Warnings)
	}
}

// TestCheckWALOrder: a torn tail followed by a newer WAL with records,
// and a batch whose seqnum goes backwards, are problems.
func TestCheckWALOrder(t *testing.T) {
	fx := buildCorruptFixture(t)
	log := fx.filesOfType(base.FileTypeLog)[0]
	spans := fx.walRecords[log]
	newer := "000099.log"
	writeWAL := func(fs vfs.FS, name string, seq base.SeqNum) {
		b := batchrepr.Append(batchrepr.New(), base.KindSet, []byte("x"), []byte("y"))
		batchrepr.SetSeq(b, seq)
		var buf bytes.Buffer
		w := record.NewWriter(&buf)
		if err := w.WriteRecord(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		rewrite(t, fs, name, buf.Bytes())
	}

	t.Run("torn then newer", func(t *testing.T) {
		fs, err := fx.fsWith(log, fx.files[log][:len(fx.files[log])-5])
		if err != nil {
			t.Fatal(err)
		}
		writeWAL(fs, newer, 1000)
		report, err := Check(corruptDir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Problems) != 1 || !anyNamesFile(report.Problems, corruptPath(log), spans[len(spans)-1].start) {
			t.Fatalf("problems %v, want one naming %s", report.Problems, log)
		}
		if _, err := Open(corruptDir, corruptOptions(fs)); !namesAny(err, []string{corruptPath(log)}, -1) {
			t.Fatalf("Open: %v, want the same corruption", err)
		}
	})
	t.Run("seqnum backwards", func(t *testing.T) {
		fs, err := fx.fsWith("", nil)
		if err != nil {
			t.Fatal(err)
		}
		writeWAL(fs, newer, spans[0].seq)
		report, err := Check(corruptDir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Problems) != 1 || !anyNamesFile(report.Problems, corruptPath(newer), 0) {
			t.Fatalf("problems %v, want one naming %s", report.Problems, newer)
		}
	})
}

// TestCheckNoStrayTablesAfterFailedCompaction: a compaction that fails
// after finishing some of its output tables must remove them; Check warns
// of any table the manifest does not know.
func TestCheckNoStrayTablesAfterFailedCompaction(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	var creates atomic.Int32
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if armed.Load() && op == errorfs.OpCreate && strings.HasSuffix(path, ".sst") && creates.Add(1) == 3 {
			return errorfs.ENOSPC()
		}
		return nil
	}))
	opts := corruptOptions(fs)
	db := openTestDB(t, corruptDir, opts)
	for i := range 400 {
		if err := db.Set(fmt.Appendf(nil, "key%04d", i), bytes.Repeat([]byte("v"), 40), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := db.Compact(nil, nil); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Compact: %v, want the injected ENOSPC", err)
	}
	if n := creates.Load(); n < 3 {
		t.Fatalf("compaction created %d tables, want the third to fail", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report := requireCheckOK(t, mem, corruptDir)
	if len(report.Warnings) > 0 {
		t.Fatalf("warnings: %v", report.Warnings)
	}
}
