package server

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestElemFilter pins the filter's verdicts on each kind of metadata an
// element may meet, and that it reads the metadata once per run of
// elements of one version.
func TestElemFilter(t *testing.T) {
	db, err := lsmgo.Open("/db", &lsmgo.Options{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ks := &keyspace{db: db}
	b := db.NewBatch()
	var scratch keyBuf
	ks.putColl(b, &scratch, []byte("live"), collMeta{typ: typeHash, version: 7, count: 1})
	ks.putString(b, &scratch, []byte("str"), stringValue{val: []byte("v")})
	if err := db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	reads := 0
	f := newElemFilter(countingReader{db, &reads})
	reads = 0 // the map of databases, read once
	for _, tc := range []struct {
		key  []byte
		drop bool
	}{
		{elemKey(nil, []byte("live"), collMeta{version: 7}, []byte("a")), false},
		{elemKey(nil, []byte("live"), collMeta{version: 7}, []byte("b")), false}, // same run: no read
		{elemKey(nil, []byte("live"), collMeta{version: 6}, []byte("a")), true},  // older version
		{elemKey(nil, []byte("gone"), collMeta{version: 7}, []byte("a")), true},  // no metadata
		{elemKey(nil, []byte("gone"), collMeta{version: 7}, []byte("b")), true},  // same run: no read
		{elemKey(nil, []byte("str"), collMeta{version: 1}, []byte("a")), true},   // overwritten by a string
		{[]byte("klive"), false}, // metadata is never dropped
		{[]byte("mversions"), false},
		{[]byte("e\x00\x00\x00\x09short"), false}, // not an element key: kept
	} {
		if got := f.Drop(tc.key); got != tc.drop {
			t.Errorf("Drop(%q) = %v, want %v", tc.key, got, tc.drop)
		}
	}
	if reads != 4 {
		t.Errorf("the filter read the metadata %d times, want 4 (once per run)", reads)
	}
}

// countingReader counts Gets.
type countingReader struct {
	lsmgo.Reader
	n *int
}

func (r countingReader) Get(key []byte) ([]byte, error) {
	*r.n++
	return r.Reader.Get(key)
}

// TestReclaim deletes a hash of 50,000 fields (200,000 without -short)
// and a set of half that, by DEL and then by FLUSHALL, and checks that the
// server gives their disk space back on its own, while a small hash
// written beside them stays whole. It logs the bytes on disk before and
// after, the figure doc/server.md quotes.
func TestReclaim(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 50_000
	}
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	fill := func(key, cmd string, n int) {
		t.Helper()
		const perCmd, perPipe = 100, 50
		p := c.Pipeline()
		for i := 0; i < n; i += perCmd {
			args := []any{cmd, key}
			for j := i; j < min(i+perCmd, n); j++ {
				args = append(args, fmt.Sprintf("field-%08d", j))
				if cmd == "HSET" {
					args = append(args, fmt.Sprintf("value-%08d-padding", j))
				}
			}
			p.Do(ctx, args...)
			if p.Len() == perPipe || i+perCmd >= n {
				if _, err := p.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	onDisk := func() int64 {
		m := s.DB().Metrics()
		var n int64
		for _, l := range m.Levels {
			n += int64(l.Bytes)
		}
		return n + m.Blob.Bytes
	}
	reclaimed := func(what string, before int64, start time.Time) {
		t.Helper()
		// A compaction of the whole range on a loaded machine: a long
		// deadline, only a failure waits that long.
		for deadline := time.Now().Add(3 * time.Minute); !s.ks.reclaim.idle(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the reclaimer did not finish", what)
			}
		}
		after := onDisk()
		t.Logf("%s: %d bytes on disk before, %d after, reclaimed within %v; %d entries filtered so far",
			what, before, after, time.Since(start).Round(time.Millisecond), s.DB().Metrics().Compaction.Filtered)
		if after > before/10 {
			t.Errorf("%s: %d bytes on disk after reclaiming, from %d", what, after, before)
		}
	}

	fill("big", "HSET", n)
	fill("bigset", "SADD", n/2)
	eq(t, "HSET keep", c.HSet(ctx, "keep", "a", "1", "b", "2").Val(), int64(2))
	if err := s.DB().Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := onDisk()
	start := time.Now()
	eq(t, "DEL", c.Del(ctx, "big", "bigset").Val(), int64(2))
	t.Logf("DEL of %d elements answered in %v", n+n/2, time.Since(start))
	reclaimed("DEL", before, start)
	if m := s.DB().Metrics(); m.Compaction.Filtered < int64(n+n/2) {
		t.Errorf("the filter dropped %d entries, want at least %d", m.Compaction.Filtered, n+n/2)
	}
	eq(t, "HGETALL keep", c.HGetAll(ctx, "keep").Val(), map[string]string{"a": "1", "b": "2"})

	fill("big", "SADD", n/2)
	if err := s.DB().Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	before, start = onDisk(), time.Now()
	eq(t, "FLUSHALL", c.FlushAll(ctx).Val(), "OK")
	reclaimed("FLUSHALL", before, start)
	it, err := s.DB().NewIter(&lsmgo.IterOptions{LowerBound: []byte{elemPrefix}, UpperBound: []byte{elemPrefix + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("element %q survived FLUSHALL and its reclaiming", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
