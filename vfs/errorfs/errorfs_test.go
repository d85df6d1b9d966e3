package errorfs

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// recorder is an Injector that logs every consultation and fails the ones
// whose op is in fail.
type recorder struct {
	mu   sync.Mutex
	log  []string
	fail map[Op]bool
}

func (r *recorder) MaybeError(op Op, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, op.String()+" "+path)
	if r.fail[op] {
		return EIO()
	}
	return nil
}

// TestWrapConsultsEveryOperation checks which op and path each method
// reports, and that everything passes through when nothing fails.
func TestWrapConsultsEveryOperation(t *testing.T) {
	mem := vfs.NewMem()
	rec := &recorder{}
	fs := Wrap(mem, rec)
	steps := []struct {
		want string
		do   func() error
	}{
		{"mkdirall d", func() error { return fs.MkdirAll("d", 0o755) }},
		{"create d/f", func() error {
			f, err := fs.Create("d/f")
			if err != nil {
				return err
			}
			for _, step := range []func() error{
				func() error { _, err := f.Write([]byte("abc")); return err },
				f.Sync,
				func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err },
				func() error { _, err := f.Read(make([]byte, 1)); return err },
				func() error { _, err := f.Stat(); return err },
				f.Close,
			} {
				if err := step(); err != nil && err != io.EOF {
					return err
				}
			}
			return nil
		}},
		{"open d/f", func() error { f, err := fs.Open("d/f"); f.Close(); return err }},
		{"opendir d", func() error { d, err := fs.OpenDir("d"); d.Sync(); d.Close(); return err }},
		{"list d", func() error { _, err := fs.List("d"); return err }},
		{"stat d/f", func() error { _, err := fs.Stat("d/f"); return err }},
		{"rename d/f -> d/g", func() error { return fs.Rename("d/f", "d/g") }},
		{"remove d/g", func() error { return fs.Remove("d/g") }},
		{"lock d/LOCK", func() error { l, err := fs.Lock("d/LOCK"); l.Close(); return err }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.want, err)
		}
	}
	want := []string{
		"mkdirall d",
		"create d/f", "write d/f", "sync d/f", "read d/f", "read d/f", "stat d/f", "close d/f",
		"open d/f", "close d/f",
		"opendir d", "sync d", "close d",
		"list d", "stat d/f", "rename d/f -> d/g", "remove d/g", "lock d/LOCK",
	}
	if !slices.Equal(rec.log, want) {
		t.Fatalf("consultations:\n got %q\nwant %q", rec.log, want)
	}
	if got := fs.PathJoin("a", "b"); got != "a/b" {
		t.Fatalf("PathJoin = %q", got)
	}
}

// TestWrapFailedOpHasNoEffect fails each FS-level operation in turn and
// checks the error and that the wrapped FS did not change.
func TestWrapFailedOpHasNoEffect(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := mem.Create("d/f")
	f.Write([]byte("data"))
	f.Close()
	rec := &recorder{fail: map[Op]bool{}}
	fs := Wrap(mem, rec)
	calls := map[Op]func() error{
		OpCreate:   func() error { _, err := fs.Create("d/f"); return err },
		OpOpen:     func() error { _, err := fs.Open("d/f"); return err },
		OpOpenDir:  func() error { _, err := fs.OpenDir("d"); return err },
		OpRemove:   func() error { return fs.Remove("d/f") },
		OpRename:   func() error { return fs.Rename("d/f", "d/g") },
		OpMkdirAll: func() error { return fs.MkdirAll("d/e", 0o755) },
		OpList:     func() error { _, err := fs.List("d"); return err },
		OpStat:     func() error { _, err := fs.Stat("d/f"); return err },
		OpLock:     func() error { _, err := fs.Lock("d/LOCK"); return err },
		OpLink:     func() error { return vfs.Link(fs, "d/f", "d/h") },
	}
	for op, call := range calls {
		rec.fail = map[Op]bool{op: true}
		err := call()
		var pe *os.PathError
		if !errors.Is(err, ErrInjected) || !errors.Is(err, syscall.EIO) || !errors.As(err, &pe) || pe.Op != op.String() {
			t.Errorf("%v: err = %v; want an injected EIO in an *os.PathError", op, err)
		}
	}
	names, _ := mem.List("d")
	if !slices.Equal(names, []string{"f"}) {
		t.Fatalf("failed operations changed the directory: %q", names)
	}
	if fi, _ := mem.Stat("d/f"); fi.Size() != 4 {
		t.Fatalf("failed Create truncated the file to %d", fi.Size())
	}
}

