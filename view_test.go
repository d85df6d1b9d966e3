package lsmgo

import (
	"errors"
	"fmt"
	"testing"

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
