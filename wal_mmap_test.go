package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// skipUnlessMapped skips a test of the mapped WAL where the OS's files do
// not offer a mapping.
func skipUnlessMapped(t *testing.T) {
	t.Helper()
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(vfs.WriteMapper); !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("the OS filesystem offers no mapping on Linux")
		}
		t.Skipf("no mapped WAL on %s", runtime.GOOS)
	}
}

// walMapped reports whether db writes its WAL through a mapping.
func walMapped(db *DB) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.wal.cur.mapped != nil
}

// reopen closes db and opens dir again; the test's end closes the new DB.
func reopen(t *testing.T, db *DB, dir string, opts *Options) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return openTestDB(t, dir, opts)
}

// TestWALMapWrite writes pieces of random sizes, some larger than the
// window, through a walMap of one page per chunk, and reads the file back:
// every byte is where it was written, the rest of the last chunk is zeros,
// and a write past what was reserved fails instead of faulting.
func TestWALMapWrite(t *testing.T) {
	skipUnlessMapped(t)
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := int64(os.Getpagesize())
	m := &walMap{f: f.(vfs.WriteMapper), chunk: chunk, unit: os.Getpagesize()}
	rng := rand.New(rand.NewPCG(3, 4))
	var want []byte
	for range 200 {
		p := make([]byte, 1+rng.IntN(int(chunk)*5/2))
		for i := range p {
			p[i] = byte(rng.Uint32()) | 1
		}
		if err := m.reserve(int64(len(want) + len(p))); err != nil {
			t.Fatal(err)
		}
		if n, err := m.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
		want = append(want, p...)
	}
	if n, err := m.Write(make([]byte, m.allocated-m.off+1)); !errors.Is(err, errNotAllocated) {
		t.Fatalf("a write past the reserved end: %d, %v; want errNotAllocated", n, err)
	}
	if err := m.unmap(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != m.allocated || m.allocated%chunk != 0 || m.allocated-int64(len(want)) >= chunk {
		t.Fatalf("file of %d bytes, %d allocated, %d written", len(got), m.allocated, len(want))
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatal("the file does not hold what was written")
	}
	if !allZero(got[len(want):]) {
		t.Fatal("the allocated tail is not zeros")
	}
}

// TestWALMappedRotation writes through the DB, in both sync modes that map
// the WAL, batches small and larger than a window, across many windows
// and many WAL rotations. The live WAL, read with read(2) while the DB is
// open (as a crash would leave it), holds the records written since its
// rotation followed by zeros, and a reopen finds every write.
func TestWALMappedRotation(t *testing.T) {
	skipUnlessMapped(t)
	for _, sync := range []SyncMode{SyncNone, SyncInterval(time.Millisecond)} {
		t.Run(sync.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := durOptions(vfs.Default, sync)
			opts.MemTableSize = 256 << 10
			opts.ValueThreshold = 1 << 20
			db := openTestDB(t, dir, opts)
			chunk := newWALMapShape(opts.MemTableSize, sync).chunk
			rng := rand.New(rand.NewPCG(5, 6))
			model := map[string]string{}
			firstLog := db.wal.cur.num
			for i := range 400 {
				b := db.NewBatch()
				n := 1
				if i%50 == 7 {
					// Larger than a window: 80 KiB.
					n = 80
				}
				for j := range n {
					k := fmt.Sprintf("k%05d", rng.IntN(3000))
					v := strings.Repeat(string(rune('a'+j%26)), 200+rng.IntN(1800))
					b.Set([]byte(k), []byte(v))
					model[k] = v
				}
				if err := db.Apply(b, nil); err != nil {
					t.Fatal(err)
				}
			}
			db.mu.Lock()
			cur := db.wal.cur
			db.mu.Unlock()
			if cur.mapped == nil {
				t.Fatal("the WAL is not mapped")
			}
			if int(cur.num-firstLog) < 3 {
				t.Fatalf("only WALs %d..%d written; want rotations", firstLog, cur.num)
			}
			data, err := os.ReadFile(filepath.Join(dir, cur.name()))
			if err != nil {
				t.Fatal(err)
			}
			end := recordsEnd(t, data)
			if end != cur.w.Size() || int64(len(data))%chunk != 0 || int64(len(data)) <= end || !allZero(data[end:]) {
				t.Fatalf("WAL of %d bytes (chunk %d): records end at %d, the writer at %d, and what follows must be zeros",
					len(data), chunk, end, cur.w.Size())
			}
			db = reopen(t, db, dir, opts)
			for k, v := range model {
				if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
					t.Fatalf("Get(%s) after reopen = %d bytes, %v", k, len(got), err)
				}
			}
		})
	}
}

// fullAllocFS is the OS filesystem with WAL files whose Allocate fails
// with ENOSPC while full is set, as on a full disk, and whose Map fails
// when noMap is set, as on a filesystem that cannot map files. With cow
// set, a full disk shows as a copy-on-write filesystem's does: Allocate
// succeeds without allocating, so the store into the mapping faults, and
// writing the bytes again fails with ENOSPC.
type fullAllocFS struct {
	vfs.FS
	full   atomic.Bool
	noMap  bool
	cow    bool
	failed atomic.Int64
}

type fullAllocFile struct {
	vfs.File
	wm vfs.WriteMapper
	fs *fullAllocFS
}

func (fs *fullAllocFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	wm, ok := f.(vfs.WriteMapper)
	if typ, _, _ := base.ParseFilename(filepath.Base(name)); !ok || typ != base.FileTypeLog {
		return f, err
	}
	return &fullAllocFile{File: f, wm: wm, fs: fs}, nil
}

