package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// ckptOptions are tiny sizes, so that flushes, compactions and blob files
// (values from 200 bytes are separated) come within a few hundred writes.
func ckptOptions(fs vfs.FS) *Options {
	return &Options{
		FS:                    fs,
		Logger:                slog.New(slog.DiscardHandler),
		MemTableSize:          32 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         16 << 10,
		TargetFileSize:        8 << 10,
		BlockSize:             512,
		CacheSize:             1 << 20,
		ValueThreshold:        200,
	}
}

// ckptOp is operation i of writer g: it sets key (g, i), and every third
// operation also deletes key (g, i/2), in one atomic batch.
func ckptKey(g, i int) string { return fmt.Sprintf("g%d-%05d", g, i) }

func ckptValue(g, i int) []byte {
	n := 1 + (g*7919+i*104729)%600
	return bytes.Repeat([]byte{byte('a' + (g+i)%26)}, n)
}

func ckptDeletes(i int) (int, bool) { return i / 2, i%3 == 2 }

func ckptApply(db *DB, g, i int) error {
	b := db.NewBatch()
	b.Set([]byte(ckptKey(g, i)), ckptValue(g, i))
	if j, ok := ckptDeletes(i); ok {
		b.Delete([]byte(ckptKey(g, j)))
	}
	return db.Apply(b, nil)
}

// ckptState is what writer g's first m operations leave: key -> value.
func ckptState(g, m int) map[string]string {
	st := map[string]string{}
	for i := range m {
		st[ckptKey(g, i)] = string(ckptValue(g, i))
		if j, ok := ckptDeletes(i); ok {
			delete(st, ckptKey(g, j))
		}
	}
	return st
}

// readCheckpoint checks the DB in dir and returns every key and value in
// it.
func readCheckpoint(t *testing.T, dir string, opts *Options) map[string]string {
	t.Helper()
	if r, err := Check(dir, opts); err != nil {
		t.Fatalf("Check(%s): %v", dir, err)
	} else if !r.OK() {
		t.Fatalf("Check(%s) = %v: %v", dir, r, r.Problems)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	defer db.Close()
	out, err := readAll(db)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ckptTaken is one checkpoint with what the writers had done around it.
type ckptTaken struct {
	dir string
	// acked[g] is how many of writer g's operations were acknowledged
	// before Checkpoint was called; started[g] how many had begun when it
	// returned.
	acked, started []int
}

// TestCheckpointModel takes checkpoints while writers run and checks each
// against a model: it opens (after a crash of the whole filesystem, since
// a returned checkpoint must be durable), and holds, for every writer,
// exactly its first m operations for some m between what was acknowledged
// before the call and what had begun by its end; and across writers the
// operations it holds are a prefix in real time: no operation is in it
// while one acknowledged before that operation began is missing.
func TestCheckpointModel(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { testCheckpointModel(t, seed) })
	}
}

func testCheckpointModel(t *testing.T, seed uint64) {
	const writers, ops, checkpoints = 4, 600, 5
	mem := vfs.NewMem()
	opts := ckptOptions(mem)
	db := openTestDB(t, "/db", opts)
	rng := rand.New(rand.NewPCG(seed, 1))

	// ackSeq counts acknowledgements across writers; ackIdx[g][i] is
	// operation (g, i)'s place in that order and startAck[g][i] the count
	// when it began.
	var ackSeq atomic.Int64
	ackIdx, startAck := make([][]int64, writers), make([][]int64, writers)
	acked, started := make([]atomic.Int64, writers), make([]atomic.Int64, writers)
	var wg sync.WaitGroup
	for g := range writers {
		ackIdx[g], startAck[g] = make([]int64, ops), make([]int64, ops)
		wg.Go(func() {
			for i := range ops {
				startAck[g][i] = ackSeq.Load()
				started[g].Add(1)
				if err := ckptApply(db, g, i); err != nil {
					t.Errorf("write %d of writer %d: %v", i, g, err)
					return
				}
				ackIdx[g][i] = ackSeq.Add(1)
				acked[g].Add(1)
			}
		})
	}
	var taken []ckptTaken
	for c := range checkpoints {
		// Checkpoints spread over the run; how many writes come between
		// is up to the scheduler, and any count is a valid test.
		target := int64(writers*ops) * int64(c+1) / int64(checkpoints+1)
		target += rng.Int64N(50) - 25
		for ackSeq.Load() < target && !t.Failed() {
			runtime.Gosched()
		}
		ct := ckptTaken{dir: fmt.Sprintf("/ckpt%d", c), acked: make([]int, writers), started: make([]int, writers)}
		for g := range writers {
			ct.acked[g] = int(acked[g].Load())
		}
		if err := db.Checkpoint(ct.dir); err != nil {
			t.Fatalf("Checkpoint: %v", err)
		}
		for g := range writers {
			ct.started[g] = int(started[g].Load())
		}
		taken = append(taken, ct)
	}
	wg.Wait()
	crashed := mem.CrashClone()
	copts := ckptOptions(crashed)
	for _, ct := range taken {
		got := readCheckpoint(t, ct.dir, copts)
		m := make([]int, writers)
		for g := range writers {
			m[g] = -1
			mine := map[string]string{}
			for k, v := range got {
				if strings.HasPrefix(k, fmt.Sprintf("g%d-", g)) {
					mine[k] = v
				}
			}
			for n := ct.acked[g]; n <= ct.started[g]; n++ {
				if maps.Equal(mine, ckptState(g, n)) {
					m[g] = n
					break
				}
			}
			if m[g] < 0 {
				t.Fatalf("%s: writer %d's keys (%d) are no prefix of its operations %d..%d", ct.dir, g, len(mine), ct.acked[g], ct.started[g])
			}
		}
		for g := range writers {
			if m[g] == 0 {
				continue
			}
			began := startAck[g][m[g]-1]
			for h := range writers {
				for i := m[h]; i < ops; i++ {
					if ackIdx[h][i] <= began {
						t.Fatalf("%s: holds write %d of writer %d but not write %d of writer %d, acknowledged before it began", ct.dir, m[g]-1, g, i, h)
					}
				}
			}
		}
		t.Logf("%s: writers' prefixes %v (acknowledged before the call %v)", ct.dir, m, ct.acked)
	}
}

