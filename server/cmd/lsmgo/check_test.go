package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// makeTestDB writes a small DB into a temp directory: tables in L0 and
// below, a manifest with several edits, and a WAL holding the last writes.
// It returns the directory and its files by type.
func makeTestDB(t *testing.T) (string, map[fileKind][]string) {
	t.Helper()
	dir := t.TempDir()
	db, err := lsmgo.Open(dir, &lsmgo.Options{
		MemTableSize: 64 << 10, BlockSize: 256, TargetFileSize: 1 << 10, Compression: lsmgo.NoCompression,
	})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		must(db.Set(fmt.Appendf(nil, "key%03d", i), fmt.Appendf(nil, "value-%d-%s", i, strings.Repeat("x", i%20)), nil))
	}
	must(db.Compact(nil, nil))
	for i := 0; i < 60; i += 3 {
		must(db.Delete(fmt.Appendf(nil, "key%03d", i), nil))
	}
	must(db.Flush())
	must(db.Set([]byte("wal-a"), []byte("first"), nil))
	must(db.SetWithExpiry([]byte("wal-b"), []byte("expiring"), time.Now().Add(time.Hour), nil))
	must(db.Delete([]byte("key001"), nil))
	must(db.Close())

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[fileKind][]string{}
	for _, e := range entries {
		if kind, ok := kindOf(e.Name()); ok {
			files[kind] = append(files[kind], e.Name())
		}
	}
	for _, typ := range []fileKind{kindLog, kindTable, kindManifest} {
		if len(files[typ]) == 0 {
			t.Fatalf("test DB lacks a %s file: %v", typ, files)
		}
	}
	return dir, files
}

// fileKind is the kind of a DB file as its name tells it (doc/format.md).
// The tests tell files apart by name, from outside the engine, as a user
// of lsmgo check and dump does.
type fileKind string

const (
	kindLog      fileKind = "WAL"
	kindTable    fileKind = "table"
	kindManifest fileKind = "MANIFEST"
)

// kindOf returns the kind of the DB file called name, if it is a WAL, a
// table or a manifest.
func kindOf(name string) (fileKind, bool) {
	switch {
	case strings.HasSuffix(name, ".log"):
		return kindLog, true
	case strings.HasSuffix(name, ".sst"):
		return kindTable, true
	case strings.HasPrefix(name, "MANIFEST-"):
		return kindManifest, true
	}
	return "", false
}

// copyDir copies a DB directory so each case damages its own copy.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func run(args ...string) (status int, stdout, stderr string) {
	var out, errb bytes.Buffer
	status = runMain(args, &out, &errb)
	return status, out.String(), errb.String()
}

func TestCheckCommandHealthy(t *testing.T) {
	dir, _ := makeTestDB(t)
	status, out, errOut := run("check", dir)
	if status != 0 || !strings.HasSuffix(strings.TrimSpace(out), "OK") || errOut != "" {
		t.Fatalf("check of a healthy DB: status %d\nstdout:\n%s\nstderr:\n%s", status, out, errOut)
	}
	if strings.Contains(out, "problem:") || strings.Contains(out, "warning:") {
		t.Fatalf("check of a healthy DB printed findings:\n%s", out)
	}
}

// TestCheckCommandOptions: check prints the options the DB was last
// opened with, and a DB without an OPTIONS file (last opened before the
// file existed) checks cleanly and says so.
func TestCheckCommandOptions(t *testing.T) {
	dir, _ := makeTestDB(t)
	status, out, _ := run("check", dir)
	for _, want := range []string{"options: sync=always memtable-size=65536 ", " block-size=256 ", " compression=none ", " target-file-size=1024 "} {
		if status != 0 || !strings.Contains(out, want) {
			t.Errorf("check: status %d, no %q in\n%s", status, want, out)
		}
	}
	if err := os.Remove(filepath.Join(dir, "OPTIONS")); err != nil {
		t.Fatal(err)
	}
	status, out, _ = run("check", dir)
	if status != 0 || !strings.Contains(out, "options: none recorded") || strings.Contains(out, "warning:") ||
		!strings.HasSuffix(strings.TrimSpace(out), "OK") {
		t.Errorf("check without OPTIONS: status %d\n%s", status, out)
	}
}

func TestCheckCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"check"}, {"check", "a", "b"}, {"check", "--bogus", "a"}} {
		if status, _, errOut := run(args...); status != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("%q: status %d, stderr %q; want 2 and usage", args, status, errOut)
		}
	}
	if status, _, errOut := run("check", filepath.Join(t.TempDir(), "missing")); status != 1 || errOut == "" {
		t.Errorf("check of a missing directory: status %d, stderr %q", status, errOut)
	}
}

func TestCheckCommandOpenDB(t *testing.T) {
	dir, _ := makeTestDB(t)
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if status, _, errOut := run("check", dir); status != 1 || !strings.Contains(errOut, "open") {
		t.Fatalf("check of an open DB: status %d, stderr %q", status, errOut)
	}
}

// TestCheckCommandDamage flips bytes spread over every WAL, table and
// manifest: each damaged copy exits 1 with a problem line naming the file
// and an offset, except damage to the WAL's last record, which is a torn
// tail: a warning with exit status 0.
func TestCheckCommandDamage(t *testing.T) {
	dir, files := makeTestDB(t)
	cases := 0
	for _, typ := range []fileKind{kindLog, kindTable, kindManifest} {
		for _, name := range files[typ] {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, pos := range []int{0, len(data) / 3, len(data) / 2, len(data) - 1} {
				cases++
				damaged := copyDir(t, dir)
				flipped := slices.Clone(data)
				flipped[pos] ^= 0x10
				if err := os.WriteFile(filepath.Join(damaged, name), flipped, 0o644); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(damaged, name)
				status, out, errOut := run("check", damaged)
				report, err := lsmgo.Check(damaged, nil)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s byte %d: status %d\nstdout:\n%s\nstderr:\n%s", name, pos, status, out, errOut)
				if report.OK() {
					// Only a torn WAL tail is not a problem.
					if typ != kindLog || status != 0 || !strings.Contains(out, "warning: lsmgo: corruption in "+path+" at offset ") {
						t.Errorf("%s: want a torn-tail warning and status 0", what)
					}
					continue
				}
				if status != 1 || strings.Count(out, "problem: ") != len(report.Problems) {
					t.Errorf("%s: want status 1 and %d problem lines", what, len(report.Problems))
				}
				if !strings.Contains(out, "problem: lsmgo: corruption in "+path) {
					t.Errorf("%s: no problem line names the file", what)
				}
			}
		}
	}
	t.Logf("%d damaged copies checked", cases)
}

// TestCheckCommandSpools: upload spool files a crash left in DIR/tmp are
// counted in a warning, which leaves the exit status 0.
func TestCheckCommandSpools(t *testing.T) {
	dir, _ := makeTestDB(t)
	spool := filepath.Join(dir, "tmp")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{1000, 2345} {
		if err := os.WriteFile(filepath.Join(spool, fmt.Sprintf("imgbed-upload-%d", i)), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	status, out, errOut := run("check", dir)
	want := "warning: 2 leftover upload spool file(s), 3345 bytes, in " + spool
	if status != 0 || !strings.Contains(out, want) {
		t.Fatalf("status %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", status, want, out, errOut)
	}
}

// TestCheckCommandCutWAL is issue 25's case: after a clean shutdown, the
// WAL cut to 5 bytes loses acknowledged writes; check exits 1 and says
// so, where it used to warn of a torn tail.
func TestCheckCommandCutWAL(t *testing.T) {
	dir, files := makeTestDB(t)
	logs := slices.Sorted(slices.Values(files[kindLog]))
	if len(logs) != 2 {
		t.Fatalf("WALs %v; want the data and the close marker", logs)
	}
	if err := os.Truncate(filepath.Join(dir, logs[0]), 5); err != nil {
		t.Fatal(err)
	}
	status, out, errOut := run("check", dir)
	if status != 1 || !strings.Contains(out, "problem: lsmgo: corruption in "+filepath.Join(dir, logs[0])) ||
		!strings.Contains(out, "acknowledged writes are lost") {
		t.Fatalf("status %d, want 1 and a problem saying acknowledged writes are lost\nstdout:\n%s\nstderr:\n%s", status, out, errOut)
	}
}
