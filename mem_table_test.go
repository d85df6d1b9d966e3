package lsmgo

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestMemtableRecycling checks that a memtable's arena is reused only after
// the last reader lets go of it: an open iterator pins its memtable through
// any number of flushes and still reads its own values, and once it closes
// later rotations reuse released arenas.
func TestMemtableRecycling(t *testing.T) {
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), MemTableSize: 32 << 10, Sync: SyncNone})
	value := func(round, i int) []byte {
		return []byte(fmt.Sprintf("round %d value %d %s", round, i, bytes.Repeat([]byte{'v'}, 40)))
	}
	const keys = 100
	for i := range keys {
		if err := db.Set([]byte(fmt.Sprintf("k%03d", i)), value(0, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	pinned := it.rs.mem.mt
	current := func() *memtable.Memtable {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.mem.mt
	}
	// Rewrite every key many times over: each round fills more than one
	// memtable, so rotations and flushes run while the iterator is open.
	for round := 1; round <= 20; round++ {
		for i := range keys {
			if err := db.Set([]byte(fmt.Sprintf("k%03d", i)), value(round, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if current() == pinned {
			t.Fatalf("round %d: the pinned memtable was reused while an iterator reads it", round)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := value(0, n); !bytes.Equal(it.Value(), want) {
			t.Fatalf("key %s: iterator read %q after the flushes, want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	if n != keys {
		t.Fatalf("iterator saw %d keys, want %d", n, keys)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// With no reader left, each flush hands its memtable back and the
	// next rotation takes it: a few arenas serve any number of rotations.
	seen := map[*memtable.Memtable]bool{}
	for round := 21; round <= 40; round++ {
		for i := range keys {
			if err := db.Set([]byte(fmt.Sprintf("k%03d", i)), value(round, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		seen[current()] = true
	}
	if len(seen) > 3 {
		t.Fatalf("20 flushes used %d distinct memtables; released arenas are not reused", len(seen))
	}
}

// TestIteratorOutlivesClose reads through an iterator after the DB closed:
// the memtable it reads (whose arena lives outside the Go heap) must stay
// mapped until the iterator closes, then be freed.
func TestIteratorOutlivesClose(t *testing.T) {
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20, Sync: SyncNone, Logger: slog.New(slog.DiscardHandler)})
	for i := range 1000 {
		if err := db.Set([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%04d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.MemTables.Bytes != 0 {
		t.Errorf("Metrics after Close report %d memtable bytes", m.MemTables.Bytes)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("v%04d", n); string(it.Value()) != want {
			t.Fatalf("after Close, key %s reads %q, want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	if n != 1000 {
		t.Fatalf("after Close the iterator saw %d keys, want 1000", n)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// The memtable is gone now: a closed iterator must not touch it.
	if it.First() || it.SeekGE([]byte("k0500")) || it.Last() || it.SeekLT([]byte("k0500")) || it.Next() || it.Prev() || it.Valid() || it.Key() != nil {
		t.Fatal("a closed iterator still positions")
	}
}