// TestCheckpointRefusesExisting checks that a checkpoint never writes
// into an existing directory, and that it removes the leftovers of an
// interrupted one.
func TestCheckpointRefusesExisting(t *testing.T) {
	mem := vfs.NewMem()
	db := openTestDB(t, "/db", ckptOptions(mem))
	if err := db.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := mem.MkdirAll("/exists", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("/exists"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Checkpoint into an existing directory = %v; want ErrExist", err)
	}
	if err := mem.MkdirAll("/c"+CheckpointTempSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := mem.Create("/c" + CheckpointTempSuffix + "/000009.sst")
	f.Close()
	if err := db.Checkpoint("/c/"); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/c" + CheckpointTempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted checkpoint is still there: %v", err)
	}
	if got := readCheckpoint(t, "/c", ckptOptions(mem)); got["k"] != "v" || len(got) != 1 {
		t.Fatalf("checkpoint holds %q", got)
	}
	db.Close()
	if err := db.Checkpoint("/d"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close = %v", err)
	}
}

// TestCheckpointCrash crashes the filesystem before each operation of a
// checkpoint in turn: the checkpoint's directory is then absent (an
// interrupted one is only ever under the temporary name, and the next
// Checkpoint clears it) or complete, holding every write made before it.
func TestCheckpointCrash(t *testing.T) {
	// Two directories above it do not exist yet.
	const ckptDir = "/backups/daily/ckpt"
	var clock atomic.Int64
	for n := int64(1); ; n++ {
		mem := vfs.NewMem()
		cr := newCrasher(mem, &clock, 0)
		db := openTestDB(t, "/db", ckptOptions(errorfs.Wrap(mem, cr)))
		const writes = 400
		for i := range writes {
			if err := ckptApply(db, 0, i); err != nil {
				t.Fatal(err)
			}
		}
		cr.armIn(n, "checkpoint")
		if err := db.Checkpoint(ckptDir); err != nil {
			t.Fatal(err)
		}
		if len(cr.points) == 0 {
			// Returned, the checkpoint survives a crash, the
			// directories made for it included.
			if got := readCheckpoint(t, ckptDir, ckptOptions(mem.CrashClone())); !maps.Equal(got, ckptState(0, writes)) {
				t.Fatalf("after Checkpoint returned, a crash leaves %d keys of %d", len(got), len(ckptState(0, writes)))
			}
			t.Logf("checked crashes before each of the %d operations of a checkpoint", n-1)
			return
		}
		img := cr.points[0]
		if _, err := img.fs.Stat(ckptDir); errors.Is(err, os.ErrNotExist) {
			// Interrupted: the DB, reopened, checkpoints again over
			// what the first attempt left.
			again := openTestDB(t, "/db", ckptOptions(img.fs))
			if err := again.Checkpoint(ckptDir); err != nil {
				t.Fatalf("crash before %s: a second Checkpoint: %v\nfiles:\n%s", img.op, err, img.fs)
			}
			again.Close()
		}
		if got := readCheckpoint(t, ckptDir, ckptOptions(img.fs)); !maps.Equal(got, ckptState(0, writes)) {
			t.Fatalf("crash before %s: the checkpoint holds %d keys, not the %d written\nfiles:\n%s", img.op, len(got), len(ckptState(0, writes)), img.fs)
		}
		db.Close()
	}
}
