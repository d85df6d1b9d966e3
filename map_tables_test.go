//go:build unix

package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestMapTables runs writes, overwrites and deletes against a map on
// the OS filesystem with MapTables, with flushes and compactions every
// few dozen writes (so tables are mapped, read and unmapped all the
// time), checking every key after each round and again after a reopen.
func TestMapTables(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := t.TempDir()
	opts := modelTinyOptions()
	opts.FS, opts.MapTables = vfs.Default, true
	db, err := Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	want := map[string][]byte{}
	check := func(round int) {
		t.Helper()
		for i := range 500 {
			k := fmt.Appendf(nil, "key-%04d", i)
			v, err := db.Get(k)
			w, ok := want[string(k)]
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("round %d: Get(%s) = %q, %v; want not found", round, k, v, err)
			case ok && (err != nil || !bytes.Equal(v, w)):
				t.Fatalf("round %d: Get(%s) = %q, %v; want %q", round, k, v, err, w)
			}
		}
	}
	for round := range 20 {
		for range 200 {
			k := fmt.Appendf(nil, "key-%04d", rng.IntN(500))
			if rng.IntN(5) == 0 {
				if err := db.Delete(k, nil); err != nil {
					t.Fatal(err)
				}
				delete(want, string(k))
				continue
			}
			v := bytes.Repeat(fmt.Appendf(nil, "%d-%d.", round, rng.IntN(1000)), 1+rng.IntN(20))
			if err := db.Set(k, v, nil); err != nil {
				t.Fatal(err)
			}
			want[string(k)] = v
		}
		if round%5 == 4 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		check(round)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, &opts); err != nil {
		t.Fatal(err)
	}
	check(-1)
}
