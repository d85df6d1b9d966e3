package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

func TestBasicSetGetDeleteReopen(t *testing.T) {
	fs := vfs.NewMem()
	db := openTestDB(t, "/db", &Options{FS: fs, MemTableSize: 64 << 10})
	for i := range 5000 {
		k := fmt.Appendf(nil, "key%05d", i)
		if err := db.Set(k, bytes.Repeat(k, 3), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5000; i += 2 {
		if err := db.Delete(fmt.Appendf(nil, "key%05d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(db *DB) {
		t.Helper()
		for i := range 5000 {
			k := fmt.Appendf(nil, "key%05d", i)
			v, err := db.Get(k)
			if i%2 == 0 {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: want not found, got %q %v", k, v, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(v, bytes.Repeat(k, 3)) {
				t.Fatalf("%s: got %q %v", k, v, err)
			}
		}
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != 2500 {
			t.Fatalf("forward scan: %d keys", n)
		}
		n = 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		if n != 2500 {
			t.Fatalf("reverse scan: %d keys", n)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check(db)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	check(db)
	t.Log(db.Metrics())
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", &Options{FS: fs})
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), Now: func() time.Time { return now }})
	if err := db.SetWithExpiry([]byte("a"), []byte("1"), now.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	v, exp, err := db.GetWithExpiry([]byte("a"))
	if err != nil || string(v) != "1" || !exp.Equal(now.Add(time.Second)) {
		t.Fatalf("got %q %v %v", v, exp, err)
	}
	now = now.Add(2 * time.Second)
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired key: %v", err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	fs := vfs.NewMem()
	openTestDB(t, "/db", &Options{FS: fs})
	if _, err := Open("/db", &Options{FS: fs}); err == nil {
		t.Fatal("second Open succeeded")
	}
}
