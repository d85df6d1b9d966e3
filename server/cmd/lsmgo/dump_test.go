package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wantLines fails unless every pattern matches some line of out.
func wantLines(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile("(?m)" + p).MatchString(out) {
			t.Errorf("%s: no line matches %q in:\n%s", what, p, out)
		}
	}
}

func TestDumpDir(t *testing.T) {
	dir, files := makeTestDB(t)
	out := mustRun(t, "dump", dir)
	wantLines(t, "dump DIR", out,
		`^manifest: MANIFEST-\d{6}$`,
		`^log number: \d+$`,
		`^last seqnum: \d+$`,
		`^L0: 1 file\(s\), \d+ bytes$`,
		`^L6: \d+ file\(s\), \d+ bytes$`,
		`^  \d{6}\.sst:\["key\d{3}"#\d+,(SET|DEL)-"key\d{3}"#\d+,(SET|DEL)\] size=\d+ seq=\[\d+,\d+\]$`,
	)
	for _, name := range files[kindTable] {
		if !strings.Contains(out, "  "+name+":") {
			t.Errorf("dump DIR does not list %s:\n%s", name, out)
		}
	}
}

func TestDumpTable(t *testing.T) {
	dir, files := makeTestDB(t)
	table := filepath.Join(dir, files[kindTable][0])
	out := mustRun(t, "dump", table)
	wantLines(t, "dump TABLE", out, `^entries: \d+ \(deletions \d+\)$`, `^seqnums: \[\d+, \d+\]$`, `^compression: `)
	if strings.Contains(out, " = ") {
		t.Errorf("entries printed without --entries:\n%s", out)
	}
	// Flags may follow the file.
	out = mustRun(t, "dump", table, "--entries", "--max-value", "5")
	wantLines(t, "dump --entries", out, `^"key\d{3}"#\d+,SET = "value"\.\.\. \(\d+ bytes\)$`)
}

func TestDumpLog(t *testing.T) {
	dir, files := makeTestDB(t)
	log := filepath.Join(dir, files[kindLog][0])
	out := mustRun(t, "dump", "--max-value=0", log)
	wantLines(t, "dump LOG", out,
		`^offset 0: batch seqnum \d+, 1 record\(s\), \d+ bytes$`,
		`^  "wal-a"#\d+,SET = "first"$`,
		`^  "wal-b"#\d+,SETEX = "expiring" expires \d{4}-\d\d-\d\dT`,
		`^  "key001"#\d+,DEL = \(tombstone\)$`,
	)
	// A torn tail is shown, not an error.
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// The WAL of a DB that syncs every write runs on in zeros written
	// ahead of its records; the tear goes into the last record.
	data = bytes.TrimRight(data, "\x00")
	if err := os.WriteFile(log, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	status, out, _ := run("dump", log)
	if status != 0 || strings.Contains(out, `"key001"`) {
		t.Fatalf("torn log: status %d, out:\n%s", status, out)
	}
	wantLines(t, "dump torn LOG", out, `^offset \d+: torn tail`)
}

func TestDumpManifest(t *testing.T) {
	dir, files := makeTestDB(t)
	m := filepath.Join(dir, files[kindManifest][0])
	out := mustRun(t, "dump", m)
	wantLines(t, "dump MANIFEST", out,
		`^offset 0: version edit$`,
		`^  log number: \d+$`,
		`^  next file number: \d+$`,
		`^  last seqnum: \d+$`,
		`^  add L0 \d{6}\.sst:\[`,
		`^  delete L0 \d{6}\.sst$`,
	)
}

func TestDumpErrors(t *testing.T) {
	dir, files := makeTestDB(t)
	for _, args := range [][]string{{"dump"}, {"dump", "a", "b"}, {"dump", "--entries"}} {
		if status, _, errOut := run(args...); status != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("%q: status %d, stderr %q; want 2 and usage", args, status, errOut)
		}
	}
	if status, _, errOut := run("dump", filepath.Join(dir, "CURRENT")); status != 1 || !strings.Contains(errOut, "not a table") {
		t.Errorf("dump CURRENT: status %d, stderr %q", status, errOut)
	}
	table := filepath.Join(dir, files[kindTable][0])
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(table, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if status, _, errOut := run("dump", table); status != 1 || !strings.Contains(errOut, "corruption in "+table) {
		t.Errorf("dump of a damaged table: status %d, stderr %q", status, errOut)
	}
}

// mustRun runs the command, which must succeed without printing to stderr,
// and returns its stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	status, out, errOut := run(args...)
	if status != 0 || errOut != "" {
		t.Fatalf("%v: status %d, stderr %q", args, status, errOut)
	}
	return out
}
