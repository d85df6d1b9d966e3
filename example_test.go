package lsmgo_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Example shows the embedded API end to end: open, write, read, batch,
// expiry, a bounded iterator and a snapshot.
func Example() {
	dir, err := os.MkdirTemp("", "lsmgo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// nil options: every default, including SyncAlways (each write is
	// fsynced before it returns; concurrent writers share the fsync).
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Set([]byte("hello"), []byte("world"), nil); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("hello")) // a copy the caller owns
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello = %s\n", v)

	// A batch commits atomically: after a crash, all of it or none.
	b := db.NewBatch()
	b.Set([]byte("fruit/apple"), []byte("red"))
	b.Set([]byte("fruit/banana"), []byte("yellow"))
	b.Set([]byte("fruit/cherry"), []byte("dark red"))
	b.Set([]byte("vegetable/leek"), []byte("green"))
	b.Delete([]byte("hello"))
	if err := db.Apply(b, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Get([]byte("hello")); errors.Is(err, lsmgo.ErrNotFound) {
		fmt.Println("hello is gone")
	}

	// A key with an expiry reads as absent once the time has passed.
	expireAt := time.Now().Add(time.Hour)
	if err := db.SetWithExpiry([]byte("session"), []byte("token"), expireAt, nil); err != nil {
		log.Fatal(err)
	}
	_, exp, err := db.GetWithExpiry([]byte("session"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("session expires in about %s\n", time.Until(exp).Round(time.Hour))

	// A snapshot keeps seeing the DB as it was when taken.
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.Set([]byte("fruit/banana"), []byte("green"), nil); err != nil {
		log.Fatal(err)
	}

	// Iterate over the "fruit/" keys: the lower bound is inclusive, the
	// upper exclusive ("fruit0" is the first key after every "fruit/...").
	bounds := &lsmgo.IterOptions{LowerBound: []byte("fruit/"), UpperBound: []byte("fruit0")}
	it, err := db.NewIter(bounds)
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}

	// The snapshot, backwards.
	sit, err := snap.NewIter(bounds)
	if err != nil {
		log.Fatal(err)
	}
	for ok := sit.Last(); ok; ok = sit.Prev() {
		fmt.Printf("snapshot: %s = %s\n", sit.Key(), sit.Value())
	}
	if err := sit.Close(); err != nil {
		log.Fatal(err)
	}

	// Output:
	// hello = world
	// hello is gone
	// session expires in about 1h0m0s
	// fruit/apple = red
	// fruit/banana = green
	// fruit/cherry = dark red
	// snapshot: fruit/cherry = dark red
	// snapshot: fruit/banana = yellow
	// snapshot: fruit/apple = red
}
