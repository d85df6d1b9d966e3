package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// blobTestOptions separate values of 32 bytes or more.
func blobTestOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Sync: SyncNone, ValueThreshold: 32, Logger: slog.New(slog.DiscardHandler)}
}

// blobRecordBytes is what tables count of a separated value of key k:
// its record in the blob file, header and key included.
func blobRecordBytes[V string | []byte](k string, v V) int64 {
	return int64(blob.RecordHeaderLen + len(k) + len(v))
}

// blobWrite is one Set of the blob fixture; separated ones know where
// their value lies in the (only) blob file.
type blobWrite struct {
	key, value []byte
	separated  bool
	off        int64
}

// writeBlobFixture writes values around the threshold with one Set each,
// in order, and returns them with the offsets the blob file format gives
// their values: the file header, then per separated value its record
// header, key and value.
func writeBlobFixture(t *testing.T, db *DB) []blobWrite {
	t.Helper()
	var ws []blobWrite
	off := int64(blob.HeaderLen)
	for i, n := range []int{0, 31, 32, 5, 33, 100, 31, 300, 64} {
		w := blobWrite{key: fmt.Appendf(nil, "k%02d", i), value: bytes.Repeat([]byte{byte('a' + i)}, n), separated: n >= 32}
		if w.separated {
			w.off = off + blob.RecordHeaderLen + int64(len(w.key))
			off = w.off + int64(n)
		}
		if err := db.Set(w.key, w.value, nil); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

// onlyBlobFile returns the name and contents of the directory's one blob
// file.
func onlyBlobFile(t *testing.T, fs vfs.FS) (string, []byte) {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, name := range names {
		if typ, _, ok := base.ParseFilename(name); ok && typ == base.FileTypeBlob {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		t.Fatalf("blob files %v; want one", found)
	}
	return found[0], readAllFile(t, fs, fs.PathJoin("/db", found[0]))
}

// withByteFlipped returns a copy of fs whose file name has byte pos XORed.
func withByteFlipped(t *testing.T, fs *vfs.MemFS, name string, data []byte, pos int) *vfs.MemFS {
	t.Helper()
	img := fs.CrashClone()
	damaged := bytes.Clone(data)
	damaged[pos] ^= 0x5a
	writeFile(t, img, img.PathJoin("/db", name), damaged)
	return img
}

// skipBlobPosition samples every fourth byte past the file header under
// -short: each position costs an Open and a Check.
func skipBlobPosition(pos int) bool {
	return testing.Short() && pos >= blob.HeaderLen && pos%4 != 0
}

// TestBlobCorruptionInTables damages every byte of a small blob file whose
// values tables point to: a Get, an iterator and Check each see either
// the right value or ErrCorruption naming the blob file and the damaged
// value's offset (offset 0 for the file header), never a wrong value.
func TestBlobCorruptionInTables(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", blobTestOptions(fs))
	ws := writeBlobFixture(t, db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	name, data := onlyBlobFile(t, fs)
	path := fs.PathJoin("/db", name)
	var corrupt, intact int
	for pos := range data {
		if skipBlobPosition(pos) {
			continue
		}
		img := withByteFlipped(t, fs, name, data, pos)
		opts := blobTestOptions(img)
		// damagedOff is the offset a read of w must report, or -1 when
		// the damage does not touch what w's read verifies.
		damagedOff := func(w blobWrite) int64 {
			switch {
			case !w.separated:
				return -1
			case pos < blob.HeaderLen:
				return 0
			case int64(pos) >= w.off && int64(pos) < w.off+int64(len(w.value)):
				return w.off
			}
			return -1
		}
		checkRead := func(what string, w blobWrite, got []byte, err error) {
			t.Helper()
			want := damagedOff(w)
			if want < 0 {
				if err != nil || !bytes.Equal(got, w.value) {
					t.Fatalf("byte %d flipped: %s %q = %q, %v; want its value", pos, what, w.key, got, err)
				}
				intact++
				return
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != path || ce.Offset != want {
				t.Fatalf("byte %d flipped: %s %q = %q, %v; want a corruption error at %s offset %d", pos, what, w.key, got, err, path, want)
			}
			corrupt++
		}
		d, err := Open("/db", opts)
		if err != nil {
			t.Fatalf("byte %d flipped: Open: %v", pos, err)
		}
		for _, w := range ws {
			got, err := d.Get(w.key)
			checkRead("Get", w, got, err)
		}
		it, err := d.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			// Skip the keys before the first damaged one; Value ends
			// the iteration at the damaged one.
			w := ws[i]
			if !bytes.Equal(it.Key(), w.key) {
				t.Fatalf("byte %d flipped: iterator at %q, want %q", pos, it.Key(), w.key)
			}
			v := it.Value()
			i++
			if v == nil && it.Error() != nil {
				checkRead("Iterator.Value", w, nil, it.Error())
				break
			}
			checkRead("Iterator.Value", w, v, nil)
		}
		it.Close()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		report, err := Check("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, w := range ws {
			hit = hit || damagedOff(w) >= 0
		}
		if report.OK() == hit {
			t.Fatalf("byte %d flipped: Check says %v, %v; want a problem: %t", pos, report, report.Err(), hit)
		}
	}
	t.Logf("%d-byte blob file: %d reads reported corruption, %d read the right value", len(data), corrupt, intact)
}

// TestBlobCorruptionInWAL damages every byte of a small blob file whose
// values only WAL records point to: Open recovers the writes before the
// first record whose value is damaged, as for a damaged WAL record, and
// none after it.
func TestBlobCorruptionInWAL(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", blobTestOptions(fs))
	ws := writeBlobFixture(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	name, data := onlyBlobFile(t, fs)
	dropped := 0
	for pos := range data {
		if skipBlobPosition(pos) {
			continue
		}
		img := withByteFlipped(t, fs, name, data, pos)
		keep := len(ws)
		for i, w := range ws {
			if w.separated && (pos < blob.HeaderLen || int64(pos) >= w.off && int64(pos) < w.off+int64(len(w.value))) {
				keep = i
				break
			}
		}
		d, err := Open("/db", blobTestOptions(img))
		if err != nil {
			t.Fatalf("byte %d flipped: Open: %v", pos, err)
		}
		for i, w := range ws {
			got, err := d.Get(w.key)
			if i < keep && (err != nil || !bytes.Equal(got, w.value)) || i >= keep && !errors.Is(err, ErrNotFound) {
				t.Fatalf("byte %d flipped: Get(%q) = %q, %v; want the writes before #%d only", pos, w.key, got, err, keep)
			}
		}
		if keep < len(ws) {
			dropped++
			if n := d.Metrics().WAL.RecoveryDroppedBytes; n == 0 {
				t.Fatalf("byte %d flipped: recovery dropped writes but counts no dropped bytes", pos)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		// What recovery kept is in tables now, and all of it resolves.
		if report, err := Check("/db", blobTestOptions(img)); err != nil || !report.OK() {
			t.Fatalf("byte %d flipped: Check after recovery: %v, %v", pos, report, err)
		}
	}
	t.Logf("%d-byte blob file: %d recoveries ended at a damaged value", len(data), dropped)
}

// TestBlobFaults fails a blob file's creation, a write to it or its fsync
// with ENOSPC or EIO in the middle of a SyncAlways workload that mixes
// separated and inline values. The failing write returns the error. An
// ENOSPC from a create or a write heals, as a WAL write's does: the next
// write succeeds. Any other fault (an fsync's included) turns the DB
// read-only. Reads keep working, and after a power loss every acknowledged
// write is there, the failed one whole or not at all.
func TestBlobFaults(t *testing.T) {
	faults := map[string]func() error{"ENOSPC": errorfs.ENOSPC, "EIO": errorfs.EIO}
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync} {
		for fname, fault := range faults {
			// The workload creates one blob file, at its first
			// separated value.
			nths := []int64{1, 3}
			if op == errorfs.OpCreate {
				nths = nths[:1]
			}
			for _, nth := range nths {
				heals := fname == "ENOSPC" && op != errorfs.OpSync
				t.Run(fmt.Sprintf("%s-%s-%d", op, fname, nth), func(t *testing.T) { testBlobFault(t, op, fault, nth, heals) })
			}
		}
	}
}

func testBlobFault(t *testing.T, op errorfs.Op, fault func() error, nth int64, heals bool) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	var seen atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(o errorfs.Op, path string) error {
		if armed.Load() && o == op && strings.HasSuffix(path, ".blob") && seen.Add(1) == nth {
			return fault()
		}
		return nil
	}))
	opts := blobTestOptions(fs)
	opts.Sync = SyncAlways
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 10+i*7%80) }
	acked := map[string][]byte{}
	var failed string
	for i := 0; i < 200 && failed == ""; i++ {
		if i == 20 || op == errorfs.OpCreate {
			armed.Store(true)
		}
		k := fmt.Sprintf("k%03d", i)
		if err := db.Set([]byte(k), value(i), nil); err != nil {
			if !errors.Is(err, errorfs.ErrInjected) || heals != errors.Is(err, ErrNoSpace) {
				t.Fatalf("Set(%s) = %v; want the injected error (ErrNoSpace: %v)", k, err, heals)
			}
			failed = k
			break
		}
		acked[k] = value(i)
		if i%50 == 49 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if failed == "" {
		t.Fatal("the fault was never injected")
	}
	switch err := db.Set([]byte("after"), value(40), nil); {
	case heals && err != nil:
		t.Fatalf("Set after a failure for lack of space = %v; want it to succeed", err)
	case heals:
		acked["after"] = value(40)
	case !errors.Is(err, ErrReadOnly):
		t.Fatalf("Set after the failure = %v; want ErrReadOnly", err)
	}
	for k, v := range acked {
		if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Get(%s) on the read-only DB = %q, %v; want %q", k, got, err, v)
		}
	}
	db.Close()
	img := mem.CrashClone()
	db = openTestDB(t, "/db", blobTestOptions(img))
	for k, v := range acked {
		if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("after a crash, Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	i, _ := strconv.Atoi(failed[1:])
	if got, err := db.Get([]byte(failed)); err == nil && !bytes.Equal(got, value(i)) || err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatalf("after a crash, the failed write %s = %q, %v; want it whole or absent", failed, got, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if report, err := Check("/db", blobTestOptions(img)); err != nil || !report.OK() {
		t.Fatalf("Check after the crash: %v, %v", report, err)
	}
}

// TestBlobValueSizes writes values from 0 bytes to 16 MiB (4 MiB under
// -short), around a 4 KiB threshold, singly, in batches that mix sizes and
// with expiry, and reads them back through Get and iterators: before and
// after a flush, a compaction and a reopen, and through Check.
func TestBlobValueSizes(t *testing.T) {
	const threshold = 4 << 10
	largest := 16 << 20
	if testing.Short() || raceEnabled {
		largest = 4 << 20
	}
	sizes := []int{0, 1, threshold - 1, threshold, threshold + 1, 64 << 10, 1 << 20, largest}
	fs := vfs.NewMem()
	opts := &Options{FS: fs, ValueThreshold: threshold, MemTableSize: 256 << 10, Logger: slog.New(slog.DiscardHandler)}
	db := openTestDB(t, "/db", opts)
	want := map[string][]byte{}
	value := func(key string, n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = key[len(key)-1] + byte(i*7)
		}
		return v
	}
	farFuture := time.Now().Add(1000 * time.Hour)
	b := db.NewBatch()
	for i, n := range sizes {
		k := fmt.Sprintf("single-%d", i)
		want[k] = value(k, n)
		if err := db.Set([]byte(k), want[k], nil); err != nil {
			t.Fatalf("Set(%s, %d bytes): %v", k, n, err)
		}
		k = fmt.Sprintf("expiring-%d", i)
		want[k] = value(k, n)
		if err := db.SetWithExpiry([]byte(k), want[k], farFuture, nil); err != nil {
			t.Fatalf("SetWithExpiry(%s, %d bytes): %v", k, n, err)
		}
		k = fmt.Sprintf("batched-%d", i)
		want[k] = value(k, n)
		b.Set([]byte(k), want[k])
	}
	if err := db.Apply(b, Sync); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for k, v := range want {
			got, err := db.Get([]byte(k))
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: Get(%s) = %d bytes, %v; want %d bytes", when, k, len(got), err, len(v))
			}
		}
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if v, ok := want[string(it.Key())]; !ok || !bytes.Equal(it.Value(), v) {
				t.Fatalf("%s: iterator at %q: %d bytes, want %d", when, it.Key(), len(it.Value()), len(v))
			}
			n++
		}
		if err := it.Close(); err != nil || n != len(want) {
			t.Fatalf("%s: iterator saw %d keys, %v; want %d", when, n, err, len(want))
		}
	}
	check("in the memtable")
	if m := db.Metrics(); m.Blob.ValuesWritten != int64(3*(len(sizes)-3)) {
		t.Errorf("%d values separated; want the %d of at least %d bytes", m.Blob.ValuesWritten, 3*(len(sizes)-3), threshold)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("after a flush")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("after a compaction")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", opts)
	check("after a reopen")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report, err := Check("/db", opts)
	if err != nil || !report.OK() || report.BlobPointers != 3*(len(sizes)-3) {
		t.Fatalf("Check: %v, %v; want OK with %d blob pointers", report, err, 3*(len(sizes)-3))
	}
}

// TestBlobLimits checks what a DB with value separation refuses: a value
// over MaxValueSize, and a key too long to stay in a table beside its
// pointer; values that MaxEntrySize would refuse inline are fine.
func TestBlobLimits(t *testing.T) {
	db := openTestDB(t, "/db", blobTestOptions(vfs.NewMem()))
	// Never touched, so never resident: Set refuses it before copying.
	if err := db.Set(make([]byte, MaxEntrySize), make([]byte, 100), nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Set with a key of MaxEntrySize bytes and a separated value = %v; want ErrValueTooLarge", err)
	}
	if testing.Short() || raceEnabled || strconv.IntSize < 64 {
		// The rest moves gigabytes through the in-memory filesystem.
		return
	}
	big := make([]byte, MaxEntrySize+1)
	big[len(big)-1] = 1
	if err := db.Set([]byte("k"), big, nil); err != nil {
		t.Fatalf("Set of a %d-byte value with separation: %v", len(big), err)
	}
	if got, err := db.Get([]byte("k")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get = %d bytes, %v; want the %d bytes set", len(got), err, len(big))
	}
	// Never touched, so never resident: Set refuses it before copying.
	huge := make([]byte, MaxValueSize+1)
	if err := db.Set([]byte("huge"), huge, nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Set of a %d-byte value = %v; want ErrValueTooLarge", len(huge), err)
	}
}

// TestBlobGC overwrites every key ten times with separated values and
// checks that garbage collection brings the blob bytes on disk back near
// the live ones, in the background, without losing a value.
func TestBlobGC(t *testing.T) {
	fs := vfs.NewMem()
	opts := blobTestOptions(fs)
	opts.MemTableSize = 32 << 10 // 256 KiB blob files
	opts.L0CompactionThreshold = 2
	opts.LBaseMaxBytes = 64 << 10
	db := openTestDB(t, "/db", opts)
	const keys, rounds, size = 200, 10, 1 << 10
	want := map[string][]byte{}
	for round := range rounds {
		for k := range keys {
			key := fmt.Sprintf("k%03d", k)
			v := bytes.Repeat([]byte{byte(round), byte(k)}, size/2)
			if err := db.Set([]byte(key), v, nil); err != nil {
				t.Fatal(err)
			}
			want[key] = v
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	var live int64
	for k, v := range want {
		live += blobRecordBytes(k, v)
	}
	deadline := time.Now().Add(10 * time.Second)
	m := db.Metrics()
	for m.Blob.Bytes > 2*live && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		m = db.Metrics()
	}
	t.Logf("%d bytes written in %d values; now %d blob files of %d bytes, %d referenced; %d GC runs copied %d values; %d files deleted",
		m.Blob.BytesWritten, m.Blob.ValuesWritten, m.Blob.Files, m.Blob.Bytes, m.Blob.ReferencedBytes, m.Blob.GCRuns, m.Blob.GCValues, m.Blob.FilesDeleted)
	if m.Blob.Bytes > 2*live {
		t.Errorf("%d bytes in blob files for %d live record bytes", m.Blob.Bytes, live)
	}
	if m.Blob.ReferencedBytes != live {
		t.Errorf("tables reference %d blob bytes after a full compaction; want the %d live ones", m.Blob.ReferencedBytes, live)
	}
	closeAndCheckBlobs(t, db, "/db", opts, want)
}

// closeAndCheckBlobs verifies that db (open on dir with opts) reads every
// key of want as its value, closes it, and checks the directory: no
// problem and no warning (an unreferenced blob file would be one).
func closeAndCheckBlobs(t *testing.T, db *DB, dir string, opts *Options, want map[string][]byte) {
	t.Helper()
	for k, v := range want {
		if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Get(%s) = %d bytes, %v", k, len(got), err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if report, err := Check(dir, opts); err != nil || !report.OK() || len(report.Warnings) > 0 {
		t.Fatalf("Check: %v, %v, warnings %v", report, err, report.Warnings)
	}
}

// TestBlobRecoverySeparates writes values inline (ValueThreshold off) and
// opens the DB with separation on: recovery moves the WAL's large values
// to a blob file, as Apply would have, and they read back the same.
func TestBlobRecoverySeparates(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Logger: slog.New(slog.DiscardHandler)}
	db := openTestDB(t, "/db", opts)
	ws := writeBlobFixture(t, db)
	if err := db.SetWithExpiry([]byte("exp"), bytes.Repeat([]byte("e"), 40), time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", blobTestOptions(fs))
	for _, w := range ws {
		if got, err := db.Get(w.key); err != nil || !bytes.Equal(got, w.value) {
			t.Fatalf("Get(%s) = %q, %v; want %q", w.key, got, err, w.value)
		}
	}
	if got, exp, err := db.GetWithExpiry([]byte("exp")); err != nil || len(got) != 40 || exp.IsZero() {
		t.Fatalf("GetWithExpiry(exp) = %d bytes, %v, %v", len(got), exp, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report, err := Check("/db", blobTestOptions(fs))
	if err != nil || !report.OK() || report.BlobPointers != 6 {
		t.Fatalf("Check: %v, %v; want OK with the 6 separated values' pointers", report, err)
	}
}

// TestBlobFaultsDuringGC fails the writes (ENOSPC or EIO) of the blob file
// a garbage-collecting compaction writes: the compaction fails, the DB
// turns read-only with every value still readable, and after a power loss
// every write is there, and Check passes.
func TestBlobFaultsDuringGC(t *testing.T) {
	for name, fault := range map[string]func() error{"ENOSPC": errorfs.ENOSPC, "EIO": errorfs.EIO} {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			var armed atomic.Bool
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
				if armed.Load() && op == errorfs.OpWrite && strings.HasSuffix(path, ".blob") {
					return fault()
				}
				return nil
			}))
			opts := blobTestOptions(fs)
			opts.Sync = SyncAlways
			opts.blobFileSize = 8 << 10
			opts.BlobGCThreshold = -1 // until the data is in place
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			for round := range 4 {
				for k := range 40 {
					if round == 3 && k%2 == 1 {
						// The odd keys' live values stay in files
						// whose even keys' values are garbage.
						continue
					}
					key := fmt.Sprintf("k%02d", k)
					v := bytes.Repeat([]byte{byte('a' + round), byte(k)}, 100)
					if err := db.Set([]byte(key), v, nil); err != nil {
						t.Fatal(err)
					}
					want[key] = v
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopen with collection on and only the GC's writes failing:
			// user writes stop here. The fault is armed before Open, which
			// already schedules a collection in the background: armed
			// after it, that collection could finish unfaulted first (as
			// it did once on a loaded machine), leaving Compact nothing
			// to collect.
			opts.BlobGCThreshold = 0
			armed.Store(true)
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Compact(nil, nil)
			m := db.Metrics()
			if err == nil && !m.ReadOnly {
				t.Fatalf("Compact with failing GC writes: no error (GC runs %d)", m.Blob.GCRuns)
			}
			t.Logf("Compact: %v", err)
			for k, v := range want {
				if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
					t.Fatalf("Get(%s) on the failed DB = %q, %v", k, got, err)
				}
			}
			db.Close()
			img := mem.CrashClone()
			db = openTestDB(t, "/db", blobTestOptions(img))
			for k, v := range want {
				if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
					t.Fatalf("after a crash, Get(%s) = %q, %v", k, got, err)
				}
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatalf("Compact after the fault is gone: %v", err)
			}
			if m := db.Metrics(); m.Blob.GCRuns == 0 {
				t.Errorf("no GC run once the fault was gone: %s", m)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if report, err := Check("/db", blobTestOptions(img)); err != nil || !report.OK() {
				t.Fatalf("Check: %v, %v", report, err)
			}
		})
	}
}

