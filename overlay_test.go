package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestOverlayModel checks Overlay against a model: a DB with random
// contents (in memtables and tables), a view, then random writes to both
// the DB (which the view must not see) and a batch (which the overlay
// must see, each read as of that moment), with Gets and forward and
// backward iterations compared to the model after each step, and the
// batch reset now and then; finally the batch is applied and the DB must
// equal the model. Values of every size cross the blob threshold, and
// some writes expire.
func TestOverlayModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testOverlayModel(t, seed) })
	}
}

func testOverlayModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	opts := modelTinyOptions()
	opts.FS = vfs.NewMem()
	opts.ValueThreshold = 64
	db := openTestDB(t, "/db", &opts)
	key := func() []byte { return []byte(fmt.Sprintf("k%02d", rng.IntN(40))) }
	value := func() []byte { return bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(150)) }
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	model := map[string]string{}
	written := map[string]bool{} // the keys a batch wrote since reset
	write := func(b *Batch, m map[string]string) []byte {
		k := key()
		defer func() { written[string(k)] = true }()
		switch rng.IntN(5) {
		case 0:
			b.Delete(k)
			delete(m, string(k))
		case 1:
			v := value()
			if rng.IntN(2) == 0 {
				b.SetWithExpiry(k, v, past)
				delete(m, string(k))
			} else {
				b.SetWithExpiry(k, v, future)
				m[string(k)] = string(v)
			}
		default:
			v := value()
			b.Set(k, v)
			m[string(k)] = string(v)
		}
		return k
	}
	for range 200 {
		b := db.NewBatch()
		write(b, model)
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(60) == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, err := db.NewView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tx := db.NewBatch()
	o := v.Overlay(tx)
	clear(written)
	want := map[string]string{}
	for k, val := range model {
		want[k] = val
	}
	// With the batch still empty the overlay is the view.
	empty, err := o.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkIter(t, empty, modelList(want))
	empty.Close()
	var iters []*Iterator
	var iterWants [][]string
	for step := range 300 {
		if rng.IntN(40) == 0 {
			// The batch starts over: reads see the view again, then
			// the new writes (short batches are read without the
			// index, longer ones through it).
			tx.Reset()
			clear(written)
			clear(want)
			for k, val := range model {
				want[k] = val
			}
		}
		switch rng.IntN(4) {
		case 0:
			// The DB moves on; neither the view nor the overlay sees it.
			b := db.NewBatch()
			k := write(b, map[string]string{})
			delete(written, string(k))
			if err := db.Apply(b, nil); err != nil {
				t.Fatal(err)
			}
		case 1:
			// A command's own batch joins the transaction's.
			cmd := db.NewBatch()
			for range 1 + rng.IntN(3) {
				write(cmd, want)
			}
			tx.Append(cmd)
		default:
			write(tx, want)
		}
		k := key()
		got, err := o.Get(k)
		if w, ok := want[string(k)]; ok != (err == nil) || string(got) != w || err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("step %d: Get(%s) = %q, %v; want %q (present %v)", step, k, got, err, w, ok)
		}
		if rng.IntN(10) == 0 {
			it, err := o.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			iters = append(iters, it)
			iterWants = append(iterWants, modelList(want))
		}
	}
	// Each iterator shows the batch as it was when it was made, forward
	// and backward, though the batch grew afterwards.
	for i, it := range iters {
		checkIter(t, it, iterWants[i])
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	it, err := o.NewIter(&IterOptions{LowerBound: []byte("k10"), UpperBound: []byte("k20")})
	if err != nil {
		t.Fatal(err)
	}
	var bounded []string
	for _, kv := range modelList(want) {
		if kv >= "k10" && kv < "k20" {
			bounded = append(bounded, kv)
		}
	}
	checkIter(t, it, bounded)
	it.Close()
	if err := db.Apply(tx, nil); err != nil {
		t.Fatal(err)
	}
	// The DB now holds what the overlay showed for every key the batch
	// wrote after the DB's own writes to it.
	for k := range written {
		got, err := db.Get([]byte(k))
		if w, ok := want[k]; ok != (err == nil) || string(got) != w {
			t.Fatalf("after Apply, Get(%s) = %q, %v; want %q (present %v)", k, got, err, w, ok)
		}
	}
}

// modelList renders a model as sorted "key=value" strings.
func modelList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// checkIter compares it with want forward, then backward.
func checkIter(t *testing.T, it *Iterator, want []string) {
	t.Helper()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("forward iteration:\n got %q\nwant %q", got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	slices.Reverse(got)
	if !slices.Equal(got, want) {
		t.Fatalf("backward iteration:\n got %q\nwant %q", got, want)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestBatchForEachKey checks that ForEachKey lists every write's key in
// order, deletions and separated values included, and that ForEachExpiry
// lists them with the expiry each write gives, inline or separated, past
// or future.
func TestBatchForEachKey(t *testing.T) {
	opts := modelTinyOptions()
	opts.FS = vfs.NewMem()
	opts.ValueThreshold = 8
	db := openTestDB(t, "/db", &opts)
	hour, past := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli()), time.UnixMilli(1_000)
	b := db.NewBatch()
	b.Set([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.SetWithExpiry([]byte("c"), bytes.Repeat([]byte("x"), 100), hour)
	b.SetWithExpiry([]byte("d"), []byte("2"), past)
	b.Set([]byte("a"), []byte("2"))
	var got []string
	b.ForEachKey(func(k []byte) { got = append(got, string(k)) })
	if want := []string{"a", "b", "c", "d", "a"}; !slices.Equal(got, want) {
		t.Fatalf("ForEachKey: %q, want %q", got, want)
	}
	got = got[:0]
	b.ForEachExpiry(func(k []byte, at time.Time) {
		s := string(k)
		if !at.IsZero() {
			s += "@" + strconv.FormatInt(at.UnixMilli(), 10)
		}
		got = append(got, s)
	})
	if want := []string{"a", "b", "c@" + strconv.FormatInt(hour.UnixMilli(), 10), "d@1000", "a"}; !slices.Equal(got, want) {
		t.Fatalf("ForEachExpiry: %q, want %q", got, want)
	}
}

// TestBatchSetNoCopy checks that SetNoCopy stores what Set would: a value
// below the separation threshold is copied at once (changing the caller's
// slice afterwards changes nothing), a separated one is stored whole.
func TestBatchSetNoCopy(t *testing.T) {
	opts := modelTinyOptions()
	opts.FS = vfs.NewMem()
	opts.ValueThreshold = 8
	db := openTestDB(t, "/db", &opts)
	small, large := []byte("abc"), bytes.Repeat([]byte("y"), 100)
	b := db.NewBatch()
	b.SetNoCopy([]byte("s"), small)
	b.SetNoCopy([]byte("l"), large)
	copy(small, "XYZ")
	if err := db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	large[0] = 'Z' // applied: the DB holds its own bytes now
	for k, want := range map[string]string{"s": "abc", "l": strings.Repeat("y", 100)} {
		if got, err := db.Get([]byte(k)); err != nil || string(got) != want {
			t.Fatalf("Get(%q) = %.20q, %v; want %.20q", k, got, err, want)
		}
	}
}
