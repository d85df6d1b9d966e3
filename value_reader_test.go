package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// valueReaderOptions separate values of 32 bytes or more into small blob
// files that garbage collection takes once a tenth of them is garbage.
// (Not at any garbage: a threshold of 1 makes every file a candidate,
// since record headers never count as live, and the collection of the
// files it writes itself never ends.)
func valueReaderOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Sync: SyncNone, ValueThreshold: 32, MemTableSize: 32 << 10,
		L0CompactionThreshold: 2, LBaseMaxBytes: 64 << 10, BlobGCThreshold: 0.9, Logger: slog.New(slog.DiscardHandler)}
}

// checkValueReader compares every way of reading v with want: Size, ReadAt
// and SendTo of the whole value and of a random range.
func checkValueReader(t *testing.T, rng *rand.Rand, what string, v *ValueReader, want []byte) {
	t.Helper()
	if v.Size() != int64(len(want)) {
		t.Fatalf("%s: Size %d, want %d", what, v.Size(), len(want))
	}
	var out bytes.Buffer
	if n, err := v.SendTo(&out, 0, v.Size()); err != nil || n != int64(len(want)) || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("%s: SendTo of the whole value: %d bytes, %v; equal: %v", what, n, err, bytes.Equal(out.Bytes(), want))
	}
	off := rng.IntN(len(want) + 1)
	n := rng.IntN(len(want) - off + 1)
	out.Reset()
	if got, err := v.SendTo(&out, int64(off), int64(n)); err != nil || got != int64(n) || !bytes.Equal(out.Bytes(), want[off:off+n]) {
		t.Fatalf("%s: SendTo(%d, %d): %d bytes, %v", what, off, n, got, err)
	}
	buf := make([]byte, n+rng.IntN(3))
	got, err := v.ReadAt(buf, int64(off))
	wantN := min(len(buf), len(want)-off)
	// At the end even an empty read is io.EOF, as bytes.Reader's is.
	wantEOF := wantN < len(buf) || off == len(want)
	if got != wantN || !bytes.Equal(buf[:got], want[off:off+wantN]) || wantEOF != (err == io.EOF) || err != nil && err != io.EOF {
		t.Fatalf("%s: ReadAt(%d bytes at %d) = %d, %v; want %d", what, len(buf), off, got, err, wantN)
	}
	if _, err := v.SendTo(&out, int64(off), int64(len(want)-off+1)); err == nil {
		t.Fatalf("%s: SendTo past the end succeeded", what)
	}
	loc, err := v.Location()
	if err != nil || loc.Length != int64(len(want)) {
		t.Fatalf("%s: Location = %+v, %v; want %d bytes", what, loc, err, len(want))
	}
	if loc.File != nil {
		at := make([]byte, len(want))
		if n, err := loc.File.ReadAt(at, loc.Offset); n != len(at) || !bytes.Equal(at, want) {
			t.Fatalf("%s: %d bytes at Location's offset %d (%v) differ from the value", what, n, loc.Offset, err)
		}
	}
}