// TestBlobGCSettles writes every key once and overwrites random keys
// twice as many times, as lsmgo-bench's fillrandom, overwrite ×2 and
// settle do, then only flushes: with no further writes the background
// work must drop every shadowed pointer (references count them as live
// until a compaction drops them, which hid the garbage from GC) and
// collect the blob files that are then shown mostly dead, those pointed
// to from L0 included, until the retired files are within
// blobSpaceTarget of the live bytes.
func TestBlobGCSettles(t *testing.T) {
	fs := vfs.NewMem()
	opts := blobTestOptions(fs)
	opts.MemTableSize = 32 << 10 // 256 KiB blob files
	db := openTestDB(t, "/db", opts)
	const keys, size = 1000, 1 << 10
	rng := rand.New(rand.NewPCG(8, 1))
	want := make(map[string][]byte, keys)
	set := func(k int) {
		key := fmt.Sprintf("k%04d", k)
		v := make([]byte, size)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		if err := db.Set([]byte(key), v, nil); err != nil {
			t.Fatal(err)
		}
		want[key] = v
	}
	for _, k := range rng.Perm(keys) {
		set(k)
	}
	for range 2 * keys {
		set(rng.IntN(keys))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Settled: the tables point to the live values only (no shadowed
	// pointer is left to hide garbage), and the files are collected down
	// to 1.5 times the live bytes (the retired ones to blobSpaceTarget;
	// the active file stays).
	var live int64
	for k, v := range want {
		live += blobRecordBytes(k, v)
	}
	settled := func() bool {
		m := db.Metrics()
		return m.Blob.ReferencedBytes == live && m.Blob.Bytes <= live*3/2
	}
	for deadline := time.Now().Add(30 * time.Second); !settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	m := db.Metrics()
	t.Logf("%d blob files of %d bytes (%.2f× the %d live), %d referenced; %d GC runs copied %d values; %d compactions",
		m.Blob.Files, m.Blob.Bytes, float64(m.Blob.Bytes)/float64(live), live, m.Blob.ReferencedBytes, m.Blob.GCRuns, m.Blob.GCValues, m.Compaction.Count)
	if !settled() {
		t.Errorf("not settled: tables reference %d blob bytes, blob files hold %d, for %d live record bytes", m.Blob.ReferencedBytes, m.Blob.Bytes, live)
	}
	closeAndCheckBlobs(t, db, "/db", opts, want)
}

// TestGetAppend reads inline and separated values, from the memtable and
// from tables, expired and missing keys, appending to a buffer: the
// result is dst followed by the value, and reading a separated value into
// a buffer with room for it does not allocate the value again.
func TestGetAppend(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", blobTestOptions(fs))
	defer db.Close()
	const size = 64 << 10
	values := map[string][]byte{
		"inline": []byte("short"),
		"empty":  {},
		"large":  bytes.Repeat([]byte("L"), size),
	}
	for k, v := range values {
		if err := db.Set([]byte(k), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetWithExpiry([]byte("expired"), bytes.Repeat([]byte("E"), 100), time.Now().Add(-time.Second), nil); err != nil {
		t.Fatal(err)
	}
	check := func(where string) {
		for k, v := range values {
			for _, dst := range [][]byte{nil, []byte("prefix:"), make([]byte, 3, size+8)} {
				want := append(append([]byte(nil), dst...), v...)
				got, err := db.GetAppend(dst, []byte(k))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: GetAppend(%d-byte dst, %s) = %d bytes, %v; want %d bytes", where, len(dst), k, len(got), err, len(want))
				}
				if len(dst) > 0 && cap(dst) >= len(want) && &got[0] != &dst[0] {
					t.Fatalf("%s: GetAppend(%s) did not use dst's room", where, k)
				}
			}
		}
		for _, k := range []string{"expired", "missing"} {
			if got, err := db.GetAppend([]byte("x"), []byte(k)); !errors.Is(err, ErrNotFound) || string(got) != "x" {
				t.Fatalf("%s: GetAppend(%s) = %q, %v; want dst and ErrNotFound", where, k, got, err)
			}
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("table")

	// 50 reads of the separated value: Get allocates it each time,
	// GetAppend into one buffer never.
	allocated := func(read func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 50 {
			read()
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	buf := make([]byte, 0, size)
	byGet := allocated(func() { db.Get([]byte("large")) })
	byAppend := allocated(func() { buf, _ = db.GetAppend(buf[:0], []byte("large")) })
	t.Logf("50 reads of %d bytes allocated %d bytes with Get, %d with GetAppend", size, byGet, byAppend)
	if byAppend >= 50*size/4 {
		t.Errorf("GetAppend into a buffer with room allocated %d bytes in 50 reads of %d bytes", byAppend, size)
	}
}

// TestBlobMergeSkipsSmallValueTrees: two overlapping L0 tables of small
// inline values that also point to one separated value each are not
// merged for blob liveness: the blob bytes that could die are far below
// blobMergeGain times the table bytes.
func TestBlobMergeSkipsSmallValueTrees(t *testing.T) {
	fs := vfs.NewMem()
	opts := blobTestOptions(fs)
	opts.ValueThreshold = 1 << 10
	opts.L0CompactionThreshold = 100
	db := openTestDB(t, "/db", opts)
	defer db.Close()
	for round := range 2 {
		for k := range 500 {
			if err := db.Set(fmt.Appendf(nil, "k%04d", k), bytes.Repeat([]byte{byte(round)}, 100), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Set([]byte("large"), bytes.Repeat([]byte{byte(round)}, 2<<10), nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	v := db.rs.Load().version
	// Nothing else is due (L0CompactionThreshold), so any compaction
	// started or done would be a merge for blob liveness.
	if n := len(v.Files[0]); n != 2 || db.mu.compacting != 0 {
		t.Fatalf("%d L0 tables and %d compactions running, want the 2 flushed and none", n, db.mu.compacting)
	}
	if c := db.pickBlobMerge(v); c != nil {
		t.Errorf("pickBlobMerge = %s for a tree of small values", c)
	}
}

// TestBlobGCLeavesLiveFilesAlone writes small separated values under long
// keys, never overwritten: no blob byte is ever garbage, so no collection
// may run, whatever the threshold. Record headers and keys take more than
// half of each file here; counted as garbage, they made every file a
// candidate forever, and each collection's output one again.
func TestBlobGCLeavesLiveFilesAlone(t *testing.T) {
	for _, threshold := range []float64{0.5, 1} {
		t.Run(fmt.Sprint(threshold), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := blobTestOptions(fs)
			opts.MemTableSize = 32 << 10
			opts.BlobGCThreshold = threshold
			opts.blobFileSize = 8 << 10
			db := openTestDB(t, "/db", opts)
			want := map[string][]byte{}
			for k := range 2000 {
				key := fmt.Sprintf("a-rather-long-key-%06d", k)
				v := bytes.Repeat([]byte{byte(k)}, 40)
				if err := db.Set([]byte(key), v, nil); err != nil {
					t.Fatal(err)
				}
				want[key] = v
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := db.Compact(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			// A quiet DB collects to the space target in the background:
			// give it the time to (wrongly) start.
			time.Sleep(200 * time.Millisecond)
			if m := db.Metrics(); m.Blob.GCRuns != 0 {
				t.Errorf("%d GC runs copied %d values out of files with no garbage: %s", m.Blob.GCRuns, m.Blob.GCValues, m)
			}
			closeAndCheckBlobs(t, db, "/db", opts, want)
		})
	}
}
