package lsmgo

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestViewSeesItsMoment checks that a View reads exactly the writes
// acknowledged before it was made, through overwrites, deletes, flushes
// and compactions that run while it is open.
func TestViewSeesItsMoment(t *testing.T) {
	opts := modelTinyOptions()
	opts.FS = vfs.NewMem()
	db, err := Open("/db", &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	const n = 500
	for i := range n {
		if err := db.Set(key(i), []byte(fmt.Sprintf("old%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	v, err := db.NewView()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if i%3 == 0 {
			err = db.Delete(key(i), nil)
		} else {
			err = db.Set(key(i), []byte(fmt.Sprintf("new%d", i)), nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set(key(n), []byte("later"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		got, _, err := v.GetWithExpiry(key(i))
		if want := fmt.Sprintf("old%d", i); err != nil || string(got) != want {
			t.Fatalf("view Get(%s) = %q, %v; want %q", key(i), got, err, want)
		}
	}
	if _, _, err := v.GetWithExpiry(key(n)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("view sees a key written after it: %v", err)
	}
	if got, err := db.Get(key(1)); err != nil || string(got) != "new1" {
		t.Fatalf("DB Get = %q, %v; want the new value", got, err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, _, err := v.GetWithExpiry(key(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get on a closed view = %v, want ErrClosed", err)
	}
}

// BenchmarkPipelinedGets measures a run of 16 point reads, the shape of a
// pipelined GET batch in the server, pinned three ways: each Get pinning
// the DB's state itself, one Snapshot for the run, and one View for the
// run. Parallel, so that the reference counting every pin does on the
// shared read state contends as it does under many connections. Reported
// per run of 16 reads.
func BenchmarkPipelinedGets(b *testing.B) {
	db, err := Open("/db", &Options{FS: vfs.NewMem(), Sync: SyncNone, MemTableSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const keys, run = 100_000, 16
	key := make([][]byte, keys)
	batch := db.NewBatch()
	for i := range keys {
		key[i] = []byte(fmt.Sprintf("key%08d", i))
		batch.Set(key[i], []byte("value-of-sixteen"))
	}
	if err := db.Apply(batch, nil); err != nil {
		b.Fatal(err)
	}
	type getter interface {
		GetWithExpiry(key []byte) ([]byte, time.Time, error)
	}
	pin := map[string]func() (getter, func() error){
		"db": func() (getter, func() error) { return db, func() error { return nil } },
		"snapshot": func() (getter, func() error) {
			s := db.NewSnapshot()
			return s, s.Close
		},
		"view": func() (getter, func() error) {
			v, err := db.NewView()
			if err != nil {
				b.Fatal(err)
			}
			return v, v.Close
		},
	}
	for _, name := range []string{"db", "snapshot", "view"} {
		b.Run(name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var n uint64
				for pb.Next() {
					g, done := pin[name]()
					for range run {
						n = n*6364136223846793005 + 1442695040888963407
						if _, _, err := g.GetWithExpiry(key[int(n>>33)%keys]); err != nil {
							b.Error(err)
							return
						}
					}
					done()
				}
			})
		})
	}
}
