package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sync"
	"testing"
)

func mustCreate(t *testing.T, fs FS, name string, data string, sync bool) File {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// syncDir is SyncDir for tests: the crash tests that rely on it to keep
// directory entries test SyncDir too.
func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	if err := SyncDir(fs, dir); err != nil {
		t.Fatal(err)
	}
}

// readFile returns name's content, or "<missing>" when it does not exist.
func readFile(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func list(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestMemRoot(t *testing.T) {
	fs := NewMem()
	for _, name := range []string{"", ".", "/", "//", "a/.."} {
		fi, err := fs.Stat(name)
		if err != nil || !fi.IsDir() {
			t.Fatalf("Stat(%q) = %v, %v; want the root directory", name, fi, err)
		}
		if names := list(t, fs, name); len(names) != 0 {
			t.Fatalf("List(%q) = %q on a new MemFS", name, names)
		}
	}
	if err := fs.Remove("/"); err == nil {
		t.Fatal("removing the root succeeded")
	}
	if _, err := fs.Create("/"); err == nil {
		t.Fatal("creating the root as a file succeeded")
	}
	if err := fs.MkdirAll("", 0o755); err != nil {
		t.Fatal(err)
	}
	// Relative and absolute spellings name the same file.
	mustCreate(t, fs, "x", "1", false).Close()
	if got := readFile(t, fs, "/x"); got != "1" {
		t.Fatalf("/x = %q", got)
	}
	if got := fs.PathJoin("a", "b", "../c"); got != "a/c" {
		t.Fatalf("PathJoin = %q", got)
	}
}

func TestMemReadWrite(t *testing.T) {
	fs := NewMem()
	f := mustCreate(t, fs, "f", "hello", false)
	if _, err := f.Write([]byte(" world")); err != nil {
		t.Fatal(err)
	}
	// A Create handle reads too, and a fresh Open has its own offset.
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 7); n != 4 || err != nil || string(buf) != "orld" {
		t.Fatalf("ReadAt(7) = %d, %v, %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 9); n != 2 || err != io.EOF || string(buf[:n]) != "ld" {
		t.Fatalf("ReadAt(9) = %d, %v; want 2, io.EOF", n, err)
	}
	if n, err := f.ReadAt(buf, 11); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt(11) = %d, %v; want 0, io.EOF", n, err)
	}
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Fatal("ReadAt(-1) succeeded")
	}
	r, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		n, err := r.Read(buf[:3])
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "hello world" {
		t.Fatalf("Read = %q", got)
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read at EOF = %d, %v", n, err)
	}
	fi, err := r.Stat()
	if err != nil || fi.Size() != 11 || fi.Name() != "f" || fi.IsDir() {
		t.Fatalf("File.Stat = %+v, %v", fi, err)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("Write on a read-only handle succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Every use of a closed handle fails.
	if _, err := r.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadAt after Close: %v", err)
	}
	if _, err := f.Write(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Stat after Close: %v", err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMemErrors(t *testing.T) {
	fs := NewMem()
	var pe *os.PathError
	if _, err := fs.Open("missing"); !errors.Is(err, os.ErrNotExist) || !errors.As(err, &pe) {
		t.Fatalf("Open(missing) = %v; want an *os.PathError matching os.ErrNotExist", err)
	}
	for name, err := range map[string]error{
		"Stat":    func() error { _, err := fs.Stat("missing"); return err }(),
		"List":    func() error { _, err := fs.List("missing"); return err }(),
		"Remove":  fs.Remove("missing"),
		"Rename":  fs.Rename("missing", "x"),
		"OpenDir": func() error { _, err := fs.OpenDir("missing"); return err }(),
		"Create":  func() error { _, err := fs.Create("nodir/f"); return err }(),
	} {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of a missing path = %v; want os.ErrNotExist", name, err)
		}
	}
	mustCreate(t, fs, "file", "", false).Close()
	if err := fs.MkdirAll("file/sub", 0o755); err == nil {
		t.Error("MkdirAll under a file succeeded")
	}
	if _, err := fs.List("file"); err == nil {
		t.Error("List of a file succeeded")
	}
	if _, err := fs.OpenDir("file"); err == nil {
		t.Error("OpenDir of a file succeeded")
	}
	if err := fs.MkdirAll("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Create("d"); err == nil {
		t.Error("Create over a directory succeeded")
	}
	if _, err := fs.Open("d"); err == nil {
		t.Error("Open of a directory succeeded")
	}
	if err := fs.Rename("file", "d"); err == nil {
		t.Error("renaming a file over a directory succeeded")
	}
	if err := fs.Rename("d", "file"); err == nil {
		t.Error("renaming a directory over a file succeeded")
	}
	if err := fs.Rename("d", "d/inside"); err == nil {
		t.Error("renaming a directory into itself succeeded")
	}
	d, err := fs.OpenDir("d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(make([]byte, 1)); err == nil {
		t.Error("Read of a directory handle succeeded")
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Error("Write to a directory handle succeeded")
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() || fi.Name() != "d" {
		t.Errorf("Stat of a directory handle = %v, %v", fi, err)
	}
	d.Close()
}

func TestMemDirectories(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("a/b/c", 0o755); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	for _, name := range []string{"z", "m", "a"} {
		mustCreate(t, fs, "a/b/"+name, name, false).Close()
	}
	if got := list(t, fs, "a/b"); !slices.Equal(got, []string{"a", "c", "m", "z"}) {
		t.Fatalf("List = %q; want sorted names", got)
	}
	if fi, err := fs.Stat("a/b/m"); err != nil || fi.Size() != 1 || fi.Name() != "m" || fi.IsDir() {
		t.Fatalf("Stat(file) = %v, %v", fi, err)
	}
	if fi, err := fs.Stat("a/b/c"); err != nil || !fi.IsDir() || fi.Name() != "c" {
		t.Fatalf("Stat(dir) = %v, %v", fi, err)
	}
	if err := fs.Remove("a/b"); err == nil {
		t.Fatal("removing a non-empty directory succeeded")
	}
	if err := fs.Remove("a/b/c"); err != nil {
		t.Fatalf("removing an empty directory: %v", err)
	}
	// Rename replaces an existing file, and moves between directories.
	if err := fs.Rename("a/b/a", "a/b/z"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "a/b/z"); got != "a" {
		t.Fatalf("after rename over, z = %q", got)
	}
	if err := fs.Rename("a/b/z", "top"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("top", "top"); err != nil {
		t.Fatalf("renaming a file to itself: %v", err)
	}
	if got := list(t, fs, "a/b"); !slices.Equal(got, []string{"m"}) {
		t.Fatalf("List after renames = %q", got)
	}
	if got := readFile(t, fs, "top"); got != "a" {
		t.Fatalf("top = %q", got)
	}
	// A directory moves with its contents and may replace an empty one.
	if err := fs.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("a/b", "empty"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "empty/m"); got != "m" {
		t.Fatalf("empty/m = %q", got)
	}
}

func TestMemRemoveWhileOpen(t *testing.T) {
	fs := NewMem()
	w := mustCreate(t, fs, "f", "abc", false)
	r, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove("f"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("d")); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "abcd" {
		t.Fatalf("reading a removed file = %q, %v", b, err)
	}
	if got := readFile(t, fs, "f"); got != "<missing>" {
		t.Fatalf("removed file still opens: %q", got)
	}
}

func TestMemCreateTruncates(t *testing.T) {
	fs := NewMem()
	w := mustCreate(t, fs, "f", "abcdef", true)
	syncDir(t, fs, "")
	r, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	w2 := mustCreate(t, fs, "f", "xy", false)
	// The truncation is visible through handles opened before it: the
	// inode is the same.
	if fi, _ := r.Stat(); fi.Size() != 2 {
		t.Fatalf("old handle sees size %d after truncation; want 2", fi.Size())
	}
	if got := readFile(t, fs.CrashClone(), "f"); got != "abcdef" {
		t.Fatalf("unsynced truncation survived a crash: %q", got)
	}
	// The first handle's offset is past the new end: its write leaves a
	// zero-filled gap, as on POSIX.
	if _, err := w.Write([]byte("g")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "f"); got != "xy\x00\x00\x00\x00g" {
		t.Fatalf("after write past the end: %q", got)
	}
	if err := w2.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs.CrashClone(), "f"); got != "xy\x00\x00\x00\x00g" {
		t.Fatalf("after sync, crash keeps %q", got)
	}
}

func TestMemLock(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := fs.Lock("db/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("db/LOCK"); err != nil {
		t.Fatalf("Lock did not create the file: %v", err)
	}
	if _, err := fs.Lock("/db/./LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock of a held lock: %v, want ErrLocked", err)
	}
	// A crash releases locks.
	crashed := fs.CrashClone()
	if err := crashed.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	l2, err := crashed.Lock("db/LOCK")
	if err != nil {
		t.Fatalf("lock carried into a crash clone: %v", err)
	}
	l2.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("second release succeeded")
	}
	l, err = fs.Lock("db/LOCK")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	l.Close()
	if _, err := fs.Lock("nodir/LOCK"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock in a missing directory: %v", err)
	}
}

