package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMemCapacity: a budgeted MemFS fails the write that does not fit
// with ENOSPC after writing what fits, counts every file, frees space on
// remove and truncate, and reports its usage.
func TestMemCapacity(t *testing.T) {
	fs := NewMem()
	if _, _, err := fs.DiskUsage("/"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("DiskUsage without a budget: %v", err)
	}
	fs.SetCapacity(10)
	a := mustCreate(t, fs, "a", "123456", false)
	b, err := fs.Create("b")
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.Write([]byte("abcdef"))
	if n != 4 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the budget: %d, %v; want 4 bytes and ENOSPC", n, err)
	}
	if got := readFile(t, fs, "b"); got != "abcd" {
		t.Fatalf("b = %q, want the prefix that fit", got)
	}
	// Overwriting in place needs no space.
	if wa, ok := b.(interface {
		WriteAt([]byte, int64) (int, error)
	}); !ok {
		t.Fatal("no WriteAt")
	} else if _, err := wa.WriteAt([]byte("AB"), 0); err != nil {
		t.Fatalf("overwrite on a full disk: %v", err)
	}
	if free, total, err := fs.DiskUsage("/"); free != 0 || total != 10 || err != nil {
		t.Fatalf("DiskUsage = %d, %d, %v; want 0 of 10", free, total, err)
	}
	if err := fs.Truncate("a", 2); err != nil {
		t.Fatal(err)
	}
	if free, _, _ := fs.DiskUsage("/"); free != 4 {
		t.Fatalf("free after truncating a to 2 bytes: %d, want 4", free)
	}
	if err := fs.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if free, _, _ := fs.DiskUsage("/"); free != 8 {
		t.Fatalf("free after removing b: %d, want 8", free)
	}
	if _, err := a.Write([]byte("xyz")); err != nil {
		t.Fatal(err)
	}
	fs.SetCapacity(0)
	if _, err := a.Write(make([]byte, 100)); err != nil {
		t.Fatalf("write after the budget was removed: %v", err)
	}
	if c := fs.CrashClone(); c.capacity.Load() != 0 {
		t.Fatal("crash clone has a budget its source no longer has")
	}
}

// TestMemTruncate: a truncation is visible at once and durable only after
// a sync, and never changes the durable state before then, even when the
// file grows again past the cut.
func TestMemTruncate(t *testing.T) {
	fs := NewMem()
	f := mustCreate(t, fs, "f", "abcdef", true)
	syncDir(t, fs, "")
	if err := fs.Truncate("f", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("XYZ")); err != nil {
		t.Fatal(err)
	}
	// The handle's offset is 6: the gap reads as zeros.
	if got := readFile(t, fs, "f"); got != "ab\x00\x00\x00\x00XYZ" {
		t.Fatalf("after truncate and write: %q", got)
	}
	if got := readFile(t, fs.CrashClone(), "f"); got != "abcdef" {
		t.Fatalf("unsynced truncation changed the durable state: %q", got)
	}
	if err := fs.Truncate("f", 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs.CrashClone(), "f"); got != "ab\x00" {
		t.Fatalf("synced truncation: crash keeps %q", got)
	}
	if err := fs.Truncate("f", 5); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "f"); got != "ab\x00\x00\x00" {
		t.Fatalf("extending truncate: %q", got)
	}
	for _, tc := range []struct {
		name string
		size int64
	}{{"missing", 0}, {"", 0}, {"f", -1}} {
		if err := fs.Truncate(tc.name, tc.size); err == nil {
			t.Errorf("Truncate(%q, %d) succeeded", tc.name, tc.size)
		}
	}
}

// TestOSSpace: the OS filesystem reports the space of a real directory
// and truncates files.
func TestOSSpace(t *testing.T) {
	dir := t.TempDir()
	free, total, err := DiskUsage(Default, dir)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no statfs on this platform")
	}
	if err != nil || total == 0 || free > total {
		t.Fatalf("DiskUsage = %d, %d, %v", free, total, err)
	}
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Truncate(Default, name, 2); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(name); string(data) != "ab" {
		t.Fatalf("after Truncate: %q", data)
	}
}

// TestCapabilitiesMissing: an FS without the optional capabilities says
// so with errors.ErrUnsupported.
func TestCapabilitiesMissing(t *testing.T) {
	var fs struct{ FS }
	if _, _, err := DiskUsage(fs, "/"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("DiskUsage: %v", err)
	}
	if err := Truncate(fs, "f", 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Truncate: %v", err)
	}
}
