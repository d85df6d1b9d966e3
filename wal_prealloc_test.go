package lsmgo

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestWALZeroedTail checks the WAL a SyncAlways DB writes: its records
// are followed by zeros written ahead of them, recovery reads every record
// and takes the zeros for the end, and a byte of garbage anywhere in the
// zeros (a write of zeros or records torn by a crash) loses nothing and is
// no problem for Check.
func TestWALZeroedTail(t *testing.T) {
	mem := vfs.NewMem()
	opts := &Options{FS: mem, MemTableSize: 64 << 10, Logger: slog.New(slog.DiscardHandler)}
	db := openTestDB(t, "/db", opts)
	const keys = 50
	for i := range keys {
		if err := db.Set([]byte(fmt.Sprintf("k%02d", i)), []byte(fmt.Sprintf("v%02d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	// The image a crash now leaves: the WAL as synced, without a Close.
	img := mem.CrashClone()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := img.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var logName string
	for _, n := range names {
		if typ, _, ok := base.ParseFilename(n); ok && typ == base.FileTypeLog {
			logName = "/db/" + n
		}
	}
	data := readAllFile(t, img, logName)
	end := recordsEnd(t, data)
	if end >= int64(len(data)) || !allZero(data[end:]) {
		t.Fatalf("WAL of %d bytes: records end at %d, and what follows is not all zeros", len(data), end)
	}
	for _, pos := range []int64{end, end + 1, (end + int64(len(data))) / 2, int64(len(data)) - 1} {
		fs := img.CrashClone()
		damaged := bytes.Clone(data)
		damaged[pos] = 0x5a
		writeFile(t, fs, logName, damaged)
		if report, err := Check("/db", &Options{FS: fs}); err != nil || len(report.Problems) > 0 {
			t.Errorf("garbage at %d in the zero tail: Check: %v %v", pos, err, report.Problems)
		}
		db, err := Open("/db", &Options{FS: fs, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("garbage at %d in the zero tail: Open: %v", pos, err)
		}
		for i := range keys {
			k := fmt.Sprintf("k%02d", i)
			if v, err := db.Get([]byte(k)); err != nil || string(v) != fmt.Sprintf("v%02d", i) {
				t.Errorf("garbage at %d in the zero tail: Get(%s) = %q, %v", pos, k, v, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// recordsEnd returns where the last intact record of a WAL ends.
func recordsEnd(t *testing.T, data []byte) int64 {
	t.Helper()
	r := record.NewReader(bytes.NewReader(data), "wal")
	var end int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return end
		}
		if err != nil {
			t.Fatal(err)
		}
		end = r.Offset() + record.HeaderSize + int64(len(rec))
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