// TestMemCrash checks each durability rule by itself.
func TestMemCrash(t *testing.T) {
	t.Run("data up to last sync", func(t *testing.T) {
		fs := NewMem()
		f := mustCreate(t, fs, "f", "synced", true)
		syncDir(t, fs, "")
		f.Write([]byte("+lost"))
		if got := readFile(t, fs, "f"); got != "synced+lost" {
			t.Fatalf("visible = %q", got)
		}
		if got := readFile(t, fs.CrashClone(), "f"); got != "synced" {
			t.Fatalf("after crash = %q", got)
		}
	})
	t.Run("new file needs dir sync", func(t *testing.T) {
		fs := NewMem()
		mustCreate(t, fs, "f", "data", true)
		if got := readFile(t, fs.CrashClone(), "f"); got != "<missing>" {
			t.Fatalf("file without dir sync survived: %q", got)
		}
		syncDir(t, fs, "/")
		if got := readFile(t, fs.CrashClone(), "f"); got != "data" {
			t.Fatalf("after dir sync = %q", got)
		}
	})
	t.Run("dir sync without data sync", func(t *testing.T) {
		fs := NewMem()
		mustCreate(t, fs, "f", "data", false)
		syncDir(t, fs, "/")
		if got := readFile(t, fs.CrashClone(), "f"); got != "" {
			t.Fatalf("unsynced data survived: %q", got)
		}
	})
	t.Run("rename needs dir sync", func(t *testing.T) {
		fs := NewMem()
		mustCreate(t, fs, "old", "v1", true)
		mustCreate(t, fs, "new", "v0", true)
		syncDir(t, fs, "")
		if err := fs.Rename("old", "new"); err != nil {
			t.Fatal(err)
		}
		c := fs.CrashClone()
		if got := list(t, c, ""); !slices.Equal(got, []string{"new", "old"}) {
			t.Fatalf("after unsynced rename, crash has %q", got)
		}
		if got := readFile(t, c, "new"); got != "v0" {
			t.Fatalf("new = %q; want the replaced file", got)
		}
		syncDir(t, fs, "")
		c = fs.CrashClone()
		if got := list(t, c, ""); !slices.Equal(got, []string{"new"}) {
			t.Fatalf("after synced rename, crash has %q", got)
		}
		if got := readFile(t, c, "new"); got != "v1" {
			t.Fatalf("new = %q", got)
		}
	})
	t.Run("remove needs dir sync", func(t *testing.T) {
		fs := NewMem()
		mustCreate(t, fs, "f", "x", true)
		syncDir(t, fs, "")
		fs.Remove("f")
		if got := readFile(t, fs.CrashClone(), "f"); got != "x" {
			t.Fatalf("unsynced remove: f = %q", got)
		}
		syncDir(t, fs, "")
		if got := readFile(t, fs.CrashClone(), "f"); got != "<missing>" {
			t.Fatalf("synced remove: f = %q", got)
		}
	})
	t.Run("mkdir needs parent sync", func(t *testing.T) {
		fs := NewMem()
		if err := fs.MkdirAll("a/b", 0o755); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, fs, "a/b/f", "x", true)
		syncDir(t, fs, "a/b")
		syncDir(t, fs, "a")
		if got := list(t, fs.CrashClone(), ""); len(got) != 0 {
			t.Fatalf("root unsynced, yet crash has %q", got)
		}
		syncDir(t, fs, "")
		if got := readFile(t, fs.CrashClone(), "a/b/f"); got != "x" {
			t.Fatalf("a/b/f = %q", got)
		}
	})
	t.Run("rename across dirs is a hard link until both are synced", func(t *testing.T) {
		fs := NewMem()
		fs.MkdirAll("a", 0o755)
		fs.MkdirAll("b", 0o755)
		syncDir(t, fs, "")
		mustCreate(t, fs, "a/f", "data", true)
		syncDir(t, fs, "a")
		if err := fs.Rename("a/f", "b/f"); err != nil {
			t.Fatal(err)
		}
		syncDir(t, fs, "b")
		c := fs.CrashClone()
		if readFile(t, c, "a/f") != "data" || readFile(t, c, "b/f") != "data" {
			t.Fatalf("crash after one-sided rename:\n%s", c)
		}
		// Both names are one inode in the clone: truncation through one
		// shows through the other.
		mustCreate(t, c, "a/f", "new", false).Close()
		if got := readFile(t, c, "b/f"); got != "new" {
			t.Fatalf("b/f = %q; the two names are not one inode", got)
		}
	})
	t.Run("clone is independent", func(t *testing.T) {
		fs := NewMem()
		f := mustCreate(t, fs, "f", "abc", true)
		syncDir(t, fs, "")
		c := fs.CrashClone()
		g, err := c.Create("g")
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
		cf, err := c.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		cf.Write([]byte("clone"))
		cf.Sync()
		f.Write([]byte("orig"))
		f.Sync()
		if got := readFile(t, fs, "f"); got != "abcorig" {
			t.Fatalf("original f = %q", got)
		}
		if got := list(t, fs, ""); !slices.Equal(got, []string{"f"}) {
			t.Fatalf("original lists %q", got)
		}
		if got := readFile(t, c, "f"); got != "clone" {
			t.Fatalf("clone f = %q", got)
		}
		// A clone of a clone works the same way.
		if got := list(t, c.CrashClone(), ""); !slices.Equal(got, []string{"f"}) {
			t.Fatalf("clone of clone lists %q", got)
		}
	})
}

