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
	db := openTestDB(t, "/db", &opts)
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

// TestReaders checks that DB, Snapshot and View read through the one
// Reader interface: a Snapshot and a View taken before an overwrite see
// the old state in Get and in iteration, the DB the new one, and a View's
// iterator stays valid after the View closes.
func TestReaders(t *testing.T) {
	db, err := Open("/db", &Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Set([]byte(k), []byte("old-"+k), nil); err != nil {
			t.Fatal(err)
		}
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	view, err := db.NewView()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("b"), []byte("new-b"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	scan := func(r Reader) string {
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		for ok := it.First(); ok; ok = it.Next() {
			s += fmt.Sprintf("%s=%s ", it.Key(), it.Value())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const before, after = "a=old-a b=old-b c=old-c ", "a=old-a b=new-b "
	for _, tc := range []struct {
		name  string
		r     Reader
		b     string
		cGone bool
		scan  string
	}{
		{"DB", db, "new-b", true, after},
		{"Snapshot", snap, "old-b", false, before},
		{"View", view, "old-b", false, before},
	} {
		if v, err := tc.r.Get([]byte("b")); err != nil || string(v) != tc.b {
			t.Errorf("%s: Get(b) = %q, %v; want %q", tc.name, v, err, tc.b)
		}
		if _, _, err := tc.r.GetWithExpiry([]byte("c")); errors.Is(err, ErrNotFound) != tc.cGone {
			t.Errorf("%s: GetWithExpiry(c) = %v", tc.name, err)
		}
		if got := scan(tc.r); got != tc.scan {
			t.Errorf("%s: scan = %q, want %q", tc.name, got, tc.scan)
		}
	}

	it, err := view.NewIter(&IterOptions{LowerBound: []byte("b")})
	if err != nil {
		t.Fatal(err)
	}
	if err := view.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := view.NewIter(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("NewIter on a closed view = %v, want ErrClosed", err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if !it.First() || string(it.Value()) != "old-b" || !it.Next() || string(it.Key()) != "c" || it.Next() {
		t.Errorf("iterator of a closed view lost its state: err %v", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
