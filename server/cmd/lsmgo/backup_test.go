package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

func readDB(t *testing.T, dir string) map[string]string { return testutil.ReadDB(t, dir, nil) }

// TestBackupRestoreCommands backs a DB directory up twice, lists the
// backups, restores each, and refuses a damaged one naming the file.
func TestBackupRestoreCommands(t *testing.T) {
	src, _ := makeTestDB(t)
	set := filepath.Join(t.TempDir(), "set")
	want1 := readDB(t, src)
	status, out, errOut := run("backup", src, set)
	if status != 0 || !strings.HasPrefix(out, "backup ") || errOut != "" {
		t.Fatalf("backup: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	if _, err := os.Stat(filepath.Clean(src) + ".backup-checkpoint"); !os.IsNotExist(err) {
		t.Fatalf("the checkpoint beside SRC was left behind: %v", err)
	}
	db, err := lsmgo.Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("after-first-backup"), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	// Open, the DB cannot be backed up from outside its process.
	status, _, errOut = run("backup", src, set)
	if status != 1 || !strings.Contains(errOut, "BGSAVE") {
		t.Fatalf("backup of an open DB: status %d, stderr %q; want 1 and a pointer to BGSAVE", status, errOut)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want2 := readDB(t, src)
	status, out, errOut = run("backup", "--s3-access-key", "unused", src, set)
	if status != 0 || !strings.Contains(out, "already in the backup set") {
		t.Fatalf("second backup: status %d, stdout %q, stderr %q", status, out, errOut)
	}

	status, out, errOut = run("restore", "--list", set)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if status != 0 || len(lines) != 2 || errOut != "" {
		t.Fatalf("restore --list: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	first := strings.Fields(lines[0])[0]
	tmp := t.TempDir()
	for _, c := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{set, filepath.Join(tmp, "latest")}, want2},
		{[]string{"--backup", first, set, filepath.Join(tmp, "first")}, want1},
	} {
		status, out, errOut := run(append([]string{"restore"}, c.args...)...)
		dir := c.args[len(c.args)-1]
		if status != 0 || !strings.HasPrefix(out, "restored backup ") || errOut != "" {
			t.Fatalf("restore %q: status %d, stdout %q, stderr %q", c.args, status, out, errOut)
		}
		if status, out, _ := run("check", dir); status != 0 {
			t.Fatalf("check of the restored %s: %s", dir, out)
		}
		got := readDB(t, dir)
		if len(got) != len(c.want) {
			t.Fatalf("restore %q holds %d keys; want %d", c.args, len(got), len(c.want))
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Fatalf("restore %q: %q = %q; want %q", c.args, k, got[k], v)
			}
		}
	}

	// Damage every stored object: the restore names a file and fails.
	objs, err := filepath.Glob(filepath.Join(set, "data", "*"))
	if err != nil || len(objs) == 0 {
		t.Fatalf("no objects in the set: %v", err)
	}
	for _, o := range objs {
		b, err := os.ReadFile(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(o, append(b, '!'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status, _, errOut = run("restore", set, filepath.Join(tmp, "damaged"))
	if status != 1 || !strings.Contains(errOut, "is damaged: file ") {
		t.Fatalf("restore of a damaged backup: status %d, stderr %q", status, errOut)
	}
	if _, err := os.Stat(filepath.Join(tmp, "damaged")); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left its directory: %v", err)
	}
}

// TestBackupErrors checks what backup and restore refuse.
func TestBackupErrors(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "missing")
	if status, _, errOut := run("backup", missing, filepath.Join(tmp, "set")); status != 1 || !strings.Contains(errOut, "holds no lsmgo DB") {
		t.Fatalf("backup of a missing directory: status %d, stderr %q", status, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("backup created the directory it was to back up: %v", err)
	}
	if status, _, errOut := run("restore", filepath.Join(tmp, "set"), filepath.Join(tmp, "out")); status != 1 || !strings.Contains(errOut, "no backup") {
		t.Fatalf("restore from an empty set: status %d, stderr %q", status, errOut)
	}
	if status, _, errOut := run("backup", "s3://", filepath.Join(tmp, "set")); status != 1 || errOut == "" {
		t.Fatalf("backup from a bad source: status %d, stderr %q", status, errOut)
	}
	if status, _, errOut := run("backup", tmp, "s3://bucket?nope=1"); status != 1 || !strings.Contains(errOut, "unknown parameter") {
		t.Fatalf("backup to a bad s3 URL: status %d, stderr %q", status, errOut)
	}
	for _, args := range [][]string{
		{"backup"}, {"backup", "a"}, {"backup", "a", "b", "c"}, {"backup", "--nope", "a", "b"},
		{"restore", "a"}, {"restore", "--list", "a", "b"}, {"restore", "a", "b", "c"},
	} {
		status, _, errOut := run(args...)
		if status != 2 || !strings.Contains(errOut, "usage: lsmgo "+args[0]) {
			t.Errorf("%q: status %d, stderr %q; want 2 and the usage", args, status, errOut)
		}
	}
}