// crashModel is the reference for TestMemCrashRandomized. It is flat,
// keyed by directory path, unlike MemFS's tree, so that the two are not
// the same code twice. Directories are fixed; files are inode numbers.
type crashModel struct {
	visible map[string]map[string]int // dir -> name -> inode
	durable map[string]map[string]int
	data    map[int][]byte
	synced  map[int][]byte
	next    int
}

// modelDirs are the directories of the randomized test; "" is the root.
var modelDirs = []string{"", "d1", "d1/d2"}

func newCrashModel() *crashModel {
	m := &crashModel{visible: map[string]map[string]int{}, durable: map[string]map[string]int{},
		data: map[int][]byte{}, synced: map[int][]byte{}}
	for _, d := range modelDirs {
		m.visible[d], m.durable[d] = map[string]int{}, map[string]int{}
	}
	return m
}

// crash turns the model into what a crash clone must hold.
func (m *crashModel) crash() {
	for _, d := range modelDirs {
		m.visible[d] = cloneMap(m.durable[d])
	}
	for ino := range m.data {
		m.data[ino] = bytes.Clone(m.synced[ino])
	}
}

func cloneMap(in map[string]int) map[string]int {
	out := make(map[string]int, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

type modelHandle struct {
	f   File
	ino int
	off int
}

// check compares fs's visible state with the model's.
func (m *crashModel) check(t *testing.T, fs *MemFS, what string) {
	t.Helper()
	for _, d := range modelDirs {
		var want []string
		for name := range m.visible[d] {
			want = append(want, name)
		}
		for _, sub := range modelDirs[1:] {
			if parent := path.Dir(sub); parent == d || parent == "." && d == "" {
				want = append(want, path.Base(sub))
			}
		}
		slices.Sort(want)
		if got := list(t, fs, d); !slices.Equal(got, want) {
			t.Fatalf("%s: List(%q) = %q; want %q\n%s", what, d, got, want, fs)
		}
		for name, ino := range m.visible[d] {
			p := name
			if d != "" {
				p = d + "/" + name
			}
			if got := readFile(t, fs, p); got != string(m.data[ino]) {
				t.Fatalf("%s: %s = %q; want %q\n%s", what, p, got, m.data[ino], fs)
			}
		}
	}
}

// TestMemCrashRandomized runs random creates, writes, syncs, directory
// syncs, renames and removes against MemFS and the model, crashing at
// random points and checking that the clone holds exactly the durable
// state; the run then goes on in the clone.
func TestMemCrashRandomized(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runCrashRandomized(t, seed) })
	}
}

