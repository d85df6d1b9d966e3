package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestPointReadVersionRace races point reads of collections against a
// writer that deletes and recreates them, generation after generation,
// sometimes as two commands and sometimes replaced in one transaction,
// and that sometimes overwrites the hash and sorted set in place instead.
// Generation g writes g into every element (a hash's values, a sorted
// set's scores, a list's items) and, in a set, the members a and b when g
// is even, c and d when it is odd. So every reply must be explainable by
// one generation: a multi-element reply all of one, and, on one
// connection, never an older generation than one seen before.
func TestPointReadVersionRace(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	gens := 1000
	if testing.Short() {
		gens = 400
	}
	w := newClient(t, s, 2, nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		rng := newRand(1)
		for g := 1; g <= gens; g++ {
			v := strconv.Itoa(g)
			members := []any{"a", "b"}
			if g%2 == 1 {
				members = []any{"c", "d"}
			}
			inPlace := rng.IntN(3) == 0
			write := func(p redis.Pipeliner) {
				if !inPlace {
					p.Del(ctx, "h", "z", "s", "l")
				} else {
					p.Del(ctx, "s", "l")
				}
				p.HSet(ctx, "h", "f0", v, "f1", v, "f2", v, "f3", v)
				p.ZAdd(ctx, "z", redis.Z{Score: float64(g), Member: "m0"}, redis.Z{Score: float64(g), Member: "m1"},
					redis.Z{Score: float64(g), Member: "m2"})
				p.SAdd(ctx, "s", members...)
				p.RPush(ctx, "l", v, v, v)
			}
			var err error
			if rng.IntN(2) == 0 {
				_, err = w.TxPipelined(ctx, func(p redis.Pipeliner) error { write(p); return nil })
			} else {
				_, err = w.Pipelined(ctx, func(p redis.Pipeliner) error { write(p); return nil })
			}
			if err != nil {
				t.Errorf("generation %d: %v", g, err)
				return
			}
		}
	}()
	for r := range 2 {
		c := newClient(t, s, 2, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRand(int64(100 + r))
			last := map[string]int{} // per key, the newest generation seen
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						t.Logf("reader %d: %d reads", r, reads)
						return
					}
				default:
				}
				key, gen, err := pointReadOnce(ctx, c, rng.IntN(8))
				if err != nil {
					t.Error(err)
					return
				}
				if gen != 0 && gen < last[key] {
					t.Errorf("read %d of %s: generation %d after %d", reads, key, gen, last[key])
					return
				}
				last[key] = max(last[key], gen)
			}
		}()
	}
	wg.Wait()
}

