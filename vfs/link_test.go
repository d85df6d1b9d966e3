package vfs

import (
	"errors"
	"os"
	"testing"
)

// TestLinkContract checks Link on the OS and in memory: both names reach
// one file, a link over an existing name or of a directory fails, and
// removing one name leaves the other.
func TestLinkContract(t *testing.T) {
	eachFS(t, func(t *testing.T, fs FS, _ string, join func(string) string) {
		if err := fs.MkdirAll(join("sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, fs, join("a"), "12345", true).Close()
		if err := Link(fs, join("a"), join("sub/b")); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fs, join("sub/b")); got != "12345" {
			t.Fatalf("the link reads %q", got)
		}
		if err := Link(fs, join("a"), join("sub/b")); !errors.Is(err, os.ErrExist) {
			t.Fatalf("Link over an existing name = %v; want ErrExist", err)
		}
		if err := Link(fs, join("sub"), join("c")); err == nil {
			t.Fatal("Link of a directory succeeded")
		}
		if err := Link(fs, join("missing"), join("d")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Link of a missing file = %v; want ErrNotExist", err)
		}
		if err := fs.Remove(join("a")); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fs, join("sub/b")); got != "12345" {
			t.Fatalf("the link after removing the first name reads %q", got)
		}
	})
}

// TestMemLinkCrash checks what survives a crash: the new name only once
// its directory was synced, and then with the file's durable data, shared
// with the old name.
func TestMemLinkCrash(t *testing.T) {
	fs := NewMem()
	mustCreate(t, fs, "a", "durable", true).Close()
	syncDir(t, fs, "/")
	if err := fs.Link("a", "b"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs.CrashClone(), "b"); got != "<missing>" {
		t.Fatalf("an unsynced link survived a crash: %q", got)
	}
	syncDir(t, fs, "/")
	f, err := fs.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("unsynced"))
	f.Close()
	c := fs.CrashClone()
	if got := readFile(t, c, "b"); got != "durable" {
		t.Fatalf("the synced link after a crash reads %q", got)
	}
	// Still one inode in the clone.
	g, err := c.Create("b")
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("x"))
	g.Close()
	if got := readFile(t, c, "a"); got != "x" {
		t.Fatalf("the clone's two names are two files: a reads %q", got)
	}
	if got := readFile(t, fs, "b"); got != "unsynced" {
		t.Fatalf("a write through one name is not seen through the other: %q", got)
	}
}

// TestLinkUnsupported checks the error of an FS without Linker.
func TestLinkUnsupported(t *testing.T) {
	type plain struct{ FS }
	if err := Link(plain{NewMem()}, "a", "b"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Link on an FS without Linker = %v", err)
	}
}

// TestMkdirAllSynced checks that the directories MkdirAllSynced makes
// survive a crash, and that it accepts an existing directory.
func TestMkdirAllSynced(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/a", 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, "/")
	if err := MkdirAllSynced(fs, "/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.CrashClone().Stat("/a/b/c"); err != nil {
		t.Fatalf("after a crash: %v", err)
	}
	if err := MkdirAllSynced(fs, "/a/b/c", 0o755); err != nil {
		t.Fatalf("on an existing directory: %v", err)
	}
	if err := MkdirAllSynced(fs, "/", 0o755); err != nil {
		t.Fatalf("on the root: %v", err)
	}
	mustCreate(t, fs, "/f", "", true).Close()
	if err := MkdirAllSynced(fs, "/f/g", 0o755); err == nil {
		t.Fatal("made a directory under a file")
	}
}
