package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
	"github.com/redis/go-redis/v9"
)

// TestZPopMinWindow drains a sorted set with ZPOPMIN, mostly single pops
// (served from windows, zpopwindow.go), in pipelines mixed in a seeded
// random order with the writes that must make a window step aside: ZADD
// of new members and new scores (some below the window's last entry, some
// above), ZINCRBY, ZREM, ZPOPMAX and ZPOPMIN with a count. Every reply is
// checked against a model in Redis' order, and the test counts the pops
// served with a window in place, so that it fails if windows are never
// used.
func TestZPopMinWindow(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	rng := newRand(7)
	model := map[string]float64{}
	sorted := func() []redis.Z {
		var zs []redis.Z
		for m, sc := range model {
			zs = append(zs, redis.Z{Member: m, Score: sc})
		}
		slices.SortFunc(zs, func(a, b redis.Z) int {
			return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member.(string), b.Member.(string)))
		})
		return zs
	}
	const size = 1500
	var zs []redis.Z
	for i := range size {
		m := fmt.Sprintf("m%05d", i)
		model[m] = float64(rng.IntN(1000))
		zs = append(zs, redis.Z{Member: m, Score: model[m]})
	}
	if err := c.ZAdd(ctx, "z", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	// member picks a member of the model, or a new one.
	next := size
	member := func() string {
		for m := range model {
			if rng.IntN(3) > 0 {
				return m
			}
		}
		next++
		return fmt.Sprintf("m%05d", next)
	}
	windowed := 0
	for round := 0; len(model) > 0; round++ {
		// Each op queues a command and returns the check of its reply
		// against the model, run after the pipeline in order.
		pipe := c.Pipeline()
		var checks []func()
		for range 16 {
			switch r := rng.IntN(20); {
			case r < 14:
				cmd := pipe.ZPopMin(ctx, "z")
				checks = append(checks, func() {
					want := sorted()[:min(1, len(model))]
					if got := cmd.Val(); !slices.Equal(got, want) {
						t.Fatalf("round %d: ZPOPMIN = %v, want %v", round, got, want)
					}
					if len(want) > 0 {
						delete(model, want[0].Member.(string))
					}
				})
			case r < 16:
				m, sc := member(), float64(rng.IntN(1000))
				pipe.ZAdd(ctx, "z", redis.Z{Member: m, Score: sc})
				checks = append(checks, func() { model[m] = sc })
			case r < 17:
				m, by := member(), float64(rng.IntN(200)-100)
				cmd := pipe.ZIncrBy(ctx, "z", by, m)
				checks = append(checks, func() {
					model[m] += by
					if cmd.Val() != model[m] {
						t.Fatalf("round %d: ZINCRBY %s = %v, want %v", round, m, cmd.Val(), model[m])
					}
				})
			case r < 18:
				m := member()
				cmd := pipe.ZRem(ctx, "z", m)
				checks = append(checks, func() {
					_, in := model[m]
					if want := map[bool]int64{true: 1}[in]; cmd.Val() != want {
						t.Fatalf("round %d: ZREM %s = %d, want %d", round, m, cmd.Val(), want)
					}
					delete(model, m)
				})
			default:
				max, n := r == 18, int64(1+rng.IntN(3))
				var cmd *redis.ZSliceCmd
				if max {
					cmd = pipe.ZPopMax(ctx, "z", n)
				} else {
					cmd = pipe.ZPopMin(ctx, "z", n)
				}
				checks = append(checks, func() {
					all := sorted()
					if max {
						slices.Reverse(all)
					}
					want := all[:min(int(n), len(all))]
					if got := cmd.Val(); !slices.Equal(got, want) {
						t.Fatalf("round %d: ZPOP max %v count %d = %v, want %v", round, max, n, got, want)
					}
					for _, z := range want {
						delete(model, z.Member.(string))
					}
				})
			}
		}
		m, ok, err := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("z"), typeZSet)
		if err != nil {
			t.Fatal(err)
		}
		if ok && s.ks.zpops.get(elemsKey(nil, []byte("z"), m)) != nil {
			windowed++
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		for _, check := range checks {
			check()
		}
		all, err := c.ZRangeWithScores(ctx, "z", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := sorted(); !slices.Equal(all, want) {
			t.Fatalf("round %d: ZRANGE 0 -1 has %d members, the model %d", round, len(all), len(want))
		}
	}
	if windowed < 10 {
		t.Fatalf("a window was in place before only %d pipelines", windowed)
	}
	t.Logf("a window was in place before %d pipelines; %d members added", windowed, next-size)
}

// TestZPopMinWindowFailedCommit pops from a window in a write that fails
// (the WAL refuses it), then resumes the engine: the next ZPOPMIN must
// pop the member the failed one did not. A window that advanced in memory
// with the failed pop would skip it.
func TestZPopMinWindowFailedCommit(t *testing.T) {
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpWrite, errorfs.OpSync}, ".log")
	s := startServer(t, func(c *Config) { c.FS = errorfs.Wrap(vfs.Default, toggle) })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	var zs []redis.Z
	for i := range 100 {
		zs = append(zs, redis.Z{Member: fmt.Sprintf("m%03d", i), Score: float64(i)})
	}
	if err := c.ZAdd(ctx, "z", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	pop := func(want string) {
		t.Helper()
		got, err := c.ZPopMin(ctx, "z").Result()
		if err != nil || len(got) != 1 || got[0].Member != want {
			t.Fatalf("ZPOPMIN = %v, %v; want %s", got, err, want)
		}
	}
	pop("m000") // walks, and reads a window
	pop("m001") // from the window
	if m, _, err := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("z"), typeZSet); err != nil || s.ks.zpops.get(elemsKey(nil, []byte("z"), m)) == nil {
		t.Fatalf("no window after two pops (%v)", err)
	}
	toggle.Enable()
	if err := c.ZPopMin(ctx, "z").Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Fatalf("ZPOPMIN on a failing WAL: %v, want MISCONF", err)
	}
	toggle.Disable()
	if err := c.Do(ctx, "LSMGO.RESUME").Err(); err != nil {
		t.Fatalf("LSMGO.RESUME: %v", err)
	}
	pop("m002")
	pop("m003")
	if n := c.ZCard(ctx, "z").Val(); n != 96 {
		t.Fatalf("ZCARD = %d, want 96", n)
	}
}

