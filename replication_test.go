package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// commitLog collects what Options.OnCommit reports, copied.
type commitLog struct {
	mu      sync.Mutex
	batches [][]byte
}

func (l *commitLog) add(_ uint64, data []byte) {
	l.mu.Lock()
	l.batches = append(l.batches, bytes.Clone(data))
	l.mu.Unlock()
}

func (l *commitLog) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.batches...)
}

// randomReplBatch builds a batch of 1-4 random writes on a small key
// space (sets, deletes, sets with a far expiry; values up to 600 bytes, so
// some are separated, some handed over by SetNoCopy) and applies its
// effect to model.
func randomReplBatch(db *DB, rng *rand.Rand, model map[string]string, prefix string) *Batch {
	b := db.NewBatch()
	for range 1 + rng.IntN(4) {
		key := fmt.Sprintf("%s%03d", prefix, rng.IntN(120))
		value := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 1+rng.IntN(600))
		switch rng.IntN(5) {
		case 0:
			b.Delete([]byte(key))
			delete(model, key)
		case 1:
			b.SetWithExpiry([]byte(key), value, time.Now().Add(time.Hour))
			model[key] = string(value)
		case 2:
			b.SetNoCopy([]byte(key), value)
			model[key] = string(value)
		default:
			b.Set([]byte(key), value)
			model[key] = string(value)
		}
	}
	return b
}

// TestReplicationPrefix writes seeded random batches on a primary, one
// writer and then several at once, and replays what OnCommit reported on
// replicas: the reports are contiguous in sequence numbers; a replica
// from an empty DB holds, after each batch, exactly the primary's content
// after that batch; one made from a checkpoint continues from the
// checkpoint's position; and a gap or a duplicate is refused without
// changing anything.
func TestReplicationPrefix(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { testReplicationPrefix(t, seed) })
	}
}

