package lsmgo

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// optionsFileExample is the OPTIONS file of doc/format.md's example: a DB
// opened with a 64 MiB memtable, zstd, a one-second sync interval and
// four compactions at a time, every other option left to its default.
const optionsFileExample = `lsmgo-options 1
sync=interval(1s)
memtable-size=67108864
memtable-stop-writes-threshold=4
l0-compaction-threshold=4
l0-slowdown-writes-threshold=12
l0-stop-writes-threshold=20
lbase-max-bytes=67108864
level-multiplier=10
target-file-size=8388608
block-size=2048
bloom-bits-per-key=10
compression=zstd
cache-size=67108864
map-tables=false
map-budget=134217728
max-concurrent-compactions=4
strict-wal-recovery=false
disk-reserve=0
value-threshold=4096
blob-gc-threshold=0.5
compaction-filter=none
`

func exampleOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Logger: slog.New(slog.DiscardHandler), MemTableSize: 64 << 20,
		Compression: ZstdCompression, Sync: SyncInterval(time.Second), MaxConcurrentCompactions: 4}
}

// TestOptionsFileWrittenAtOpen opens a DB and finds doc/format.md's
// example in its OPTIONS, byte for byte; the file reads back as the
// settings it was written from, and a reopen with other options replaces
// it.
func TestOptionsFileWrittenAtOpen(t *testing.T) {
	fs := vfs.NewMem()
	opts := exampleOptions(fs)
	db := openTestDB(t, "/db", opts)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "/db/OPTIONS"); got != optionsFileExample {
		t.Fatalf("OPTIONS:\n%s\nwant:\n%s", got, optionsFileExample)
	}
	s, err := readOptionsFile(fs, "/db")
	if want := opts.withDefaults(); err != nil || !slices.Equal(s, want.settings()) {
		t.Fatalf("read back %v, %v; want %v", s, err, want.settings())
	}

	opts.BlobGCThreshold, opts.ValueThreshold, opts.BloomBitsPerKey = -1, -1, -1
	opts.NewCompactionFilter = func(Reader) CompactionFilter { return nil }
	db = openTestDB(t, "/db", opts)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, fs, "/db/OPTIONS")
	for _, line := range []string{"\nblob-gc-threshold=-1\n", "\nvalue-threshold=-1\n", "\nbloom-bits-per-key=0\n", "\ncompaction-filter=set\n"} {
		if !strings.Contains(got, line) {
			t.Errorf("OPTIONS after a reopen lacks %q:\n%s", line, got)
		}
	}
}