func runCrashRandomized(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := NewMem()
	for _, d := range modelDirs[1:] {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range modelDirs {
		syncDir(t, fs, d)
	}
	m := newCrashModel()
	var handles []*modelHandle
	pick := func() (dir, name, full string) {
		dir = modelDirs[rng.IntN(len(modelDirs))]
		name = fmt.Sprint("f", rng.IntN(4))
		full = name
		if dir != "" {
			full = dir + "/" + name
		}
		return
	}
	for step := range 400 {
		what := fmt.Sprintf("seed %d step %d", seed, step)
		switch op := rng.IntN(100); {
		case op < 15: // create or truncate
			dir, name, full := pick()
			f, err := fs.Create(full)
			if err != nil {
				t.Fatalf("%s: Create: %v", what, err)
			}
			ino, ok := m.visible[dir][name]
			if !ok {
				m.next++
				ino = m.next
				m.visible[dir][name] = ino
			}
			m.data[ino] = nil
			handles = append(handles, &modelHandle{f: f, ino: ino})
		case op < 45 && len(handles) > 0: // write through a random handle
			h := handles[rng.IntN(len(handles))]
			p := make([]byte, rng.IntN(20))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			if _, err := h.f.Write(p); err != nil {
				t.Fatalf("%s: Write: %v", what, err)
			}
			d := m.data[h.ino]
			if len(d) < h.off+len(p) {
				d = append(d, make([]byte, h.off+len(p)-len(d))...)
			}
			copy(d[h.off:], p)
			m.data[h.ino] = d
			h.off += len(p)
		case op < 60 && len(handles) > 0: // sync a file
			h := handles[rng.IntN(len(handles))]
			if err := h.f.Sync(); err != nil {
				t.Fatalf("%s: Sync: %v", what, err)
			}
			m.synced[h.ino] = bytes.Clone(m.data[h.ino])
		case op < 72: // sync a directory
			d := modelDirs[rng.IntN(len(modelDirs))]
			syncDir(t, fs, d)
			m.durable[d] = cloneMap(m.visible[d])
		case op < 82: // rename
			d1, n1, p1 := pick()
			d2, n2, p2 := pick()
			err := fs.Rename(p1, p2)
			ino, ok := m.visible[d1][n1]
			if ok != (err == nil) {
				t.Fatalf("%s: Rename(%s, %s) = %v; model has source: %v", what, p1, p2, err, ok)
			}
			if ok && p1 != p2 {
				delete(m.visible[d1], n1)
				m.visible[d2][n2] = ino
			}
		case op < 90: // remove
			d, n, p := pick()
			err := fs.Remove(p)
			_, ok := m.visible[d][n]
			if ok != (err == nil) {
				t.Fatalf("%s: Remove(%s) = %v; model has it: %v", what, p, err, ok)
			}
			delete(m.visible[d], n)
		case op < 95: // crash, check, and go on in the clone
			fs = fs.CrashClone()
			m.crash()
			handles = nil
			m.check(t, fs, what+" after crash")
		default:
			m.check(t, fs, what)
		}
	}
	// The final crash state, once more, checked without going on in it.
	c := fs.CrashClone()
	m.crash()
	m.check(t, c, fmt.Sprintf("seed %d final crash", seed))
}

// TestMemConcurrent runs appends, ReadAt, Sync, directory changes and
// CrashClone from many goroutines; it finds races under -race and checks
// that every clone holds a durable prefix of the appended stream.
func TestMemConcurrent(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := fs.Create("db/log")
	if err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, "db")
	syncDir(t, fs, "")
	r, err := fs.Open("db/log")
	if err != nil {
		t.Fatal(err)
	}
	const records = 2000
	record := func(i int) []byte { return fmt.Appendf(nil, "%08d", i) }
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range records {
			if _, err := w.Write(record(i)); err != nil {
				t.Error(err)
				return
			}
			if i%10 == 0 {
				w.Sync()
			}
		}
	})
	for g := range 3 {
		wg.Go(func() {
			buf := make([]byte, 8)
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				k := (i * 7919) % records
				n, err := r.ReadAt(buf, int64(k*8))
				if err == nil && !bytes.Equal(buf, record(k)) {
					t.Errorf("reader %d: record %d = %q", g, k, buf[:n])
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			name := fmt.Sprint("db/tmp", i%5)
			if f, err := fs.Create(name); err == nil {
				f.Write([]byte("x"))
				f.Close()
			}
			fs.Rename(name, fmt.Sprint("db/other", i%3))
			if d, err := fs.OpenDir("db"); err == nil {
				d.Sync()
				d.Close()
			}
			fs.List("db")
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			c := fs.CrashClone()
			f, err := c.Open("db/log")
			if err != nil {
				t.Errorf("log missing from a clone: %v", err)
				return
			}
			b, _ := io.ReadAll(f)
			if len(b)%8 != 0 {
				t.Errorf("clone holds a torn record: %d bytes", len(b))
				return
			}
			for i := 0; i < len(b)/8; i++ {
				if !bytes.Equal(b[i*8:i*8+8], record(i)) {
					t.Errorf("clone record %d = %q", i, b[i*8:i*8+8])
					return
				}
			}
		}
	})
	wg.Wait()
}