func testReplicationPrefix(t *testing.T, seed uint64) {
	mem := vfs.NewMem()
	var log commitLog
	opts := ckptOptions(mem)
	opts.OnCommit = log.add
	primary := openTestDB(t, "/primary", opts)
	rng := rand.New(rand.NewPCG(seed, 23))

	// Phase 1, one writer: the model after each batch.
	model := map[string]string{}
	var states []map[string]string
	for range 150 {
		if err := primary.Apply(randomReplBatch(primary, rng, model, "k"), nil); err != nil {
			t.Fatal(err)
		}
		states = append(states, maps.Clone(model))
	}
	if err := primary.Checkpoint("/ckpt"); err != nil {
		t.Fatal(err)
	}
	phase1 := log.all()
	if len(phase1) != len(states) {
		t.Fatalf("OnCommit reported %d batches, want %d", len(phase1), len(states))
	}

	// A replica from an empty DB, applying the batches in runs of 1-8
	// (ApplyReplicatedBatches), reports to its own OnCommit the very
	// batches it was given.
	var freshLog commitLog
	fopts := ckptOptions(mem)
	fopts.OnCommit = freshLog.add
	fresh := openTestDB(t, "/fresh", fopts)
	for i := 0; i < len(phase1); {
		end := min(len(phase1), i+1+rng.IntN(8))
		if err := fresh.ApplyReplicatedBatches(phase1[i:end], nil); err != nil {
			t.Fatalf("batches %d-%d: %v", i, end-1, err)
		}
		i = end
		got, err := readAll(fresh)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, states[i-1]) {
			t.Fatalf("after batch %d the replica holds %d keys, the primary held %d, or different values", i-1, len(got), len(states[i-1]))
		}
	}
	if reported := freshLog.all(); !slices.EqualFunc(reported, phase1, bytes.Equal) {
		t.Fatalf("the replica reported %d batches, not the %d it applied", len(reported), len(phase1))
	}

	// Phase 2, writers at once, while a replica is made from the
	// checkpoint of phase 1.
	var wg sync.WaitGroup
	for g := range 4 {
		wrng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Go(func() {
			m := map[string]string{}
			for range 100 {
				if err := primary.Apply(randomReplBatch(primary, wrng, m, fmt.Sprintf("w%d-", g)), nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	ropts := ckptOptions(mem)
	replica := openTestDB(t, "/ckpt", ropts)
	wg.Wait()
	all := log.all()
	next := uint64(0)
	for i, data := range all {
		seq, count, err := ReplicatedSeq(data)
		if err != nil {
			t.Fatal(err)
		}
		if next != 0 && seq != next {
			t.Fatalf("batch %d reported at seqnum %d, want %d: not in commit order", i, seq, next)
		}
		next = seq + uint64(count)
	}
	if got, want := replica.LastSeq(), fresh.LastSeq(); got != want {
		t.Fatalf("checkpoint replica at seqnum %d, want %d", got, want)
	}
	before, err := readAll(replica)
	if err != nil {
		t.Fatal(err)
	}
	rest := all[len(phase1):]
	var mismatch *SeqMismatchError
	if err := replica.ApplyReplicated(phase1[len(phase1)-1], nil); !errors.As(err, &mismatch) || mismatch.Got >= mismatch.Want {
		t.Fatalf("duplicate batch: %v, want a duplicate SeqMismatchError", err)
	}
	if err := replica.ApplyReplicated(rest[1], nil); !errors.As(err, &mismatch) || mismatch.Got <= mismatch.Want {
		t.Fatalf("batch after a gap: %v, want a gap SeqMismatchError", err)
	}
	if err := replica.ApplyReplicatedBatches([][]byte{rest[0], rest[2]}, nil); !errors.As(err, &mismatch) || mismatch.Got <= mismatch.Want {
		t.Fatalf("batches with a gap between them: %v, want a gap SeqMismatchError", err)
	}
	if after, err := readAll(replica); err != nil || !maps.Equal(after, before) {
		t.Fatalf("refused batches changed the replica (%v)", err)
	}
	for i, data := range rest {
		if err := replica.ApplyReplicated(data, nil); err != nil {
			t.Fatalf("batch %d of phase 2: %v", i, err)
		}
	}
	want, err := readAll(primary)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(replica)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("replica holds %d keys, primary %d, or different values", len(got), len(want))
	}
	if replica.LastSeq() != primary.LastSeq() {
		t.Fatalf("replica at seqnum %d, primary at %d", replica.LastSeq(), primary.LastSeq())
	}
}

// TestApplyReplicatedBadInput feeds malformed replicated batches: each is
// an error and writes nothing.
func TestApplyReplicatedBadInput(t *testing.T) {
	db := openTestDB(t, "/db", ckptOptions(vfs.NewMem()))
	good := db.NewBatch()
	good.Set([]byte("k"), []byte("v"))
	data := bytes.Clone(good.repr)
	data[0] = 1 // seqnum 1
	for name, bad := range map[string][]byte{
		"short header": data[:5],
		"no seqnum":    append(make([]byte, 8), data[8:]...),
		"truncated":    data[:len(data)-1],
		"blob kind":    append(bytes.Clone(data[:12]), 3, 1, 'k', 0),
	} {
		if err := db.ApplyReplicated(bad, nil); err == nil {
			t.Errorf("%s: applied", name)
		}
	}
	if got, err := readAll(db); err != nil || len(got) != 0 {
		t.Fatalf("DB holds %v (%v) after refused batches", got, err)
	}
	if err := db.ApplyReplicated(data, nil); err != nil {
		t.Fatal(err)
	}
}

// TestBatchSeq commits seeded random batches (some with separated
// values) from several writers at once and checks that each batch's Seq
// is the position OnCommit reported it at, with its own records.
func TestBatchSeq(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	reported := map[uint64][]byte{}
	opts := ckptOptions(mem)
	opts.OnCommit = func(seq uint64, data []byte) {
		mu.Lock()
		reported[seq] = bytes.Clone(data)
		mu.Unlock()
	}
	db := openTestDB(t, "/db", opts)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 100 {
				b := randomReplBatch(db, rng, map[string]string{}, fmt.Sprintf("w%d-", w))
				if b.Seq() != 0 {
					errs <- fmt.Errorf("an uncommitted batch has Seq %d", b.Seq())
					return
				}
				if err := db.Apply(b, nil); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				data, ok := reported[b.Seq()]
				mu.Unlock()
				var first []byte
				b.ForEachKey(func(k []byte) {
					if first == nil {
						first = bytes.Clone(k)
					}
				})
				var got []byte
				if ok {
					ForEachReplicatedKey(data, func(k []byte) {
						if got == nil {
							got = bytes.Clone(k)
						}
					})
				}
				if !bytes.Equal(got, first) {
					errs <- fmt.Errorf("Seq %d: OnCommit reported a batch starting with %q there, the batch starts with %q", b.Seq(), got, first)
					return
				}
				if b.Reset(); b.Seq() != 0 {
					errs <- errors.New("Reset kept Seq")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestVisibleSeq: while a writer commits one write per batch, every
// position VisibleSeq reports is readable at once and never past
// LastSeq; once the writer stops, the two agree.
func TestVisibleSeq(t *testing.T) {
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
	base := db.LastSeq()
	if v := db.VisibleSeq(); v != base {
		t.Fatalf("a new DB: VisibleSeq %d, LastSeq %d", v, base)
	}
	const n = 1000
	key := func(i uint64) []byte { return []byte(fmt.Sprintf("w%05d", i)) }
	done := make(chan error, 1)
	go func() {
		for i := uint64(1); i <= n; i++ {
			if err := db.Set(key(i), bytes.Repeat([]byte{'v'}, 100), nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		runtime.Gosched() // leave the writer room on a small machine
		v := db.VisibleSeq()
		if last := db.LastSeq(); v > last {
			t.Fatalf("VisibleSeq %d past LastSeq %d", v, last)
		}
		if v > base {
			if _, err := db.Get(key(v - base)); err != nil {
				t.Fatalf("VisibleSeq says %d, yet write %d does not read: %v", v, v-base, err)
			}
		}
	}
	if v, last := db.VisibleSeq(), db.LastSeq(); v != base+n || last != base+n {
		t.Fatalf("after %d writes: VisibleSeq %d, LastSeq %d, want %d", n, v, last, base+n)
	}
}
