package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// retainOptions are ckptOptions (small memtables, so that the WAL
// rotates often, and values from 200 bytes separated into blob files)
// with WAL retention on and OnCommit collecting into log.
func retainOptions(fs vfs.FS, log *commitLog) *Options {
	opts := ckptOptions(fs)
	opts.OnCommit = log.add
	opts.WALRetainSize = 1 << 30
	return opts
}

// writeReplBatches commits n seeded random batches.
func writeReplBatches(t *testing.T, db *DB, rng *rand.Rand, n int, prefix string) {
	t.Helper()
	model := map[string]string{}
	for range n {
		if err := db.Apply(randomReplBatch(db, rng, model, prefix), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// readLogFrom reads the batches from from on, copied, until the log has
// no more.
func readLogFrom(db *DB, from uint64) ([][]byte, error) {
	lr, err := db.NewLogReader(from)
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	var out [][]byte
	for {
		data, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(data))
	}
}

func batchSeq(t *testing.T, data []byte) (uint64, uint32) {
	t.Helper()
	seq, count, err := ReplicatedSeq(data)
	if err != nil {
		t.Fatal(err)
	}
	return seq, count
}

// checkPrefixOf fails unless got is want's first len(got) batches, byte
// for byte; the reader may stop early only with an error.
func checkPrefixOf(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) > len(want) {
		t.Fatalf("read %d batches, the history from there has %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			seq, _ := batchSeq(t, want[i])
			t.Fatalf("batch %d (seq %d) read from the WAL differs from the one OnCommit reported", i, seq)
		}
	}
}

func retainedNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if tp, _, ok := base.ParseFilename(name); ok && tp == base.FileTypeRetainedLog {
			out = append(out, name)
		}
	}
	return out
}

// TestLogReader reads the history back from the WAL files, retained and
// live, from every fifth batch start, before and after a restart, and
// compares it with what OnCommit reported: the same bytes (values that
// went to blob files inline), in order, to the end. A position inside a
// batch is refused, and lsmgo check has nothing to say of the retained
// files.
func TestLogReader(t *testing.T) {
	mem := vfs.NewMem()
	var log commitLog
	opts := retainOptions(mem, &log)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 1))
	writeReplBatches(t, db, rng, 400, "a")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(retainedNames(t, mem, "/db")); n < 3 {
		t.Fatalf("%d retained WAL files after 400 batches; want several", n)
	}
	check := func(db *DB, step int) {
		t.Helper()
		all := log.all()
		for i := 0; i < len(all); i += step {
			seq, count := batchSeq(t, all[i])
			got, err := readLogFrom(db, seq)
			if err != nil {
				t.Fatalf("from %d: %v", seq, err)
			}
			if len(got) != len(all)-i {
				t.Fatalf("from %d: read %d batches, want %d", seq, len(got), len(all)-i)
			}
			checkPrefixOf(t, got, all[i:])
			if count > 1 {
				if _, err := db.NewLogReader(seq + 1); !errors.Is(err, ErrNotRetained) {
					t.Fatalf("from %d, inside a batch: %v, want ErrNotRetained", seq+1, err)
				}
			}
		}
		last, _ := batchSeq(t, all[len(all)-1])
		if _, err := db.NewLogReader(last + 1000); !errors.Is(err, ErrNotRetained) {
			t.Fatalf("from past the end: %v, want ErrNotRetained", err)
		}
	}
	check(db, 5)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", opts)
	writeReplBatches(t, db, rng, 100, "b")
	check(db, 7)
	if m := db.Metrics(); m.WAL.RetainedFiles == 0 || m.WAL.RetainedBytes == 0 {
		t.Fatalf("metrics: %d retained files, %d bytes", m.WAL.RetainedFiles, m.WAL.RetainedBytes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) > 0 {
		t.Fatalf("check with retained WAL files: %v", rep)
	}
}