func (fs *fullAllocFS) Truncate(name string, size int64) error {
	return vfs.Truncate(fs.FS, name, size)
}

func (f *fullAllocFile) Allocate(off, n int64, unit int) error {
	if f.fs.full.Load() {
		if f.fs.cow {
			return nil
		}
		f.fs.failed.Add(1)
		return &os.PathError{Op: "write", Path: "wal", Err: syscall.ENOSPC}
	}
	return f.wm.Allocate(off, n, unit)
}

func (f *fullAllocFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.full.Load() {
		f.fs.failed.Add(1)
		return 0, &os.PathError{Op: "write", Path: "wal", Err: syscall.ENOSPC}
	}
	return f.wm.WriteAt(p, off)
}

func (f *fullAllocFile) Map(off int64, n int) ([]byte, error) {
	if f.fs.noMap {
		return nil, &os.PathError{Op: "mmap", Path: "wal", Err: syscall.ENODEV}
	}
	return f.wm.Map(off, n)
}

func (f *fullAllocFile) Unmap(b []byte) error { return f.wm.Unmap(b) }

// TestWALUnmappable: on a filesystem that refuses to map a WAL file, the
// DB writes it with write(2) instead, and nothing is lost across a reopen.
func TestWALUnmappable(t *testing.T) {
	skipUnlessMapped(t)
	fs := &fullAllocFS{FS: vfs.Default, noMap: true}
	dir := t.TempDir()
	opts := durOptions(fs, SyncNone)
	db := openTestDB(t, dir, opts)
	acked := map[string][]byte{}
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 200 {
		k, v := fmt.Sprintf("k%04d", i), incompressible(rng, 300)
		if err := db.Set([]byte(k), v, nil); err != nil {
			t.Fatal(err)
		}
		acked[k] = v
	}
	if walMapped(db) {
		t.Fatal("a WAL that cannot be mapped is mapped")
	}
	checkKeys(t, reopen(t, db, dir, opts), acked)
}

// TestDiskFullWALMapped fills the disk under a mapped WAL: the write whose
// records need a new chunk fails with ErrNoSpace when allocating it, before
// anything is stored, the DB stays writable, and once the disk has room
// writes succeed again; a reopen finds every acknowledged write and none of
// the refused ones. On a copy-on-write filesystem the store into the
// allocated chunk faults instead, and the same must hold.
func TestDiskFullWALMapped(t *testing.T) {
	skipUnlessMapped(t)
	for _, cow := range []bool{false, true} {
		t.Run(fmt.Sprintf("cow=%v", cow), func(t *testing.T) { testDiskFullWALMapped(t, cow) })
	}
}

func testDiskFullWALMapped(t *testing.T, cow bool) {
	fs := &fullAllocFS{FS: vfs.Default, cow: cow}
	dir := t.TempDir()
	opts := durOptions(fs, SyncNone)
	opts.MemTableSize = 256 << 10
	db := openTestDB(t, dir, opts)
	rng := rand.New(rand.NewPCG(7, 8))
	acked, refused := map[string][]byte{}, map[string]bool{}
	set := func(k string) error {
		v := incompressible(rng, 500)
		err := db.Set([]byte(k), v, nil)
		if err == nil {
			acked[k] = v
		}
		return err
	}
	for i := range 100 {
		if err := set(fmt.Sprintf("a%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	fs.full.Store(true)
	for i := 0; fs.failed.Load() < 3; i++ {
		k := fmt.Sprintf("b%04d", i)
		switch err := set(k); {
		case err == nil:
		case errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrReadOnly):
			refused[k] = true
		default:
			t.Fatalf("write %s with no room to allocate: %v, want ErrNoSpace", k, err)
		}
		if i > 10000 {
			t.Fatal("no write needed an allocation")
		}
	}
	if len(refused) == 0 || db.Metrics().ReadOnly {
		t.Fatalf("%d writes refused, read-only %v", len(refused), db.Metrics().ReadOnly)
	}
	fs.full.Store(false)
	for i := range 300 {
		if err := set(fmt.Sprintf("c%04d", i)); err != nil {
			t.Fatalf("write after space came back: %v", err)
		}
	}
	checkKeys(t, db, acked)
	db = reopen(t, db, dir, opts)
	checkKeys(t, db, acked)
	for k := range refused {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("refused write %s: Get = %v, want ErrNotFound", k, err)
		}
	}
}

// TestWALMapStoreFault cuts a mapped WAL file short behind the writer's
// back, so that stores into its mapping fault (SIGBUS): the writer must
// survive, write the bytes through the file instead, and leave the file
// holding everything written.
func TestWALMapStoreFault(t *testing.T) {
	skipUnlessMapped(t)
	name := filepath.Join(t.TempDir(), "log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	m := &walMap{f: f.(vfs.WriteMapper), chunk: 4 * int64(page), unit: page}
	defer m.unmap()
	want := bytes.Repeat([]byte("abcdefg"), page)
	if err := m.reserve(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(want[:page/2]); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Write(want[page/2:]); n != len(want)-page/2 || err != nil {
		t.Fatalf("Write after the file was cut = %d, %v", n, err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// The first half page went with the cut; the rest was written again.
	if !bytes.Equal(got[page/2:], want[page/2:]) || !allZero(got[:page/2]) {
		t.Fatalf("file after the faulting writes: %d bytes, not what was written", len(got))
	}
}