// TestWrapFailedFileOps fails each file operation in turn.
func TestWrapFailedFileOps(t *testing.T) {
	mem := vfs.NewMem()
	rec := &recorder{}
	fs := Wrap(mem, rec)
	f, err := fs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("abc"))
	rec.fail = map[Op]bool{OpWrite: true, OpSync: true, OpRead: true, OpStat: true, OpClose: true}
	if n, err := f.Write([]byte("def")); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v", err)
	}
	if _, err := f.Read(make([]byte, 3)); !errors.Is(err, ErrInjected) {
		t.Fatalf("Read = %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 3), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("ReadAt = %v", err)
	}
	if _, err := f.Stat(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Stat = %v", err)
	}
	if err := f.Close(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Close = %v", err)
	}
	rec.fail = nil
	// The failed Close left the file open, and the failed Write wrote
	// nothing.
	buf := make([]byte, 10)
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "abc" {
		t.Fatalf("content = %q", buf[:n])
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The sync was refused too: nothing of f survives a crash.
	dir, _ := mem.OpenDir("")
	dir.Sync()
	c := mem.CrashClone()
	if fi, err := c.Stat("f"); err != nil || fi.Size() != 0 {
		t.Fatalf("after crash: %v, %v", fi, err)
	}
}

func TestErrnos(t *testing.T) {
	for _, c := range []struct {
		err   error
		errno syscall.Errno
	}{{ENOSPC(), syscall.ENOSPC}, {EIO(), syscall.EIO}} {
		if !errors.Is(c.err, ErrInjected) || !errors.Is(c.err, c.errno) {
			t.Errorf("%v does not match both ErrInjected and %v", c.err, c.errno)
		}
	}
	if errors.Is(ENOSPC(), syscall.EIO) {
		t.Error("ENOSPC matches EIO")
	}
}

func TestOpString(t *testing.T) {
	for op := OpCreate; op <= OpLock; op++ {
		if s := op.String(); s == "" || s[0] == 'O' {
			t.Errorf("Op(%d).String() = %q", int(op), s)
		}
	}
	if s := Op(99).String(); s != "Op(99)" {
		t.Errorf("unknown op = %q", s)
	}
}

func TestToggle(t *testing.T) {
	tg := NewToggle(nil, []Op{OpWrite, OpSync}, "wal")
	if err := tg.MaybeError(OpWrite, "db/000001.wal"); err != nil {
		t.Fatalf("disabled toggle failed: %v", err)
	}
	tg.Enable()
	for _, c := range []struct {
		op   Op
		path string
		fail bool
	}{
		{OpWrite, "db/000001.wal", true},
		{OpSync, "db/000001.wal", true},
		{OpRead, "db/000001.wal", false},
		{OpWrite, "db/000002.sst", false},
	} {
		err := tg.MaybeError(c.op, c.path)
		if (err != nil) != c.fail || err != nil && err != ErrInjected {
			t.Errorf("%v %s: %v; want failure %v", c.op, c.path, err, c.fail)
		}
	}
	if tg.Count() != 2 {
		t.Fatalf("Count = %d; want 2", tg.Count())
	}
	tg.Disable()
	if err := tg.MaybeError(OpWrite, "x.wal"); err != nil || tg.Count() != 2 {
		t.Fatalf("after Disable: %v, count %d", err, tg.Count())
	}

	// AfterN lets exactly n matching operations through, and does not
	// count the ones that do not match.
	tg = NewToggle(ENOSPC(), nil, "")
	tg.AfterN(3)
	var results []bool
	for range 6 {
		results = append(results, tg.MaybeError(OpStat, "any") != nil)
	}
	if want := []bool{false, false, false, true, true, true}; !slices.Equal(results, want) {
		t.Fatalf("AfterN(3) failures = %v; want %v", results, want)
	}
	if tg.Count() != 3 {
		t.Fatalf("Count = %d", tg.Count())
	}
	if err := tg.MaybeError(OpLock, "LOCK"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("empty op list does not match every op: %v", err)
	}
}

// TestToggleConcurrent switches a Toggle while goroutines write through
// the wrapper; under -race it checks the Toggle's own safety, and the
// count of failures seen must match Count.
func TestToggleConcurrent(t *testing.T) {
	tg := NewToggle(EIO(), []Op{OpWrite}, "")
	fs := Wrap(vfs.NewMem(), tg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed int64
	for g := range 4 {
		wg.Go(func() {
			f, err := fs.Create(string(rune('a' + g)))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for range 500 {
				if _, err := f.Write([]byte("x")); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			tg.AfterN(int64(i % 7))
		} else {
			tg.Disable()
		}
	}
	wg.Wait()
	if failed != tg.Count() {
		t.Fatalf("writers saw %d failures; Count = %d", failed, tg.Count())
	}
}

func TestTornWrites(t *testing.T) {
	run := func(seed uint64) []int64 {
		mem := vfs.NewMem()
		tg := NewToggle(ENOSPC(), []Op{OpWrite}, "")
		tg.SetTornWrites(true, seed)
		fs := Wrap(mem, tg)
		var sizes []int64
		for i := range 20 {
			f, err := fs.Create("f")
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("head"))
			tg.Enable()
			buf := make([]byte, 1+i*3)
			n, err := f.Write(buf)
			if !errors.Is(err, syscall.ENOSPC) || n < 0 || n >= len(buf) {
				t.Fatalf("torn Write = %d, %v; want 0 <= n < %d and ENOSPC", n, err, len(buf))
			}
			tg.Disable()
			fi, _ := mem.Stat("f")
			if fi.Size() != int64(4+n) {
				t.Fatalf("file holds %d bytes after a torn write of %d", fi.Size(), n)
			}
			sizes = append(sizes, fi.Size())
			f.Close()
		}
		return sizes
	}
	a, b := run(7), run(7)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed tore differently: %v vs %v", a, b)
	}
	if slices.Max(a) == 4 {
		t.Fatalf("no write was torn part way: %v", a)
	}

	// Without torn writes a failed Write writes nothing.
	mem := vfs.NewMem()
	tg := NewToggle(nil, nil, "")
	fs := Wrap(mem, tg)
	f, _ := fs.Create("f")
	tg.Enable()
	if n, err := f.Write([]byte("abc")); n != 0 || err == nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if fi, _ := mem.Stat("f"); fi.Size() != 0 {
		t.Fatalf("a failed write wrote %d bytes", fi.Size())
	}
}

func TestInjectorFunc(t *testing.T) {
	fs := Wrap(vfs.NewMem(), InjectorFunc(func(op Op, path string) error {
		if op == OpCreate && path == "no" {
			return ENOSPC()
		}
		return nil
	}))
	if _, err := fs.Create("no"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Create(no) = %v", err)
	}
	if _, err := fs.Create("yes"); err != nil {
		t.Fatal(err)
	}
}

// TestWrapSpaceCapabilities: Truncate goes through the injector as
// OpTruncate, and DiskUsage reaches the wrapped filesystem untouched.
func TestWrapSpaceCapabilities(t *testing.T) {
	mem := vfs.NewMem()
	mem.SetCapacity(100)
	tg := NewToggle(EIO(), []Op{OpTruncate}, "")
	fs := Wrap(mem, tg)
	f, err := fs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	if free, total, err := vfs.DiskUsage(fs, "/"); free != 94 || total != 100 || err != nil {
		t.Fatalf("DiskUsage through the wrapper = %d, %d, %v", free, total, err)
	}
	tg.Enable()
	if err := vfs.Truncate(fs, "f", 2); !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected Truncate: %v", err)
	}
	tg.Disable()
	if err := vfs.Truncate(fs, "f", 2); err != nil {
		t.Fatal(err)
	}
	if st, _ := mem.Stat("f"); st.Size() != 2 {
		t.Fatalf("size after Truncate: %d", st.Size())
	}
}
