package lsmgo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestBatchTooLargeLimits checks admit at its boundaries without building
// the values: a key and value of MaxEntrySize together are admitted and
// one byte more is not, for every kind, and a batch whose memtable
// estimate would pass maxBatchMemSize is refused.
func TestBatchTooLargeLimits(t *testing.T) {
	manyWrites := func() *Batch {
		// A header that counts enough writes to bring the batch within
		// 127 bytes of the limit; only the count matters to admit.
		b := &Batch{repr: batchrepr.New()}
		binary.LittleEndian.PutUint32(b.repr[8:], uint32(maxBatchMemSize/memEntryOverhead-1))
		return b
	}
	tests := []struct {
		name            string
		batch           func() *Batch
		kind            base.Kind
		keyLen, valLen  int
		wantOK          bool
		wantErrContains string
	}{
		{"set at limit", nil, base.KindSet, 10, MaxEntrySize - 10, true, ""},
		{"set over limit", nil, base.KindSet, 10, MaxEntrySize - 9, false, strconv.Itoa(MaxEntrySize)},
		{"expiry at limit", nil, base.KindSetExpiry, 10, MaxEntrySize - 10, true, ""},
		{"expiry over limit", nil, base.KindSetExpiry, 1, MaxEntrySize, false, "MaxEntrySize"},
		{"delete key at limit", nil, base.KindDelete, MaxEntrySize, 0, true, ""},
		{"delete key over limit", nil, base.KindDelete, MaxEntrySize + 1, 0, false, "key of"},
		{"batch under memtable limit", manyWrites, base.KindSet, 1, 1, true, ""},
		{"batch over memtable limit", manyWrites, base.KindSet, 1, 200, false, "smaller batches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Batch{repr: batchrepr.New()}
			if tt.batch != nil {
				b = tt.batch()
			}
			if got := b.admit(tt.kind, tt.keyLen, tt.valLen); got != tt.wantOK {
				t.Fatalf("admit = %v, want %v (err %v)", got, tt.wantOK, b.Err())
			}
			err := b.Err()
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Err = %v after an admitted write", err)
				}
				return
			}
			if !errors.Is(err, ErrValueTooLarge) || !strings.Contains(err.Error(), tt.wantErrContains) {
				t.Fatalf("Err = %v, want ErrValueTooLarge mentioning %q", err, tt.wantErrContains)
			}
		})
	}
}