func readFile(t *testing.T, fs vfs.FS, path string) string {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOptionsFileDecode refuses what is not an OPTIONS file of version 1,
// saying why, and keeps names it does not know.
func TestOptionsFileDecode(t *testing.T) {
	for data, want := range map[string]string{
		"":                                   "not an OPTIONS file",
		"lsmgo-options 1":                    "not an OPTIONS file",
		"lsmgo-opts 1\n":                     "not an OPTIONS file",
		"lsmgo-options 2\nsync=always\n":     `format version "2"`,
		"lsmgo-options 01\n":                 `format version "01"`,
		"lsmgo-options 1\nsync=always":       "line 2 has no newline",
		"lsmgo-options 1\nsync always\n":     "line 2 is not name=value",
		"lsmgo-options 1\n=always\n":         "line 2 is not name=value",
		"lsmgo-options 1\nSync=always\n":     "line 2 is not name=value",
		"lsmgo-options 1\na=1\n\n":           "line 3 is not name=value",
		"lsmgo-options 1\na=1\nb=2\na=3\n":   "line 4 repeats a",
		"lsmgo-options 1\r\nsync=always\r\n": `format version "1\r"`,
	} {
		if _, err := decodeOptionsFile([]byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decode %q: %v; want an error saying %q", data, err, want)
		}
	}
	s, err := decodeOptionsFile([]byte("lsmgo-options 1\nfuture-knob=a=b\nsync=\n"))
	if want := []OptionSetting{{"future-knob", "a=b"}, {"sync", ""}}; err != nil || !slices.Equal(s, want) {
		t.Errorf("decode = %v, %v; want %v", s, err, want)
	}
}

// FuzzOptionsFile decodes arbitrary bytes without panicking, and what it
// accepts encodes back to the same bytes: the format has one spelling.
func FuzzOptionsFile(f *testing.F) {
	f.Add([]byte(optionsFileExample))
	f.Add([]byte("lsmgo-options 1\n"))
	f.Add([]byte("lsmgo-options 1\na=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeOptionsFile(data)
		if err != nil {
			return
		}
		if back := encodeOptionsFile(s); !bytes.Equal(back, data) {
			t.Fatalf("decoded %q as %v, which encodes as %q", data, s, back)
		}
	})
}

// TestOptionsFileCrash crashes at every mutating filesystem operation of
// an Open that replaces the OPTIONS file: each image holds the old file
// or the new one, whole, never a mix, a torn one or none, and opens and
// checks cleanly.
func TestOptionsFileCrash(t *testing.T) {
	mem := vfs.NewMem()
	oldOpts := exampleOptions(mem)
	db := openTestDB(t, "/db", oldOpts)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	oldResolved := oldOpts.withDefaults()
	old := encodeOptionsFile(oldResolved.settings())

	var mu sync.Mutex
	var images []*vfs.MemFS
	var ops []string
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		switch op {
		case errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpClose, errorfs.OpRemove, errorfs.OpRename:
			mu.Lock()
			images = append(images, mem.CrashClone())
			ops = append(ops, op.String()+" "+path)
			mu.Unlock()
		}
		return nil
	}))
	newOpts := exampleOptions(fs)
	newOpts.MemTableSize, newOpts.Compression = 1<<20, SnappyCompression
	db = openTestDB(t, "/db", newOpts)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	images = append(images, mem.CrashClone())
	ops = append(ops, "after Close")
	newResolved := newOpts.withDefaults()
	new := encodeOptionsFile(newResolved.settings())

	sawNew := false
	for i, img := range images {
		got := readFile(t, img, "/db/OPTIONS")
		switch got {
		case string(old):
			if sawNew {
				t.Fatalf("crash before %s: the old OPTIONS is back after the new one was durable", ops[i])
			}
		case string(new):
			sawNew = true
		default:
			t.Fatalf("crash before %s: OPTIONS is neither the old nor the new file:\n%s", ops[i], got)
		}
		if report, err := Check("/db", &Options{FS: img}); err != nil || !report.OK() {
			t.Fatalf("crash before %s: Check: %v, %v", ops[i], report, err)
		}
		db, err := Open("/db", &Options{FS: img, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("crash before %s: Open: %v", ops[i], err)
		}
		db.Close()
	}
	if !sawNew {
		t.Fatalf("no crash image, not even after Close, holds the new OPTIONS (%d images)", len(images))
	}
}

// TestCheckReportsOptions: Check lists the options of the last Open; a
// directory without OPTIONS (made before the file existed) checks
// cleanly with none, and a damaged one is a warning, not a problem, that
// the next Open mends.
func TestCheckReportsOptions(t *testing.T) {
	fs := vfs.NewMem()
	opts := exampleOptions(fs)
	db := openTestDB(t, "/db", opts)
	if err := db.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report, err := Check("/db", opts)
	if want := opts.withDefaults(); err != nil || !report.OK() || len(report.Warnings) > 0 || !slices.Equal(report.Options, want.settings()) {
		t.Fatalf("Check: %v, %v, warnings %v, options %v", report, err, report.Warnings, report.Options)
	}

	if err := fs.Remove("/db/OPTIONS"); err != nil {
		t.Fatal(err)
	}
	report, err = Check("/db", opts)
	if err != nil || !report.OK() || len(report.Warnings) > 0 || report.Options != nil {
		t.Fatalf("Check without OPTIONS: %v, %v, warnings %v, options %v", report, err, report.Warnings, report.Options)
	}

	f, err := fs.Create("/db/OPTIONS")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("lsmgo-options 1\nsync=alw"))
	f.Close()
	report, err = Check("/db", opts)
	if err != nil || !report.OK() || len(report.Warnings) != 1 || !errors.Is(report.Warnings[0], ErrCorruption) ||
		!strings.Contains(report.Warnings[0].Error(), "Open writes a new one") {
		t.Fatalf("Check of a torn OPTIONS: %v, %v, warnings %v", report, err, report.Warnings)
	}
	db = openTestDB(t, "/db", opts)
	if got, err := db.Get([]byte("k")); err != nil || string(got) != "v" {
		t.Fatalf("Get after opening with a torn OPTIONS: %q, %v", got, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if report, err = Check("/db", opts); err != nil || len(report.Warnings) > 0 || report.Options == nil {
		t.Fatalf("Check after the reopen: %v, %v, warnings %v", report, err, report.Warnings)
	}
	if _, err := fs.Stat("/db/OPTIONS"); errors.Is(err, os.ErrNotExist) {
		t.Fatal("no OPTIONS after the reopen")
	}
}