// TestWALRetentionBounds: without retention no flushed WAL stays; with a
// size bound the retained files stay within it, the oldest leaving
// first (a position that left is refused); lowering the bounds, the age
// bound among them, deletes at once.
func TestWALRetentionBounds(t *testing.T) {
	mem := vfs.NewMem()
	var log commitLog
	opts := retainOptions(mem, &log)
	opts.WALRetainSize = 0
	db := openTestDB(t, "/none", opts)
	rng := rand.New(rand.NewPCG(23, 2))
	writeReplBatches(t, db, rng, 300, "a")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if names := retainedNames(t, mem, "/none"); len(names) > 0 {
		t.Fatalf("retention off, yet %v retained", names)
	}

	const limit = 40 << 10
	log = commitLog{}
	opts.WALRetainSize = limit
	db = openTestDB(t, "/bounded", opts)
	writeReplBatches(t, db, rng, 600, "b")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	retained := func() (names []string, size int64) {
		names = retainedNames(t, mem, "/bounded")
		for _, name := range names {
			st, err := mem.Stat("/bounded/" + name)
			if err != nil {
				t.Fatal(err)
			}
			size += st.Size()
		}
		return names, size
	}
	// A compaction the flush started may still trim the retained files
	// (the bound is applied after each one), so the directory and the
	// metrics are compared once the directory holds still around them.
	var names []string
	var size int64
	var m *Metrics
	waitFor(t, "metrics that agree with the directory", func() bool {
		names, size = retained()
		m = db.Metrics()
		again, _ := retained()
		return slices.Equal(names, again) && m.WAL.RetainedBytes == size && m.WAL.RetainedFiles == len(names)
	})
	if len(names) == 0 || size > limit {
		t.Fatalf("%d retained files of %d bytes in all; want some, at most %d", len(names), size, limit)
	}
	all := log.all()
	first, _ := batchSeq(t, all[0])
	if _, err := db.NewLogReader(first); !errors.Is(err, ErrNotRetained) {
		t.Fatalf("from the first batch, past the bound: %v, want ErrNotRetained", err)
	}
	// Some later position is still served, to the end.
	served := false
	for i := len(all) / 2; i < len(all) && !served; i++ {
		seq, _ := batchSeq(t, all[i])
		got, err := readLogFrom(db, seq)
		if errors.Is(err, ErrNotRetained) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(all)-i {
			t.Fatalf("from %d: %d batches, want %d", seq, len(got), len(all)-i)
		}
		checkPrefixOf(t, got, all[i:])
		served = true
	}
	if !served {
		t.Fatal("no position in the second half of the history is served")
	}

	db.SetWALRetention(limit, time.Nanosecond)
	if names := retainedNames(t, mem, "/bounded"); len(names) > 0 {
		t.Fatalf("age bound of 1ns, yet %v retained", names)
	}
	db.SetWALRetention(0, 0)
	writeReplBatches(t, db, rng, 200, "c")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if names := retainedNames(t, mem, "/bounded"); len(names) > 0 {
		t.Fatalf("retention turned off, yet %v retained", names)
	}
}

// TestWALRetentionAgeWhileIdle: a DB that stops writing still lets its
// retained files go once they are older than the age bound, without a
// flush or a reader to trigger it.
func TestWALRetentionAgeWhileIdle(t *testing.T) {
	defer func(d time.Duration) { retainTrimInterval = d }(retainTrimInterval)
	retainTrimInterval = 10 * time.Millisecond
	mem := vfs.NewMem()
	var log commitLog
	opts := retainOptions(mem, &log)
	opts.WALRetainAge = 200 * time.Millisecond
	db := openTestDB(t, "/idle", opts)
	writeReplBatches(t, db, rand.New(rand.NewPCG(29, 3)), 300, "a")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if names := retainedNames(t, mem, "/idle"); len(names) == 0 {
		t.Fatal("nothing retained after a flush")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		names := retainedNames(t, mem, "/idle")
		if len(names) == 0 && db.Metrics().WAL.RetainedFiles == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute idle with an age bound of 200ms, yet %v retained", names)
		}
	}
}