// TestFSContract runs the behaviour the engine relies on against both the
// OS filesystem and MemFS, so that tests on MemFS mean something for disks.
// eachFS runs test on the OS filesystem, in a temporary directory, and on
// a MemFS, in /db; join names a file in that directory.
func eachFS(t *testing.T, test func(t *testing.T, fs FS, root string, join func(string) string)) {
	for _, c := range []struct {
		name string
		fs   FS
		root string
	}{{"os", Default, t.TempDir()}, {"mem", NewMem(), "/db"}} {
		t.Run(c.name, func(t *testing.T) {
			test(t, c.fs, c.root, func(name string) string { return c.fs.PathJoin(c.root, name) })
		})
	}
}

func TestFSContract(t *testing.T) {
	eachFS(t, func(t *testing.T, fs FS, root string, join func(string) string) {
		if err := fs.MkdirAll(join("sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		f := mustCreate(t, fs, join("a"), "12345", true)
		buf := make([]byte, 3)
		if n, err := f.ReadAt(buf, 3); n != 2 || err != io.EOF {
			t.Fatalf("ReadAt across the end = %d, %v", n, err)
		}
		f.Close()
		mustCreate(t, fs, join("b"), "b", false).Close()
		mustCreate(t, fs, join("sub/c"), "", false).Close()
		if err := fs.Rename(join("a"), join("b")); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fs, join("b")); got != "12345" {
			t.Fatalf("b after rename over it = %q", got)
		}
		if _, err := fs.Open(join("a")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open of the renamed-away name = %v", err)
		}
		if err := fs.Remove(join("sub")); err == nil {
			t.Fatal("Remove of a non-empty directory succeeded")
		}
		names := list(t, fs, root)
		slices.Sort(names)
		if !slices.Equal(names, []string{"b", "sub"}) {
			t.Fatalf("List = %q", names)
		}
		if fi, err := fs.Stat(join("b")); err != nil || fi.Size() != 5 || fi.Name() != "b" {
			t.Fatalf("Stat = %v, %v", fi, err)
		}
		syncDir(t, fs, root)
		l, err := fs.Lock(join("LOCK"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Lock(join("LOCK")); err == nil {
			t.Fatal("second Lock succeeded")
		}
		l.Close()
	})
}

func TestMemString(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("d", 0o755)
	syncDir(t, fs, "")
	mustCreate(t, fs, "d/f", "abc", true).Write([]byte("de"))
	want := "/d/\n/d/f 5 bytes, 3 synced (entry not synced)\n"
	if got := fs.String(); got != want {
		t.Fatalf("String() =\n%s\nwant\n%s", got, want)
	}
}

// TestMemCrashReorder checks CrashCloneReorder against what it promises:
// durable data and entries always survive, each unsynced page and entry
// change survives or not on its own (so a lost page can precede a kept
// one), the size is the durable or the current one, the clone is a
// function of the seed, and the source is left alone.
func TestMemCrashReorder(t *testing.T) {
	fs := NewMem()
	synced := bytes.Repeat([]byte("S"), 3000)
	f := mustCreate(t, fs, "log", string(synced), true)
	mustCreate(t, fs, "keep", "keep", true)
	mustCreate(t, fs, "old", "old", true)
	syncDir(t, fs, "/")
	unsynced := make([]byte, 5*CrashPageSize-100)
	for i := range unsynced {
		unsynced[i] = byte('a' + i%26)
	}
	if _, err := f.Write(unsynced); err != nil {
		t.Fatal(err)
	}
	current := append(bytes.Clone(synced), unsynced...)
	mustCreate(t, fs, "new", "new", true)
	if err := fs.Remove("old"); err != nil {
		t.Fatal(err)
	}

	var sawHole, sawShort, sawFull, sawZeroLoss, sawGarbageLoss bool
	entries := map[string]int{}
	const seeds = 200
	for seed := uint64(1); seed <= seeds; seed++ {
		c := fs.CrashCloneReorder(rand.New(rand.NewPCG(seed, 0)))
		got := []byte(readFile(t, c, "log"))
		if again := readFile(t, fs.CrashCloneReorder(rand.New(rand.NewPCG(seed, 0))), "log"); again != string(got) {
			t.Fatalf("seed %d: two clones with the same seed differ", seed)
		}
		switch len(got) {
		case len(synced):
			sawShort = true
		case len(current):
		default:
			t.Fatalf("seed %d: size %d, want %d (durable) or %d (current)", seed, len(got), len(synced), len(current))
		}
		if !bytes.Equal(got[:len(synced)], synced) {
			t.Fatalf("seed %d: synced bytes changed", seed)
		}
		lostBefore, all := false, true
		for off := 0; off < len(got); off += CrashPageSize {
			end := min(off+CrashPageSize, len(got))
			if bytes.Equal(got[off:end], current[off:end]) {
				sawHole = sawHole || lostBefore
				continue
			}
			lostBefore, all = true, false
			tail := got[max(off, len(synced)):end]
			if bytes.Count(tail, []byte{0}) == len(tail) {
				sawZeroLoss = true
			} else {
				sawGarbageLoss = true
			}
		}
		sawFull = sawFull || all && len(got) == len(current)

		names := list(t, c, "/")
		for _, name := range names {
			entries[name]++
			if want := map[string]string{"log": "", "keep": "keep", "old": "old", "new": "new"}[name]; want != "" && readFile(t, c, name) != want {
				t.Fatalf("seed %d: %s holds %q", seed, name, readFile(t, c, name))
			}
		}
		// Everything in a clone is durable, so cloning it again is exact.
		if again := list(t, c.CrashClone(), "/"); !slices.Equal(again, names) || readFile(t, c.CrashClone(), "log") != string(got) {
			t.Fatalf("seed %d: a CrashClone of the clone differs from it", seed)
		}
	}
	for what, saw := range map[string]bool{
		"a lost page before a kept one": sawHole, "the durable size kept": sawShort, "every page kept": sawFull,
		"a lost page reading as zeros": sawZeroLoss, "a lost page reading as garbage": sawGarbageLoss,
	} {
		if !saw {
			t.Errorf("%d seeds never gave %s", seeds, what)
		}
	}
	if entries["log"] != seeds || entries["keep"] != seeds {
		t.Errorf("durable entries lost: %v", entries)
	}
	for _, name := range []string{"new", "old"} {
		if entries[name] == 0 || entries[name] == seeds {
			t.Errorf("the unsynced change of %q survived in %d of %d clones, want some but not all", name, entries[name], seeds)
		}
	}
	if len(entries) != 4 {
		t.Errorf("unexpected entries: %v", entries)
	}
	if got := readFile(t, fs, "log"); got != string(current) || readFile(t, fs, "old") != "<missing>" {
		t.Error("CrashCloneReorder changed the source")
	}
	if got := readFile(t, fs.CrashClone(), "log"); got != string(synced) {
		t.Errorf("CrashClone after CrashCloneReorder kept %d bytes, want the %d synced", len(got), len(synced))
	}
}

// TestMemOverwriteKeepsDurableState overwrites a file below and past its
// synced length, the way a WAL overwrites zeros written ahead of it: reads
// see every write at once, and a crash image taken before keeps exactly
// the synced bytes.
func TestMemOverwriteKeepsDurableState(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := fs.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Sync(); err != nil {
		t.Fatal(err)
	}
	wa := f.(io.WriterAt)
	if _, err := wa.WriteAt(make([]byte, 64), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("head")); err != nil { // at offset 0, inside the synced bytes
		t.Fatal(err)
	}
	before := fs.CrashClone()
	if _, err := wa.WriteAt([]byte("tail"), 62); err != nil { // runs past the end
		t.Fatal(err)
	}
	want := append(append([]byte("head"), make([]byte, 58)...), "tail"...)
	if got := []byte(readFile(t, fs, "/f")); !bytes.Equal(got, want) {
		t.Fatalf("file reads %q, want %q", got, want)
	}
	if got := []byte(readFile(t, before, "/f")); !bytes.Equal(got, make([]byte, 64)) {
		t.Fatalf("crash image taken after the first overwrite reads %q, want the synced zeros", got)
	}
	if got := []byte(readFile(t, fs.CrashClone(), "/f")); !bytes.Equal(got, make([]byte, 64)) {
		t.Fatalf("crash image reads %q, want the synced zeros", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := []byte(readFile(t, fs.CrashClone(), "/f")); !bytes.Equal(got, want) {
		t.Fatalf("after Sync the crash image reads %q, want %q", got, want)
	}
}