// pointReadOnce runs point read number op on the collections that
// TestPointReadVersionRace writes, and returns the key it read and the
// one generation that explains the reply (0 for none: the key absent), or
// an error naming a reply that no single generation explains.
func pointReadOnce(ctx context.Context, c *redis.Client, op int) (key string, gen int, err error) {
	// same checks that every value is one generation, and returns it.
	same := func(cmd string, vals []string) (int, error) {
		gen := 0
		for i, v := range vals {
			g := 0
			if v != "" {
				if g, err = strconv.Atoi(v); err != nil {
					return 0, err
				}
			}
			if i > 0 && g != gen {
				return 0, fmt.Errorf("%s replied with generations %q", cmd, vals)
			}
			gen = g
		}
		return gen, nil
	}
	str := func(v any) string {
		switch v := v.(type) {
		case nil:
			return ""
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return fmt.Sprint(v)
	}
	var vals []string
	var cmd string
	switch op {
	case 0, 1:
		key, cmd = "h", "HGET"
		v, err := c.HGet(ctx, key, fmt.Sprintf("f%d", op)).Result()
		if err != nil && err != redis.Nil {
			return key, 0, err
		}
		vals = []string{v}
	case 2:
		key, cmd = "h", "HMGET"
		vs, err := c.HMGet(ctx, key, "f0", "f1", "f2", "f3").Result()
		if err != nil {
			return key, 0, err
		}
		for _, v := range vs {
			vals = append(vals, str(v))
		}
	case 3:
		key, cmd = "z", "ZSCORE"
		f, err := c.ZScore(ctx, key, "m1").Result()
		switch {
		case err == redis.Nil:
			vals = []string{""}
		case err != nil:
			return key, 0, err
		default:
			vals = []string{str(f)}
		}
	case 4:
		key, cmd = "z", "ZMSCORE"
		vs, err := c.Do(ctx, "ZMSCORE", key, "m0", "m1", "m2").Slice()
		if err != nil {
			return key, 0, err
		}
		for _, v := range vs {
			vals = append(vals, str(v))
		}
	case 5:
		key, cmd = "l", "LINDEX"
		v, err := c.LIndex(ctx, key, 1).Result()
		if err != nil && err != redis.Nil {
			return key, 0, err
		}
		vals = []string{v}
	case 6:
		key = "s"
		in, err := c.SMIsMember(ctx, key, "a", "b", "c", "d").Result()
		if err != nil {
			return key, 0, err
		}
		if in[0] != in[1] || in[2] != in[3] || (in[0] && in[2]) {
			return key, 0, fmt.Errorf("SMISMEMBER a b c d replied %v: members of two generations", in)
		}
		return key, 0, nil // parity only: no generation to order
	default:
		key = "s"
		_, err := c.SIsMember(ctx, key, "a").Result()
		return key, 0, err
	}
	gen, err = same(cmd, vals)
	return key, gen, err
}

// TestPointReadReclaimedVersion replaces each collection, in one step,
// between a point read's metadata read and its element read, and has the
// compaction filter reclaim the replaced version's elements before the
// element read: the reply must still be that of one state, the old
// collection's or the new one's, never the miss of an element that both
// hold.
// setBit makes a test case's key a string with bit at set: far out, a
// fragmented one.
func setBit(at int) func(string) []any {
	return func(string) []any { return []any{"SETBIT", "k", at, 1} }
}

func TestPointReadReclaimedVersion(t *testing.T) {
	// The hook runs another client's commands inside a command, which a
	// server with one event loop for both clients cannot serve.
	s := startServer(t, func(c *Config) { c.EventLoop = false })
	ctx := context.Background()
	rd, wr := newClient(t, s, 2, nil), newClient(t, s, 2, nil)
	t.Cleanup(func() { testHookMetaRead.Store(nil) })
	hset := func(v string) []any { return []any{"HSET", "k", "f", v} }
	cases := []struct {
		create   func(v string) []any // writes generation v of k
		replace  []any                // replaces it in the test's second step; nil: create("22")
		read     []any
		old, new string // the replies of the two states
	}{
		{hset, nil, []any{"HGET", "k", "f"}, "1", "22"},
		{hset, nil, []any{"HMGET", "k", "f", "f"}, "[1 1]", "[22 22]"},
		{hset, nil, []any{"HEXISTS", "k", "f"}, "1", "1"},
		{hset, nil, []any{"HSTRLEN", "k", "f"}, "1", "2"},
		{hset, []any{"SET", "k", "x"}, []any{"HGET", "k", "f"}, "1", errWrongType.Error()},
		{func(string) []any { return []any{"SADD", "k", "m"} }, nil, []any{"SISMEMBER", "k", "m"}, "1", "1"},
		{func(string) []any { return []any{"SADD", "k", "m"} }, nil, []any{"SMISMEMBER", "k", "m", "m"}, "[1 1]", "[1 1]"},
		{func(v string) []any { return []any{"ZADD", "k", v, "m"} }, nil, []any{"ZSCORE", "k", "m"}, "1", "22"},
		{func(v string) []any { return []any{"ZADD", "k", v, "m"} }, nil, []any{"ZMSCORE", "k", "m"}, "[1]", "[22]"},
		{func(v string) []any { return []any{"RPUSH", "k", v, v} }, nil, []any{"LINDEX", "k", "1"}, "1", "22"},
		// Fragmented strings: a bit set far out makes a sparse one.
		{setBit(1 << 20), []any{"SETBIT", "k", 1 << 20, 1}, []any{"GETBIT", "k", 1 << 20}, "1", "1"},
		{setBit(1 << 20), []any{"SETBIT", "k", 1 << 20, 1}, []any{"BITCOUNT", "k"}, "1", "1"},
		{setBit(1 << 20), []any{"SETBIT", "k", 1 << 20, 1}, []any{"BITPOS", "k", 1}, "1048576", "1048576"},
		{setBit(1 << 20), []any{"SETBIT", "k", 1<<20 + 1, 1}, []any{"GETRANGE", "k", 131072, 131072}, "\x80", "@"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.read...), func(t *testing.T) {
			if err := wr.Del(ctx, "k").Err(); err != nil {
				t.Fatal(err)
			}
			if err := wr.Do(ctx, tc.create("1")...).Err(); err != nil {
				t.Fatal(err)
			}
			replace := tc.replace
			if replace == nil {
				replace = tc.create("22")
			}
			var fired atomic.Bool
			hook := func() {
				if fired.Swap(true) {
					return
				}
				if _, err := wr.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Del(ctx, "k")
					p.Do(ctx, replace...)
					return nil
				}); err != nil {
					t.Error(err)
				}
				if err := s.ks.db.Compact(nil, nil); err != nil {
					t.Error(err)
				}
			}
			testHookMetaRead.Store(&hook)
			defer testHookMetaRead.Store(nil)
			v, err := rd.Do(ctx, tc.read...).Result()
			got := fmt.Sprint(v)
			if err != nil {
				got = err.Error()
			}
			if !fired.Load() {
				t.Fatal("the hook did not run")
			}
			if got != tc.old && got != tc.new {
				t.Errorf("%v replied %q, want %q or %q", tc.read, got, tc.old, tc.new)
			}
		})
	}
}