// TestLogReaderAfterCrash: a crash that loses the WAL's unsynced tail,
// and one whose reopen drops the records after a damaged one, both let
// the writes after Open take the lost sequence numbers; the reader then
// serves the DB's real history across the cut: the old batches up to it
// and the new ones after, never a lost batch.
func TestLogReaderAfterCrash(t *testing.T) {
	t.Run("unsynced-tail", func(t *testing.T) {
		mem := vfs.NewMem()
		var log commitLog
		opts := retainOptions(mem, &log)
		opts.Sync = SyncNone
		db, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(23, 3))
		writeReplBatches(t, db, rng, 200, "a")
		// A synced write makes all before it durable.
		if err := db.Set([]byte("synced"), []byte("x"), Sync); err != nil {
			t.Fatal(err)
		}
		writeReplBatches(t, db, rng, 50, "b")
		crashed := mem.CrashClone()
		db.Close()
		checkAcrossCut(t, crashed, log.all(), rng)
	})
	t.Run("damaged-record", func(t *testing.T) {
		mem := vfs.NewMem()
		var log commitLog
		opts := retainOptions(mem, &log)
		opts.MemTableSize = 4 << 20 // one WAL, damaged in its middle
		db, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(23, 4))
		writeReplBatches(t, db, rng, 200, "a")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		dropCloseMarker(t, mem, "/db")
		names, _ := mem.List("/db")
		for _, name := range names {
			if strings.HasSuffix(name, ".log") {
				corruptAt(t, mem, "/db/"+name, 0.6)
			}
		}
		checkAcrossCut(t, mem, log.all(), rng)
	})
}

// checkAcrossCut opens the DB in fs after a crash, writes more, and
// checks that the reader serves, from the first batch, the batches
// before the DB's recovered end and then those written after.
func checkAcrossCut(t *testing.T, fs vfs.FS, before [][]byte, rng *rand.Rand) {
	t.Helper()
	var log commitLog
	opts := retainOptions(fs, &log)
	db := openTestDB(t, "/db", opts)
	recovered := db.LastSeq()
	var want [][]byte
	for _, b := range before {
		if seq, count := batchSeq(t, b); seq+uint64(count)-1 <= recovered {
			want = append(want, b)
		}
	}
	if len(want) == len(before) || len(want) == 0 {
		t.Fatalf("recovered to %d: %d of %d batches; the test needs a cut inside", recovered, len(want), len(before))
	}
	writeReplBatches(t, db, rng, 100, "c")
	after := log.all()
	if seq, _ := batchSeq(t, after[0]); seq != recovered+1 {
		t.Fatalf("first write after Open at %d, want %d", seq, recovered+1)
	}
	want = append(want, after...)
	first, _ := batchSeq(t, want[0])
	got, err := readLogFrom(db, first)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	checkPrefixOf(t, got, want)
}

// corruptAt flips a byte at fraction at of file name's data (the zeros
// a WAL is extended with left out).
func corruptAt(t *testing.T, fs vfs.FS, name string, at float64) {
	t.Helper()
	data := readAllFile(t, fs, name)
	end := len(bytes.TrimRight(data, "\x00"))
	data[int(float64(end)*at)] ^= 0x5a
	writeFile(t, fs, name, data)
}

