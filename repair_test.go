package lsmgo

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

func repairOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Logger: slog.New(slog.DiscardHandler), BlockSize: 512, Compression: NoCompression, MemTableSize: 1 << 20}
}

// repairOptionsSeparated is repairOptions with every fixture value
// separated into blob files, one file per flush's values.
func repairOptionsSeparated(fs vfs.FS) *Options {
	o := repairOptions(fs)
	o.ValueThreshold = 32
	o.blobFileSize = 16 << 10
	return o
}

// buildRepairFixture writes two tables of disjoint keys ("a…" and "b…")
// and a WAL of "c…" keys, closes the DB, and returns every key's value.
func buildRepairFixture(t *testing.T, fs vfs.FS, opts func(vfs.FS) *Options) map[string]string {
	t.Helper()
	db, err := Open("/db", opts(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, prefix := range []string{"a", "b", "c"} {
		for i := range 500 {
			k, v := fmt.Sprintf("%s%05d", prefix, i), fmt.Sprintf("value-%s-%d-%s", prefix, i, strings.Repeat("x", 40))
			if err := db.Set([]byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		if prefix != "c" {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestRepairDamagedTable corrupts a data block of one table: Repair keeps
// every entry of the intact table, of the WAL and of the damaged table's
// intact blocks, moves the damaged table to lost/, and reports exactly
// how many entries of which key range were lost; with values in blob
// files too, whose files the salvaged table keeps alive.
func TestRepairDamagedTable(t *testing.T) {
	t.Run("inline", func(t *testing.T) { testRepairDamagedTable(t, repairOptions) })
	t.Run("separated", func(t *testing.T) { testRepairDamagedTable(t, repairOptionsSeparated) })
}

func testRepairDamagedTable(t *testing.T, repairOptions func(vfs.FS) *Options) {
	fs := vfs.NewMem()
	want := buildRepairFixture(t, fs, repairOptions)
	tables := tableFiles(t, fs)
	if len(tables) != 2 {
		t.Fatalf("tables %v, want 2", tables)
	}
	damaged := "/db/" + tables[0] // the older table: the "a" keys
	data := readAllFile(t, fs, damaged)
	data[2000] ^= 0xff
	writeFile(t, fs, damaged, data)
	if report, err := Check("/db", repairOptions(fs)); err != nil || report.OK() {
		t.Fatalf("Check of the damaged DB: %v, %v; want a problem", report, err)
	}

	servesUntilCompaction(t, fs, repairOptions(fs), want)

	report, err := Repair("/db", repairOptions(fs))
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	t.Log(report)
	// Three tables: the Open above wrote the WAL's "c" keys to one.
	if report.Tables != 3 || len(report.Damaged) != 1 {
		t.Fatalf("report %+v, want 3 tables, 1 damaged", report)
	}
	d := report.Damaged[0]
	if d.File != tables[0] || string(d.Smallest) != "a00000" || string(d.Largest) != "a00499" ||
		d.Entries != 500 || d.BlocksLost != 1 || d.Lost() == 0 || d.Salvaged == 0 || !errors.Is(d.Err, ErrCorruption) {
		t.Fatalf("damaged table %+v", d)
	}
	if !strings.Contains(report.String(), fmt.Sprintf("lost %d of 500", d.Lost())) {
		t.Fatalf("report text does not name the loss:\n%s", report)
	}
	if _, err := fs.Stat("/db/" + LostDir + "/" + tables[0]); err != nil {
		t.Fatalf("damaged table not in %s/: %v", LostDir, err)
	}
	if c, err := Check("/db", repairOptions(fs)); err != nil || !c.OK() {
		t.Fatalf("Check after Repair: %v, %v", c, err)
	}

	db, err := Open("/db", repairOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var missing uint64
	for k, v := range want {
		got, err := db.Get([]byte(k))
		switch {
		case err == nil && string(got) == v:
		case errors.Is(err, ErrNotFound) && k[0] == 'a':
			missing++
		default:
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	if missing != d.Lost() {
		t.Fatalf("%d keys missing, the report says %d lost", missing, d.Lost())
	}
}

// servesUntilCompaction checks the policy for a damaged table before
// repair: the DB opens, serves every key outside the damaged block, fails
// reads inside it with ErrCorruption (counted in Metrics), and turns
// read-only at the first compaction that meets the damage.
func servesUntilCompaction(t *testing.T, fs vfs.FS, opts *Options, want map[string]string) {
	t.Helper()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatalf("Open with a damaged table: %v", err)
	}
	defer db.Close()
	damaged := 0
	for k, v := range want {
		got, err := db.Get([]byte(k))
		switch {
		case err == nil && string(got) == v:
		case errors.Is(err, ErrCorruption) && k[0] == 'a':
			damaged++
		default:
			t.Fatalf("Get(%s) with a damaged table = %q, %v", k, got, err)
		}
	}
	if m := db.Metrics(); damaged == 0 || m.Corruptions != int64(damaged) || m.ReadOnly {
		t.Fatalf("%d reads failed, Metrics: %d corruptions, read-only %v", damaged, m.Corruptions, m.ReadOnly)
	}
	if err := db.Compact(nil, nil); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Compact over a damaged table: %v", err)
	}
	if err := db.Set([]byte("z"), []byte("z"), nil); !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrCorruption) {
		t.Fatalf("write after the compaction met damage: %v", err)
	}
}

// TestRepairIntactDB changes nothing in a healthy DB.
func TestRepairIntactDB(t *testing.T) {
	fs := vfs.NewMem()
	want := buildRepairFixture(t, fs, repairOptions)
	report, err := Repair("/db", repairOptions(fs))
	if err != nil || len(report.Damaged) != 0 || report.Tables != 2 {
		t.Fatalf("Repair of an intact DB: %+v, %v", report, err)
	}
	db, err := Open("/db", repairOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkKeys(t, db, toBytes(want))
}

// TestRepairRefusesOpenDB: Repair takes the DB's lock.
func TestRepairRefusesOpenDB(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", repairOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Repair("/db", repairOptions(fs)); err == nil || !strings.Contains(err.Error(), "must be closed") {
		t.Fatalf("Repair of an open DB: %v", err)
	}
}

func tableFiles(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			tables = append(tables, n)
		}
	}
	slices.Sort(tables)
	return tables
}

func toBytes(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
