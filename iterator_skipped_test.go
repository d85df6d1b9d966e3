package lsmgo

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestIteratorSkipped checks Skipped against a model: the keys deleted
// after a flush sit as tombstones over live versions, and every walk and
// seek counts exactly the deleted keys it passes.
func TestIteratorSkipped(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 0))
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20, Sync: SyncNone, Logger: slog.New(slog.DiscardHandler)})
	const n = 300
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	for i := range n {
		if err := db.Set(key(i), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	dead := make([]bool, n)
	deleted := 0
	for i := range n {
		if rng.IntN(3) > 0 {
			dead[i] = true
			deleted++
			if err := db.Delete(key(i), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
	}
	if got := it.Skipped(); got != int64(deleted) {
		t.Fatalf("a forward walk skipped %d keys, want the %d deleted", got, deleted)
	}
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	if got := it.Skipped(); got != 2*int64(deleted) {
		t.Fatalf("after a backward walk too, Skipped is %d, want %d", got, 2*deleted)
	}
	for range 200 {
		from := rng.IntN(n)
		before := it.Skipped()
		want := 0
		for i := from; i < n && dead[i]; i++ {
			want++
		}
		it.SeekGE(key(from))
		if got := it.Skipped() - before; got != int64(want) {
			t.Fatalf("SeekGE(%s) skipped %d keys, want %d", key(from), got, want)
		}
		before, want = it.Skipped(), 0
		for i := from - 1; i >= 0 && dead[i]; i-- {
			want++
		}
		it.SeekLT(key(from))
		if got := it.Skipped() - before; got != int64(want) {
			t.Fatalf("SeekLT(%s) skipped %d keys, want %d", key(from), got, want)
		}
	}
}