// TestSetTooLarge writes a value one byte over the limit through the
// engine API: it is refused with ErrValueTooLarge before anything reaches
// the WAL, a batch holding it writes none of its writes, and the DB goes on
// working and reopens. The value's pages are never touched (admit refuses
// it before copying), so the test costs no memory for it. Value separation
// is off: with it the limit is MaxValueSize (TestBlobLimits).
func TestSetTooLarge(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", &Options{FS: fs, ValueThreshold: -1})
	if err := db.Set([]byte("small"), []byte("v1"), nil); err != nil {
		t.Fatal(err)
	}
	walBefore := db.Metrics().WAL.Bytes
	key := []byte("big")
	huge := make([]byte, MaxEntrySize-len(key)+1)

	err := db.Set(key, huge, nil)
	if !errors.Is(err, ErrValueTooLarge) || !strings.Contains(err.Error(), strconv.Itoa(MaxEntrySize)) {
		t.Fatalf("Set of %d bytes: %v, want ErrValueTooLarge naming the limit %d", len(huge), err, MaxEntrySize)
	}
	if err := db.SetWithExpiry(key, huge, time.Now().Add(time.Hour), nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("SetWithExpiry: %v, want ErrValueTooLarge", err)
	}
	b := db.NewBatch()
	b.Set([]byte("small"), []byte("v2"))
	b.Set(key, huge)
	b.Set([]byte("after"), []byte("x"))
	if b.Count() != 1 || !errors.Is(b.Err(), ErrValueTooLarge) {
		t.Fatalf("batch: Count %d, Err %v; want 1 write and ErrValueTooLarge", b.Count(), b.Err())
	}
	if err := db.Apply(b, nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Apply: %v, want ErrValueTooLarge", err)
	}
	if got := db.Metrics().WAL.Bytes; got != walBefore {
		t.Fatalf("WAL grew from %d to %d bytes for refused writes", walBefore, got)
	}
	b.Reset()
	if b.Err() != nil {
		t.Fatalf("Err after Reset: %v", b.Err())
	}

	if err := db.Set([]byte("later"), []byte("ok"), nil); err != nil {
		t.Fatalf("Set after a refused write: %v", err)
	}
	want := map[string]string{"small": "v1", "later": "ok"}
	verify := func(db *DB) {
		t.Helper()
		for k, v := range want {
			if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
				t.Fatalf("Get %s = %q, %v; want %q", k, got, err, v)
			}
		}
		for _, k := range []string{"big", "after"} {
			if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get %s: %v, want ErrNotFound", k, err)
			}
		}
	}
	verify(db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", &Options{FS: fs, ValueThreshold: -1})
	verify(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	requireCheckOK(t, fs, "/db")
}

// TestOpenOversizeWAL is rule 2 of value separation's issue: a WAL that
// holds a write no table can hold (as versions before the limit could
// write) makes an Open without value separation fail at once, with
// ErrValueTooLarge and a message that names the WAL and says what to do,
// changing nothing on disk; Check without separation reports the same
// problem. An Open with separation (the default) recovers an oversize
// entry into a blob file, and Check with the default options warns of it. The first case is a real entry one byte over
// the tables' limit (a 512 MiB record: about 90 s, so not with -short);
// the second a batch of small writes too many for a memtable (34 MB).
func TestOpenOversizeWAL(t *testing.T) {
	tests := []struct {
		name  string
		short bool
		batch func(seq base.SeqNum) []byte
		want  string
		// separable says Open with value separation recovers it.
		separable bool
	}{
		{"entry", false, func(seq base.SeqNum) []byte {
			key := []byte("ksr")
			n := sstable.MaxEntrySize - len(key) - trailerLen + 1
			// Built in place: batchrepr.Append would copy the value.
			repr := batchrepr.New()
			repr = append(repr, byte(base.KindSet))
			repr = binary.AppendUvarint(repr, uint64(len(key)))
			repr = append(repr, key...)
			repr = binary.AppendUvarint(repr, uint64(n))
			repr = append(repr, make([]byte, n)...)
			binary.LittleEndian.PutUint32(repr[8:], 1)
			batchrepr.SetSeq(repr, seq)
			return repr
		}, `key "ksr": entry of 536870913 bytes exceeds the 536870912`, true},
		{"batch", true, func(seq base.SeqNum) []byte {
			// Deletions of the empty key, two zero bytes each
			// (kind 0, key length 0), one more than fit.
			n := maxBatchMemSize/(memEntryOverhead+2) + 1
			repr := make([]byte, batchrepr.HeaderLen+2*n)
			binary.LittleEndian.PutUint32(repr[8:], uint32(n))
			batchrepr.SetSeq(repr, seq)
			return repr
		}, "bytes of memtable, over the limit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && !tt.short {
				t.Skip("writes and reads a 512 MiB WAL record")
			}
			if raceEnabled {
				// Nothing here is concurrent, and decoding 16 M
				// records twice takes most of a minute under it.
				t.Skip("sequential and slow under the race detector")
			}
			// The OS filesystem: a 512 MiB file in the in-memory one
			// takes many times as long to write and read.
			fs, dir := vfs.Default, t.TempDir()
			db, err := Open(dir, &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Set([]byte("a"), []byte("1"), nil); err != nil {
				t.Fatal(err)
			}
			db.mu.Lock()
			logNum, seq := db.wal.cur.num, db.mu.nextSeq
			db.mu.Unlock()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// A newer WAL holding the record, as an older version's
			// commit after a rotation would have left it.
			name := fs.PathJoin(dir, base.MakeFilename(base.FileTypeLog, logNum+10))
			var buf bytes.Buffer
			w := record.NewWriter(&buf)
			if err := errors.Join(w.WriteRecord(tt.batch(seq)), w.Flush()); err != nil {
				t.Fatal(err)
			}
			writeFile(t, fs, name, buf.Bytes())
			buf = bytes.Buffer{}
			before := dirSizes(t, fs, dir)

			// Without value separation the entry cannot be stored.
			start := time.Now()
			_, err = Open(dir, &Options{FS: fs, ValueThreshold: -1})
			if !errors.Is(err, ErrValueTooLarge) || errors.Is(err, ErrCorruption) ||
				!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), name) ||
				!strings.Contains(err.Error(), "blob files") {
				t.Fatalf("Open: %v\nwant ErrValueTooLarge naming %s, %q and what to do", err, name, tt.want)
			}
			t.Logf("Open failed after %v: %v", time.Since(start), err)
			if after := dirSizes(t, fs, dir); !maps.Equal(before, after) {
				t.Fatalf("a failed Open changed the directory: %v, then %v", before, after)
			}
			report, err := Check(dir, &Options{FS: fs, ValueThreshold: -1})
			if err != nil {
				t.Fatal(err)
			}
			if len(report.Problems) != 1 || !errors.Is(report.Problems[0], ErrValueTooLarge) {
				t.Fatalf("Check without separation: %d problem(s), want one matching ErrValueTooLarge:\n%v", len(report.Problems), report.Err())
			}
			// Check with the default options says what a default Open
			// does: a problem where it refuses, a warning where it
			// recovers.
			report, err = Check(dir, &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.separable {
				if len(report.Problems) != 1 || !errors.Is(report.Problems[0], ErrValueTooLarge) {
					t.Fatalf("Check: %d problem(s), want one matching ErrValueTooLarge:\n%v", len(report.Problems), report.Err())
				}
				return
			}
			if !report.OK() || !slices.ContainsFunc(report.Warnings, func(err error) bool {
				return errors.Is(err, ErrValueTooLarge) && strings.Contains(err.Error(), "blob file")
			}) {
				t.Fatalf("Check: problems %v, warnings %v; want no problem and a warning that Open separates the value", report.Err(), report.Warnings)
			}
			// What the message advises, and what the default does:
			// recovery moves the value to a blob file.
			db, err = Open(dir, &Options{FS: fs})
			if err != nil {
				t.Fatalf("Open with value separation: %v", err)
			}
			got, err := db.Get([]byte("ksr"))
			if err != nil || len(got) != sstable.MaxEntrySize-len("ksr")-trailerLen+1 {
				t.Fatalf("Get(ksr) after recovery = %d bytes, %v", len(got), err)
			}
			got = nil
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			requireCheckOK(t, fs, dir)
		})
	}
}

// dirSizes maps every file in dir to its size.
func dirSizes(t *testing.T, fs vfs.FS, dir string) map[string]int64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, name := range names {
		st, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = st.Size()
	}
	return sizes
}

// TestMaxValueLen: DB.MaxValueLen is exactly the boundary Set enforces,
// with and without value separation. The refused values are never
// touched, so they cost no memory.
func TestMaxValueLen(t *testing.T) {
	for _, threshold := range []int{-1, 0} { // off, and the default (on)
		db := openTestDB(t, t.TempDir(), &Options{ValueThreshold: threshold})
		key := []byte("key")
		max := db.MaxValueLen(len(key))
		want := int64(MaxEntrySize - len(key))
		if threshold == 0 {
			want = MaxValueSize
		}
		if max != want {
			t.Errorf("threshold %d: MaxValueLen = %d, want %d", threshold, max, want)
		}
		b := db.NewBatch()
		b.Set(key, make([]byte, max+1))
		if err := b.Err(); !errors.Is(err, ErrValueTooLarge) {
			t.Errorf("threshold %d: a value one byte over MaxValueLen: %v, want ErrValueTooLarge", threshold, err)
		}
	}
}
