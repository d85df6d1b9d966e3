package testutil

import (
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

// ReadDB opens the closed DB in dir with opts and returns every key and
// value in it; a DB that fails Check fails t.
func ReadDB(t testing.TB, dir string, opts *lsmgo.Options) map[string]string {
	t.Helper()
	if r, err := lsmgo.Check(dir, opts); err != nil || !r.OK() {
		t.Fatalf("Check(%s) = %v, %v", dir, r, err)
	}
	db, err := lsmgo.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