// TestPopMarkEncoding writes pop marks with and without a window's ahead
// and reads them back; it reads a mark in the encoding from before
// windows; and it reads a mark with ahead as a server from before windows
// did (uvarint len(low), low, high = the rest), which must find a high
// bound above every entry the index can hold: no bound.
func TestPopMarkEncoding(t *testing.T) {
	s := startServer(t, nil)
	ks := &s.ks
	m := collMeta{version: 7}
	userKey := []byte("z")
	low := append(encodeScore(nil, -2.5), "m\x00"...)
	high := append(encodeScore(nil, math.Inf(1)), "top"...)
	ahead := append(append([]byte("12345678"), encodeScore(nil, 3)...), "n"...)
	write := func(mark popMark) []byte {
		b := ks.newBatch()
		var buf []byte
		ks.putPopMark(b, &buf, userKey, m, mark)
		if err := ks.db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		v, err := ks.db.Get(zMarkKey(nil, userKey, m))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	read := func() popMark {
		mark, err := ks.popMark(s.db, userKey, m)
		if err != nil {
			t.Fatal(err)
		}
		return mark
	}
	for _, tc := range []struct{ in, want popMark }{
		{popMark{low: low}, popMark{low: low}},
		{popMark{high: high}, popMark{high: high}},
		{popMark{low: low, high: high}, popMark{low: low, high: high}},
		{popMark{low: low, ahead: ahead}, popMark{low: low, ahead: ahead}},
		// A high bound leaves no room for ahead.
		{popMark{low: low, high: high, ahead: ahead}, popMark{low: low, high: high}},
	} {
		v := write(tc.in)
		got := read()
		if !bytes.Equal(got.low, tc.want.low) || !bytes.Equal(got.high, tc.want.high) || !bytes.Equal(got.ahead, tc.want.ahead) {
			t.Errorf("mark %+v written as %x reads as %+v, want %+v", tc.in, v, got, tc.want)
		}
		if tc.want.ahead == nil {
			continue
		}
		// A server from before windows reads the rest after low as high.
		n, w := binary.Uvarint(v)
		oldHigh := v[w+int(n):]
		top := append(encodeScore(nil, math.Inf(1)), bytes.Repeat([]byte{0xff}, 64)...)
		if bytes.Compare(oldHigh, top) <= 0 {
			t.Errorf("a server from before windows reads %x as high %x, not above every entry", v, oldHigh)
		}
	}
	// The encoding from before windows: uvarint len(low), low, high.
	old := append(binary.AppendUvarint(nil, uint64(len(low))), low...)
	old = append(old, high...)
	b := ks.newBatch()
	b.Set(zMarkKey(nil, userKey, m), old)
	if err := ks.db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	if got := read(); !bytes.Equal(got.low, low) || !bytes.Equal(got.high, high) || got.ahead != nil {
		t.Errorf("a mark from before windows reads as %+v", got)
	}
}

// TestZPopMinWindowReplicated holds a ZPOPMIN window on a replica, as a
// demoted primary does, while its primary adds an entry below the
// window's end: applying the primary's batch must drop the window, and
// so must a promotion, since a primary of an older binary writes the set
// without moving the window's ahead out of the pop mark.
func TestZPopMinWindowReplicated(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	var zs []redis.Z
	for i := range 100 {
		zs = append(zs, redis.Z{Member: fmt.Sprintf("m%03d", i), Score: float64(i)})
	}
	if err := pc.ZAdd(ctx, "z", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := pc.ZPopMin(ctx, "z").Err(); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := primary.ks.getColl(primary.ks.latest(), &keyBuf{}, []byte("z"), typeZSet)
	prefix := elemsKey(nil, []byte("z"), m)
	win := primary.ks.zpops.get(prefix)
	if err != nil || win == nil {
		t.Fatalf("no window after two pops (%v)", err)
	}
	dir := filepath.Join(t.TempDir(), "replica")
	if err := primary.db.Checkpoint(dir); err != nil {
		t.Fatal(err)
	}
	replica := startServer(t, func(c *Config) {
		c.Dir = dir
		c.ReplicaOf = strings.Replace(primary.Addr().String(), ":", " ", 1)
	})
	waitReplicated(t, primary, replica)
	replica.ks.zpops.put(prefix, win)
	if err := pc.ZAdd(ctx, "z", redis.Z{Member: "low", Score: -1}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replicated ZADD to drop the window", func() bool { return replica.ks.zpops.get(prefix) == nil })

	replica.ks.zpops.put(prefix, win)
	rc := newClient(t, replica, 2, nil)
	if _, msg := do(ctx, rc, "replicaof", "no", "one"); msg != "" {
		t.Fatal(msg)
	}
	if replica.ks.zpops.get(prefix) != nil {
		t.Fatal("the window outlived the promotion")
	}
	if got, err := rc.ZPopMin(ctx, "z").Result(); err != nil || len(got) != 1 || got[0].Member != "low" {
		t.Fatalf("ZPOPMIN on the promoted replica = %v, %v; want low", got, err)
	}
}

// TestZPopMinWindowBigMember pops next to members bigger than a window's
// byte budget: a window ends before such a member, and one would start
// with it makes no window, so that no member of any size goes into the
// pop mark's ahead (a huge one would pass the engine's MaxEntrySize).
// Pops go on in order past it.
func TestZPopMinWindowBigMember(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	big := "d" + strings.Repeat("x", windowBytes)
	order := []string{"a", "b", "c", big, "e", "f"}
	var zs []redis.Z
	for i, m := range order {
		zs = append(zs, redis.Z{Member: m, Score: float64(i)})
	}
	if err := c.ZAdd(ctx, "z", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	window := func() *zsetWindow {
		m, _, err := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("z"), typeZSet)
		if err != nil {
			t.Fatal(err)
		}
		return s.ks.zpops.get(elemsKey(nil, []byte("z"), m))
	}
	for i, want := range order {
		got, err := c.ZPopMin(ctx, "z").Result()
		if err != nil || len(got) != 1 || got[0].Member != want {
			t.Fatalf("pop %d: ZPOPMIN = %v, %v; want %.8s…", i, got, err, want)
		}
		w := window()
		entries := -1 // no window
		if w != nil {
			entries = len(w.items)
		}
		switch {
		case i == 0 && entries != 2:
			t.Fatalf("after a: window of %d entries, want b and c only", entries)
		case i == 2 && w != nil:
			t.Fatalf("after c: a window starting with the %d-byte member", len(big))
		case w != nil && len(w.ahead) > aheadName+scoreLen+windowBytes:
			t.Fatalf("pop %d: ahead of %d bytes", i, len(w.ahead))
		}
	}
}