// TestValueReaderModel runs random writes, deletes, flushes and
// compactions (with blob garbage collection taking every file with
// garbage) against a map, and opens ValueReaders on the DB and on
// snapshots that it keeps open across later operations: each reads the
// value its key had when it was opened, whatever happened since. Once
// every reader is closed, the files they held are gone: Check finds no
// blob file that nothing points into.
func TestValueReaderModel(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			var fs vfs.FS = vfs.NewMem()
			dir := "/db"
			if fsName == "os" {
				fs, dir = vfs.Default, t.TempDir()
			}
			opts := valueReaderOptions(fs)
			db := openTestDB(t, dir, opts)
			model := map[string][]byte{}
			type open struct {
				what string
				v    *ValueReader
				want []byte
			}
			var readers []open
			ops := 3000
			if testing.Short() {
				ops = 600
			}
			for i := range ops {
				key := fmt.Sprintf("k%02d", rng.IntN(40))
				switch r := rng.IntN(100); {
				case r < 45:
					v := make([]byte, rng.IntN(3000))
					for j := range v {
						v[j] = byte(rng.Uint32())
					}
					if err := db.Set([]byte(key), v, nil); err != nil {
						t.Fatal(err)
					}
					model[key] = v
				case r < 50:
					if err := db.Delete([]byte(key), nil); err != nil {
						t.Fatal(err)
					}
					delete(model, key)
				case r < 53:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				case r < 55:
					if err := db.Compact(nil, nil); err != nil {
						t.Fatal(err)
					}
				case r < 90:
					var v *ValueReader
					var err error
					what := fmt.Sprintf("op %d: %s", i, key)
					if rng.IntN(3) == 0 {
						snap := db.NewSnapshot()
						v, err = snap.OpenValue([]byte(key))
						snap.Close()
						what += " (snapshot)"
					} else {
						v, err = db.OpenValue([]byte(key))
					}
					want, ok := model[key]
					if !ok {
						if !errors.Is(err, ErrNotFound) {
							t.Fatalf("%s: OpenValue of a missing key: %v", what, err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					checkValueReader(t, rng, what, v, want)
					readers = append(readers, open{what, v, want})
				default:
					if len(readers) == 0 {
						continue
					}
					j := rng.IntN(len(readers))
					o := readers[j]
					checkValueReader(t, rng, o.what+", read later", o.v, o.want)
					if err := o.v.Close(); err != nil {
						t.Fatal(err)
					}
					readers = append(readers[:j], readers[j+1:]...)
				}
			}
			for _, o := range readers {
				checkValueReader(t, rng, o.what+", read at the end", o.v, o.want)
				o.v.Close()
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			closeAndCheckBlobs(t, db, dir, opts, model)
		})
	}
}

// TestValueReaderHoldsFile opens a reader on a separated value, makes
// its blob file garbage (the key overwritten, then a full compaction that
// collects the file), and checks that the file stays on disk and the
// reader reads the old value until it closes, and that it goes then.
func TestValueReaderHoldsFile(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, valueReaderOptions(vfs.Default))
	old := bytes.Repeat([]byte("old value "), 100)
	if err := db.Set([]byte("k"), old, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	v, err := db.OpenValue([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, base.MakeFilename(base.FileTypeBlob, v.p.FileNum))
	// Values that fill the file, so the next ones go to another, then
	// gone with the old value.
	for i := range 80 {
		if err := db.Set(fmt.Appendf(nil, "fill%02d", i), make([]byte, 4<<10), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 80 {
		if err := db.Delete(fmt.Appendf(nil, "fill%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set([]byte("k"), bytes.Repeat([]byte("new value "), 100), nil); err != nil {
		t.Fatal(err)
	}
	deleted := db.Metrics().Blob.FilesDeleted
	for range 3 {
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the held blob file is gone: %v", err)
	}
	if live := db.blobs.liveInTables(); live[v.p.FileNum] {
		t.Fatalf("%s is still live in tables after the compactions: the test proves nothing", file)
	}
	checkValueReader(t, rand.New(rand.NewPCG(1, 2)), "held reader", v, old)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the blob file outlived its last reader: %v", err)
	}
	if got := db.Metrics().Blob.FilesDeleted; got <= deleted {
		t.Fatalf("FilesDeleted %d, was %d", got, deleted)
	}
	if err := v.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestValueReaderConcurrentGC reads values in place from several
// goroutines, each reader kept open a while, while a writer overwrites
// them and compactions collect their blob files: every read returns the
// whole of one value its key had (each value names its key and version
// and is derived from them), never bytes of another.
func TestValueReaderConcurrentGC(t *testing.T) {
	dir := t.TempDir()
	opts := valueReaderOptions(vfs.Default)
	db := openTestDB(t, dir, opts)
	const keys = 20
	valueOf := func(key, version int) []byte {
		v := fmt.Appendf(nil, "key %d version %d:", key, version)
		r := rand.New(rand.NewPCG(uint64(key), uint64(version)))
		for len(v) < 500+key*50 {
			v = append(v, byte(r.Uint32()))
		}
		return v
	}
	for k := range keys {
		if err := db.Set(fmt.Appendf(nil, "k%02d", k), valueOf(k, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for !stop.Load() {
				k := rng.IntN(keys)
				v, err := db.OpenValue(fmt.Appendf(nil, "k%02d", k))
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				var out bytes.Buffer
				_, err = v.SendTo(&out, 0, v.Size())
				v.Close()
				var version int
				if err == nil {
					if _, serr := fmt.Sscanf(out.String(), fmt.Sprintf("key %d version %%d:", k), &version); serr != nil {
						err = fmt.Errorf("value of k%02d does not name it: %q", k, out.Bytes()[:min(out.Len(), 30)])
					} else if !bytes.Equal(out.Bytes(), valueOf(k, version)) {
						err = fmt.Errorf("k%02d version %d: wrong bytes", k, version)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	want := map[string][]byte{}
	for k := range keys {
		want[fmt.Sprintf("k%02d", k)] = valueOf(k, 0)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	// Until the deadline, and on (up to 20 s, on a loaded machine) until
	// garbage collection has both copied values and deleted files.
	start := time.Now()
	collected := func() bool {
		m := db.Metrics()
		return m.Blob.GCRuns > 0 && m.Blob.FilesDeleted > 0
	}
	for version := 1; time.Now().Before(deadline) || !collected() && time.Since(start) < 20*time.Second; version++ {
		// Half the keys each round, so files keep live values that
		// garbage collection copies, as well as files wholly dead.
		for k := range keys {
			if rng.IntN(2) == 0 {
				continue
			}
			key := fmt.Sprintf("k%02d", k)
			want[key] = valueOf(k, version)
			if err := db.Set([]byte(key), want[key], nil); err != nil {
				t.Fatal(err)
			}
		}
		if version%5 == 0 {
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := db.Metrics()
	t.Logf("%d blob files deleted, %d GC runs, %d values verified", m.Blob.FilesDeleted, m.Blob.GCRuns, m.Blob.Verified)
	if m.Blob.FilesDeleted == 0 || m.Blob.GCRuns == 0 {
		t.Errorf("no blob file was collected (%d deleted, %d GC runs): the test raced with nothing", m.Blob.FilesDeleted, m.Blob.GCRuns)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	closeAndCheckBlobs(t, db, dir, opts, want)
}

// TestValueReaderVerifies damages a value in its blob file: a reader
// refuses it (ErrCorruption, nothing sent), while an intact value is
// checked once for many readers.
func TestValueReaderVerifies(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, valueReaderOptions(vfs.Default))
	good, bad := bytes.Repeat([]byte("g"), 1000), bytes.Repeat([]byte("b"), 1000)
	for k, v := range map[string][]byte{"good": good, "bad": bad} {
		if err := db.Set([]byte(k), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		v, err := db.OpenValue([]byte("good"))
		if err != nil {
			t.Fatal(err)
		}
		checkValueReader(t, rand.New(rand.NewPCG(1, 1)), "good", v, good)
		v.Close()
	}
	if n := db.Metrics().Blob.Verified; n != 1 {
		t.Fatalf("Verified = %d after three readers of one value; want 1", n)
	}
	v, err := db.OpenValue([]byte("bad"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	f, err := os.OpenFile(filepath.Join(dir, base.MakeFilename(base.FileTypeBlob, v.p.FileNum)), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), int64(v.p.Offset)+500); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out bytes.Buffer
	if n, err := v.SendTo(&out, 0, 10); !errors.Is(err, ErrCorruption) || n != 0 || out.Len() != 0 {
		t.Fatalf("SendTo of a damaged value: %d bytes, %v", n, err)
	}
	if _, err := v.ReadAt(make([]byte, 10), 0); !errors.Is(err, ErrCorruption) {
		t.Fatalf("ReadAt of a damaged value: %v", err)
	}
	if loc, err := v.Location(); !errors.Is(err, ErrCorruption) || loc.File != nil {
		t.Fatalf("Location of a damaged value: %+v, %v", loc, err)
	}
}

// TestValueReaderSendsToTCP sends a value to a loopback TCP connection,
// the path where the kernel copies it (sendfile), from an offset, while
// another sender uses the same file: each gets its own bytes.
func TestValueReaderSendsToTCP(t *testing.T) {
	db := openTestDB(t, t.TempDir(), valueReaderOptions(vfs.Default))
	value := make([]byte, 300<<10)
	for i := range value {
		value[i] = byte(i * 7 / 5)
	}
	if err := db.Set([]byte("k"), value, nil); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		off, n := int64(i*1000+3), int64(len(value)-i*50000-3000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			got, err := io.ReadAll(c)
			c.Close()
			if err != nil || !bytes.Equal(got, value[off:off+n]) {
				t.Errorf("sender %d: %d bytes, %v; want %d", i, len(got), err, n)
			}
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			v, err := db.OpenValue([]byte("k"))
			if err != nil {
				t.Error(err)
				return
			}
			defer v.Close()
			if sent, err := v.SendTo(c, off, n); err != nil || sent != n {
				t.Errorf("SendTo: %d, %v", sent, err)
			}
		}()
	}
	wg.Wait()
}