// TestLogReaderDamagedRetained: a retained file damaged in its middle,
// or cut short, after the fact: reading across it ends in ErrNotRetained
// after a correct prefix, never with a wrong or missing batch; reading
// from after it still works.
func TestLogReaderDamagedRetained(t *testing.T) {
	for _, damage := range []string{"flip", "truncate"} {
		t.Run(damage, func(t *testing.T) {
			mem := vfs.NewMem()
			var log commitLog
			db := openTestDB(t, "/db", retainOptions(mem, &log))
			writeReplBatches(t, db, rand.New(rand.NewPCG(23, 5)), 400, "a")
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			names := retainedNames(t, mem, "/db")
			if len(names) < 3 {
				t.Fatalf("%d retained files; want several", len(names))
			}
			name := "/db/" + names[1]
			if damage == "flip" {
				corruptAt(t, mem, name, 0.5)
			} else {
				data := readAllFile(t, mem, name)
				writeFile(t, mem, name, data[:len(data)/2])
			}
			all := log.all()
			first, _ := batchSeq(t, all[0])
			got, err := readLogFrom(db, first)
			if !errors.Is(err, ErrNotRetained) {
				t.Fatalf("reading across a %s retained file: %v (%d batches), want ErrNotRetained", damage, err, len(got))
			}
			checkPrefixOf(t, got, all)
			// From the start of the file after the damaged one.
			_, num, _ := base.ParseFilename(names[2])
			seq, ok := db.firstLogSeq(num)
			if !ok {
				t.Fatal("no batch in the third retained file")
			}
			got, err = readLogFrom(db, seq)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for i < len(all) {
				if s, _ := batchSeq(t, all[i]); s == seq {
					break
				}
				i++
			}
			if len(got) != len(all)-i {
				t.Fatalf("from %d: %d batches, want %d", seq, len(got), len(all)-i)
			}
			checkPrefixOf(t, got, all[i:])
		})
	}
}

// FuzzLogReader writes arbitrary bytes as a retained WAL file ahead of
// a DB's own and reads from every position it claims: no panic, and
// every batch returned is a replicated batch at the position asked.
func FuzzLogReader(f *testing.F) {
	mem := vfs.NewMem()
	var log commitLog
	db, err := Open("/seed", retainOptions(mem, &log))
	if err != nil {
		f.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 6))
	model := map[string]string{}
	for range 40 {
		if err := db.Apply(randomReplBatch(db, rng, model, "k"), nil); err != nil {
			f.Fatal(err)
		}
	}
	db.Close()
	names, _ := mem.List("/seed")
	for _, name := range names {
		if strings.HasSuffix(name, "log") {
			f.Add(readAllFile(f, mem, "/seed/"+name), uint64(1))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, from uint64) {
		mem := vfs.NewMem()
		opts := ckptOptions(mem)
		opts.WALRetainSize = 1 << 30
		if err := mem.MkdirAll("/db", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, mem, "/db/000001.rlog", data)
		db, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		lr, err := db.NewLogReader(from)
		if err != nil {
			return
		}
		defer lr.Close()
		for range 1000 {
			pos := lr.Pos()
			b, err := lr.Next()
			if err != nil {
				return
			}
			seq, count, err := ReplicatedSeq(b)
			if err != nil || seq != pos || count == 0 {
				t.Fatalf("batch at %d (%v) of %d records, asked for %d", seq, err, count, pos)
			}
		}
	})
}

