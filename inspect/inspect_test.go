package inspect_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/inspect"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestDump dumps each kind of file of a small DB on a MemFS. The lsmgo
// command's tests check the output line by line on a real directory.
func TestDump(t *testing.T) {
	fs := vfs.NewMem()
	db, err := lsmgo.Open("db", &lsmgo.Options{FS: fs, WALRetainSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("flushed"), []byte("to a table"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("logged"), []byte("in the WAL"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	dump := func(target string, opts inspect.DumpOptions) string {
		t.Helper()
		var out strings.Builder
		opts.FS = fs
		if err := inspect.Dump(&out, target, opts); err != nil {
			t.Fatalf("Dump(%s): %v", target, err)
		}
		return out.String()
	}
	want := func(out string, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(out, s) {
				t.Errorf("no %q in:\n%s", s, out)
			}
		}
	}
	want(dump("db", inspect.DumpOptions{}), "manifest: MANIFEST-", "L0: 1 file(s)")
	kinds := 0
	for _, name := range names {
		path := fs.PathJoin("db", name)
		switch {
		case strings.HasSuffix(name, ".sst"):
			kinds++
			want(dump(path, inspect.DumpOptions{}), "entries: 1")
			want(dump(path, inspect.DumpOptions{Entries: true, MaxValue: 4}), `"flushed"`, `= "to a"... (10 bytes)`)
		case strings.HasSuffix(name, ".log"):
			if out := dump(path, inspect.DumpOptions{}); strings.Contains(out, "logged") {
				kinds++
				want(out, "batch seqnum", `"in the WAL"`)
			}
		case strings.HasSuffix(name, ".rlog"):
			// The WAL of the flushed write, retained.
			if out := dump(path, inspect.DumpOptions{}); strings.Contains(out, "flushed") {
				kinds++
				want(out, "batch seqnum", `"to a table"`)
			}
		case strings.HasPrefix(name, "MANIFEST-"):
			kinds++
			want(dump(path, inspect.DumpOptions{}), "version edit", "add L0 ")
		}
	}
	if kinds != 4 {
		t.Errorf("dumped %d of the 4 kinds of file in %v", kinds, names)
	}
	if err := inspect.Dump(&strings.Builder{}, "db/CURRENT", inspect.DumpOptions{FS: fs}); err == nil || !strings.Contains(err.Error(), "not a table") {
		t.Errorf("Dump of CURRENT: %v, want an error saying it is not a table, WAL or MANIFEST", err)
	}
}

// TestDumpBlobs checks that a directory's dump lists its blob files with
// their live bytes: all of a value's bytes while a table points to it, none
// once an overwrite has been flushed.
func TestDumpBlobs(t *testing.T) {
	fs := vfs.NewMem()
	db, err := lsmgo.Open("db", &lsmgo.Options{FS: fs, ValueThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("v", 1000))
	if err := db.Set([]byte("a"), big, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		t.Helper()
		var out strings.Builder
		if err := inspect.Dump(&out, "db", inspect.DumpOptions{FS: fs}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := dump()
	// Live bytes are the record's: its header, the key and the value.
	live := fmt.Sprintf("bytes, %d live\n", blob.RecordHeaderLen+len("a")+len(big))
	if !strings.Contains(out, "blobs: 1 file(s), ") || !strings.Contains(out, ".blob: ") || !strings.Contains(out, live) {
		t.Errorf("want one blob file with %q in:\n%s", live, out)
	}
	if err := db.Set([]byte("a"), []byte("small"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if out := dump(); !strings.Contains(out, " 0 live\n") {
		t.Errorf("want blob files with 0 live bytes after the overwrite, or none, in:\n%s", out)
	}
}
