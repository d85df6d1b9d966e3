package vfs

import "testing"

// TestSyncDir checks that SyncDir is what keeps a synced file's name
// across a crash, and that it reports a directory it cannot open.
func TestSyncDir(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("d", 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, "")
	mustCreate(t, fs, "d/f", "data", true).Close()
	if got := readFile(t, fs.CrashClone(), "d/f"); got != "<missing>" {
		t.Fatalf("before SyncDir, a crash kept d/f as %q; the test needs it lost", got)
	}
	if err := SyncDir(fs, "d"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs.CrashClone(), "d/f"); got != "data" {
		t.Fatalf("after SyncDir, a crash left d/f as %q, want %q", got, "data")
	}
	if err := SyncDir(fs, "missing"); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}
