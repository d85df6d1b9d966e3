package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSupersededRecordsLeftOut writes seeded random batches that name a
// few keys many times each (sets, deletions, expiring sets, values above
// the blob threshold) and checks every read against a model, from the
// memtable, after a flush and after reopening from the WAL; and that
// the memtable holds one entry per key a batch writes, plus its
// superseded separated values, not one per record.
func TestSupersededRecordsLeftOut(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 20))
			dir := t.TempDir()
			opts := &Options{ValueThreshold: 64}
			db := openTestDB(t, dir, opts)
			type state struct {
				val    []byte
				expiry time.Time
			}
			model := map[string]state{}
			future := time.Now().Add(time.Hour).Truncate(time.Millisecond)
			for round := range 40 {
				b := db.NewBatch()
				n := 1 + rng.IntN(60)
				keys, blobs := map[string]bool{}, 0
				last := map[string]bool{} // whether the key's last record is a blob
				for range n {
					k := fmt.Sprintf("key%02d", rng.IntN(12))
					v := bytes.Repeat([]byte{byte('a' + round%26)}, 1+rng.IntN(100))
					keys[k] = true
					if last[k] {
						blobs++ // superseded, but still inserted
					}
					last[k] = false
					switch rng.IntN(4) {
					case 0:
						b.Delete([]byte(k))
						delete(model, k)
					case 1:
						b.SetWithExpiry([]byte(k), v, future)
						model[k] = state{v, future}
						last[k] = len(v) >= opts.ValueThreshold
					default:
						b.Set([]byte(k), v)
						model[k] = state{v, time.Time{}}
						last[k] = len(v) >= opts.ValueThreshold
					}
				}
				before := db.rs.Load().mem.mt.Len()
				if err := db.Apply(b, nil); err != nil {
					t.Fatal(err)
				}
				if mem := db.rs.Load().mem; mem.mt.Len() >= before { // not rotated
					if got, want := mem.mt.Len()-before, len(keys)+blobs; n <= supersededMax && got != want {
						t.Fatalf("round %d: %d records on %d keys (%d superseded blobs) added %d memtable entries, want %d", round, n, len(keys), blobs, got, want)
					}
				}
				checkModel := func(when string) {
					t.Helper()
					for i := range 12 {
						k := fmt.Sprintf("key%02d", i)
						v, exp, err := db.GetWithExpiry([]byte(k))
						st, ok := model[k]
						switch {
						case !ok && !errors.Is(err, ErrNotFound):
							t.Fatalf("%s, round %d: Get(%s) = %q, %v; want not found", when, round, k, v, err)
						case ok && (err != nil || !bytes.Equal(v, st.val) || !exp.Equal(st.expiry)):
							t.Fatalf("%s, round %d: Get(%s) = %q, %v, %v; want %q, %v", when, round, k, v, exp, err, st.val, st.expiry)
						}
					}
					it, err := db.NewIter(nil)
					if err != nil {
						t.Fatal(err)
					}
					seen := 0
					for ok := it.First(); ok; ok = it.Next() {
						st, in := model[string(it.Key())]
						if !in || !bytes.Equal(it.Value(), st.val) {
							t.Fatalf("%s, round %d: iterator at %q = %q, model %q (%v)", when, round, it.Key(), it.Value(), st.val, in)
						}
						seen++
					}
					if err := it.Close(); err != nil || seen != len(model) {
						t.Fatalf("%s, round %d: iterated %d keys, model %d: %v", when, round, seen, len(model), err)
					}
				}
				checkModel("memtable")
				switch round % 10 {
				case 4:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
					checkModel("flushed")
				case 9:
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					db = openTestDB(t, dir, opts)
					checkModel("reopened")
				}
			}
		})
	}
}
