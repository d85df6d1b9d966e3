package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// The damaged-directory tests build a small DB closed cleanly (so it ends
// in a close marker): lossTableKeys keys in a table, and lossBatches
// batches of two entries in its WAL. Each case damages one file (cut
// short, zeroed, a flipped byte) and records what Check and Open say.

const (
	lossTableKeys = 50
	lossBatches   = 50
)

func lossTableKey(i int) string    { return fmt.Sprintf("a%03d", i) }
func lossBatchKey(i, j int) string { return fmt.Sprintf("b%03d-%d", i, j) }

// lossFixture is the pristine directory.
type lossFixture struct {
	files              map[string][]byte // base name -> contents
	wal, marker, table string            // base names
	manifest           string
	// starts are the offsets of the WAL's records; size is where the
	// records end (zeros follow).
	starts []int64
	size   int64
}

func lossOptions(fs vfs.FS, logs *logCapture) *Options {
	opts := durOptions(fs, SyncAlways)
	opts.MemTableSize = 1 << 20 // every batch stays in the WAL
	opts.Logger = slog.New(logs)
	return opts
}

func buildLossFixture(t *testing.T) *lossFixture {
	t.Helper()
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", lossOptions(fs, &logCapture{}))
	for i := range lossTableKeys {
		if err := db.Set([]byte(lossTableKey(i)), []byte("table"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range lossBatches {
		b := db.NewBatch()
		b.Set([]byte(lossBatchKey(i, 0)), []byte("wal"))
		b.Set([]byte(lossBatchKey(i, 1)), []byte("wal"))
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fx := &lossFixture{files: map[string][]byte{}}
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, name := range names {
		fx.files[name] = readAllFile(t, fs, "/db/"+name)
		switch typ, _, _ := base.ParseFilename(name); typ {
		case base.FileTypeLog:
			logs = append(logs, name) // List sorts: the marker is last
		case base.FileTypeTable:
			fx.table = name
		case base.FileTypeManifest:
			fx.manifest = name
		}
	}
	if len(logs) != 2 || fx.table == "" || fx.manifest == "" {
		t.Fatalf("fixture files %v; want a table, a manifest, a WAL and a close marker", names)
	}
	fx.wal, fx.marker = logs[0], logs[1]
	data := fx.files[fx.wal]
	fx.size = int64(len(bytes.TrimRight(data, "\x00")))
	r := record.NewReader(bytes.NewReader(data), fx.wal)
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		fx.starts = append(fx.starts, r.Offset())
	}
	if len(fx.starts) != lossBatches {
		t.Fatalf("fixture WAL holds %d records, want %d", len(fx.starts), lossBatches)
	}
	return fx
}

// lossCase damages one file of the fixture.
type lossCase struct {
	name string
	file func(fx *lossFixture) string
	// damage returns the file's new contents; nil removes it.
	damage func(fx *lossFixture, data []byte) []byte
	// crash removes the close marker too: the directory a crash leaves.
	crash, strict bool
	want          lossOutcome
}

// lossOutcome is what Check and Open say about a damaged directory.
type lossOutcome struct {
	checkOK bool
	openErr bool
	// For an Open that succeeded: the WAL batches kept (the first kept
	// of them, whole; none after), RecoveryLostEntries, whether anything
	// was logged at ERROR, and whether reading the table's keys failed.
	kept         int
	lost         int64
	errorLogged  bool
	tableReadErr bool
}

func (o lossOutcome) String() string {
	return fmt.Sprintf("check OK %v, Open error %v, kept %d batches, lost %d entries, ERROR logged %v, table read error %v",
		o.checkOK, o.openErr, o.kept, o.lost, o.errorLogged, o.tableReadErr)
}

func theWAL(fx *lossFixture) string       { return fx.wal }
func markerFile(fx *lossFixture) string   { return fx.marker }
func manifestFile(fx *lossFixture) string { return fx.manifest }
func tableFile(fx *lossFixture) string    { return fx.table }

func cutAt(off func(fx *lossFixture) int64) func(*lossFixture, []byte) []byte {
	return func(fx *lossFixture, data []byte) []byte { return data[:off(fx)] }
}

func zeroRange(from, to func(fx *lossFixture, data []byte) int64) func(*lossFixture, []byte) []byte {
	return func(fx *lossFixture, data []byte) []byte {
		out := bytes.Clone(data)
		clear(out[from(fx, data):to(fx, data)])
		return out
	}
}

func flipAtOffset(off func(fx *lossFixture, data []byte) int64) func(*lossFixture, []byte) []byte {
	return func(fx *lossFixture, data []byte) []byte { return flipByte(bytes.Clone(data), int(off(fx, data))) }
}

func recordStart(i int) func(*lossFixture, []byte) int64 {
	return func(fx *lossFixture, _ []byte) int64 { return fx.starts[i] }
}

func fraction(num, den int64) func(*lossFixture, []byte) int64 {
	return func(_ *lossFixture, data []byte) int64 { return int64(len(data)) * num / den }
}

// TestDamagedDirectories: what Check and Open say about each kind of
// damage. A cleanly closed DB whose WAL lost records (cut anywhere, even
// at a record boundary, zeroed, flipped) opens with the records before the
// damage and an ERROR, counts exactly the entries lost, and fails Check;
// after a crash (no close marker) a cut WAL is a torn tail, only a
// warning, since the two cannot be told apart; damage followed by intact
// records is an ERROR either way. A damaged manifest or table is always a
// Check problem.
func TestDamagedDirectories(t *testing.T) {
	fx := buildLossFixture(t)
	const all = lossBatches
	cases := []lossCase{
		{name: "WAL cut to 5 bytes", file: theWAL, damage: cutAt(func(*lossFixture) int64 { return 5 }),
			want: lossOutcome{kept: 0, lost: 2 * lossBatches, errorLogged: true}},
		{name: "WAL cut at a record boundary", file: theWAL, damage: cutAt(func(fx *lossFixture) int64 { return fx.starts[25] }),
			want: lossOutcome{kept: 25, lost: 2 * (all - 25), errorLogged: true}},
		{name: "WAL cut inside a record", file: theWAL, damage: cutAt(func(fx *lossFixture) int64 { return fx.starts[25] + 10 }),
			want: lossOutcome{kept: 25, lost: 2 * (all - 25), errorLogged: true}},
		{name: "WAL zeroed in the middle", file: theWAL, damage: zeroRange(recordStart(10), recordStart(12)),
			want: lossOutcome{kept: 10, lost: 2 * (all - 10), errorLogged: true}},
		{name: "WAL byte flipped in the middle", file: theWAL, damage: flipAtOffset(func(fx *lossFixture, _ []byte) int64 { return fx.starts[30] + 9 }),
			want: lossOutcome{kept: 30, lost: 2 * (all - 30), errorLogged: true}},
		{name: "WAL last record zeroed", file: theWAL, damage: zeroRange(recordStart(all-1), func(fx *lossFixture, _ []byte) int64 { return fx.size }),
			want: lossOutcome{kept: all - 1, lost: 2, errorLogged: true}},
		{name: "WAL removed", file: theWAL,
			want: lossOutcome{openErr: true}},
		{name: "close marker byte flipped", file: markerFile, damage: flipAtOffset(func(*lossFixture, []byte) int64 { return 8 }),
			want: lossOutcome{checkOK: true, kept: all}},
		{name: "WAL cut to 5 bytes, strict", file: theWAL, damage: cutAt(func(*lossFixture) int64 { return 5 }), strict: true,
			want: lossOutcome{openErr: true}},
		{name: "after a crash: WAL cut inside a record", file: theWAL, damage: cutAt(func(fx *lossFixture) int64 { return fx.starts[25] + 10 }), crash: true,
			want: lossOutcome{checkOK: true, kept: 25}},
		{name: "after a crash: WAL zeroed in the middle", file: theWAL, damage: zeroRange(recordStart(10), recordStart(12)), crash: true,
			want: lossOutcome{kept: 10, lost: 2 * (all - 12), errorLogged: true}},
		{name: "MANIFEST cut in half", file: manifestFile, damage: cutAt(func(fx *lossFixture) int64 { return int64(len(fx.files[fx.manifest]) / 2) }),
			want: lossOutcome{openErr: true}},
		{name: "MANIFEST zeroed", file: manifestFile, damage: zeroRange(fraction(0, 1), fraction(1, 1)),
			want: lossOutcome{openErr: true}},
		{name: "MANIFEST byte flipped", file: manifestFile, damage: flipAtOffset(fraction(1, 3)),
			want: lossOutcome{openErr: true}},
		{name: "table cut in half", file: tableFile, damage: cutAt(func(fx *lossFixture) int64 { return int64(len(fx.files[fx.table]) / 2) }),
			want: lossOutcome{kept: all, tableReadErr: true}},
		{name: "table zeroed", file: tableFile, damage: zeroRange(fraction(0, 1), fraction(1, 1)),
			want: lossOutcome{kept: all, tableReadErr: true}},
		{name: "table byte flipped", file: tableFile, damage: flipAtOffset(fraction(1, 3)),
			want: lossOutcome{kept: all, tableReadErr: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, log := fx.run(t, c)
			if got != c.want {
				t.Errorf("got  %v\nwant %v\nlog:\n%s", got, c.want, log)
			}
		})
	}
}

// run builds the damaged directory of c, checks and opens it.
func (fx *lossFixture) run(t *testing.T, c lossCase) (lossOutcome, string) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	files := maps.Clone(fx.files)
	if c.crash {
		delete(files, fx.marker)
	}
	name := c.file(fx)
	if c.damage == nil {
		delete(files, name)
	} else {
		files[name] = c.damage(fx, files[name])
	}
	for n, data := range files {
		writeFile(t, fs, "/db/"+n, data)
	}
	var out lossOutcome
	report, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	out.checkOK = report.OK()
	if !out.checkOK && !anyNamesFile(report.Problems, "/db/"+name, -1) && name != fx.wal {
		t.Errorf("Check problems %v name no damaged file", report.Problems)
	}
	logs := &logCapture{}
	opts := lossOptions(fs, logs)
	opts.StrictWALRecovery = c.strict
	db, err := Open("/db", opts)
	if err != nil {
		if !errors.Is(err, ErrCorruption) {
			t.Errorf("Open: %v, want a corruption error", err)
		}
		out.openErr = true
		return out, err.Error()
	}
	defer db.Close()
	out.lost = db.Metrics().WAL.RecoveryLostEntries
	// The WAL's ERRORs: a compaction that meets a damaged table (it may
	// start at once, in the background) logs its own, naming the table.
	for _, line := range logs.matching("ERROR ") {
		if !strings.Contains(line, ".sst") {
			out.errorLogged = true
		}
	}
	for i := range lossBatches {
		for j := range 2 {
			_, err := db.Get([]byte(lossBatchKey(i, j)))
			switch {
			case err == nil && i == out.kept && j == 1:
				out.kept++
			case err == nil && i == out.kept:
			case errors.Is(err, ErrNotFound) && i >= out.kept:
			default:
				t.Errorf("%s after %d batches kept: %v", lossBatchKey(i, j), out.kept, err)
			}
		}
	}
	for i := range lossTableKeys {
		if _, err := db.Get([]byte(lossTableKey(i))); err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Errorf("%s: %v", lossTableKey(i), err)
			}
			out.tableReadErr = true
		}
	}
	return out, strings.Join(logs.matching(""), "\n")
}