// TestLogReaderFollowsWrites reads the log while a writer commits and
// the WAL rotates under it: the reader, retrying at io.EOF, gets every
// batch in order, as OnCommit reported them.
func TestLogReaderFollowsWrites(t *testing.T) {
	mem := vfs.NewMem()
	var log commitLog
	db := openTestDB(t, "/db", retainOptions(mem, &log))
	rng := rand.New(rand.NewPCG(23, 7))
	writeReplBatches(t, db, rng, 1, "a")
	first, _ := batchSeq(t, log.all()[0])
	lr, err := db.NewLogReader(first)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	const n = 600
	done := make(chan struct{})
	go func() {
		defer close(done)
		model := map[string]string{}
		wrng := rand.New(rand.NewPCG(23, 8))
		for range n {
			if err := db.Apply(randomReplBatch(db, wrng, model, "b"), nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var got [][]byte
	for deadline := time.Now().Add(60 * time.Second); len(got) < n+1; {
		data, err := lr.Next()
		if errors.Is(err, io.EOF) {
			if time.Now().After(deadline) {
				t.Fatalf("read %d batches of %d", len(got), n+1)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bytes.Clone(data))
	}
	<-done
	all := log.all()
	if len(all) != n+1 {
		t.Fatalf("OnCommit reported %d batches, want %d", len(all), n+1)
	}
	checkPrefixOf(t, got, all)
	if n := len(retainedNames(t, mem, "/db")); n < 3 {
		t.Fatalf("%d retained files: the WAL did not rotate under the reader", n)
	}
}

// retainedDisk returns what WAL retention keeps on disk in dir: the
// retained WAL files' bytes, and those of the blob files that nothing but
// retention keeps (no table of a live version points into them, and no
// writer or memtable pins them), measured on the FS.
func retainedDisk(t *testing.T, db *DB, fs vfs.FS, dir string) (walBytes, blobBytes int64) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	live := db.vs.LiveBlobFiles()
	db.blobs.life.mu.Lock()
	pinned := maps.Clone(db.blobs.life.pins)
	db.blobs.life.mu.Unlock()
	for _, name := range names {
		tp, num, ok := base.ParseFilename(name)
		if !ok || (tp != base.FileTypeRetainedLog && tp != base.FileTypeBlob) {
			continue
		}
		st, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tp == base.FileTypeRetainedLog:
			walBytes += st.Size()
		case !live[num] && pinned[num] == 0:
			blobBytes += st.Size()
		}
	}
	return walBytes, blobBytes
}

// TestWALRetentionCountsBlobs: retained WAL files keep the blob files
// their records point into after the tables stopped pointing there
// (overwritten values, compacted away). Those bytes count in
// RetainedBytes and in the size bound, so the bound holds for what the
// backlog really keeps on disk; the data stays whole and the newest
// retained positions stay readable.
func TestWALRetentionCountsBlobs(t *testing.T) {
	mem := vfs.NewMem()
	var log commitLog
	opts := retainOptions(mem, &log)
	opts.BlobGCThreshold = -1 // only overwrites free blob files
	db := openTestDB(t, "/db", opts)
	rng := rand.New(rand.NewPCG(23, 4))
	model := map[string]string{}
	// Overwrite a few keys with separated values, round after round, so
	// that the early blob files hold only dead values once compacted.
	for round := range 12 {
		for i := range 40 {
			key := fmt.Sprintf("k%02d", i%10)
			value := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 1000+rng.IntN(1000))
			if err := db.Set([]byte(key), value, nil); err != nil {
				t.Fatal(err)
			}
			model[key] = string(value)
		}
		if err := db.Flush(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	db.SetWALRetention(1<<30, 0) // counts again after the compaction
	walBytes, blobBytes := retainedDisk(t, db, mem, "/db")
	if blobBytes == 0 {
		t.Fatal("no blob file is kept by retention alone; the test does not test")
	}
	m := db.Metrics()
	if m.WAL.RetainedBytes != walBytes+blobBytes || m.WAL.RetainedBlobBytes != blobBytes {
		t.Fatalf("metrics say %d bytes retained (%d in blob files); the directory holds %d of WAL files and %d of blob files only they keep",
			m.WAL.RetainedBytes, m.WAL.RetainedBlobBytes, walBytes, blobBytes)
	}

	// A bound above the WAL files' bytes but below what they keep on
	// disk: retention must drop files until the whole is within it.
	limit := walBytes + blobBytes/2
	db.SetWALRetention(limit, 0)
	walBytes, blobBytes = retainedDisk(t, db, mem, "/db")
	if walBytes+blobBytes > limit {
		t.Fatalf("bound %d, yet retention keeps %d bytes of WAL files and %d of blob files", limit, walBytes, blobBytes)
	}
	if m := db.Metrics(); m.WAL.RetainedBytes != walBytes+blobBytes {
		t.Fatalf("metrics say %d bytes retained; the directory holds %d", m.WAL.RetainedBytes, walBytes+blobBytes)
	}
	for k, v := range model {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("%s after the trim: %d bytes, %v", k, len(got), err)
		}
	}
	// The newest batches are still served.
	all := log.all()
	last, _ := batchSeq(t, all[len(all)-1])
	if got, err := readLogFrom(db, last); err != nil || len(got) != 1 {
		t.Fatalf("the last batch: %d read, %v", len(got), err)
	}
}
