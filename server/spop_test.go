package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
	"github.com/redis/go-redis/v9"
)

// spopSet fills key with n distinct members "u" + 7 digits drawn by a
// seeded generator and returns them in byte order.
func spopSet(t *testing.T, c *redis.Client, key string, n int, seed int64) []string {
	t.Helper()
	rng := newRand(seed)
	seen := map[string]bool{}
	var members []string
	var args []any
	for len(members) < n {
		m := fmt.Sprintf("u%07d", rng.IntN(10_000_000))
		if !seen[m] {
			seen[m] = true
			members = append(members, m)
			args = append(args, m)
		}
	}
	if err := c.SAdd(context.Background(), key, args...).Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(members)
	return members
}

// pipelinedSPops pops n members of key one SPOP at a time, in pipelines
// of 16, and returns them in pop order.
func pipelinedSPops(t *testing.T, c *redis.Client, key string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var popped []string
	for len(popped) < n {
		pipe := c.Pipeline()
		var cmds []*redis.StringCmd
		for range min(16, n-len(popped)) {
			cmds = append(cmds, pipe.SPop(ctx, key))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range cmds {
			popped = append(popped, cmd.Val())
		}
	}
	return popped
}

// TestSPopSpread pops 2,000 of 5,000 members one at a time and checks
// that the pops are spread like independent draws over the byte order:
// no member twice or from outside the set; successive pops within 16
// places of each other in the byte order no more often than a bound
// that independent draws exceed with probability under 1e-15 (they are
// expected about 16 times), which pops from windows of neighbouring
// members (one random pick, then its neighbours) exceed hundreds of
// times; and the pops' deciles of the byte order even by a chi-square
// test (9 degrees of freedom, bound 50: p < 1e-7 for a uniform pick).
// The set's members are drawn by a seeded generator; the pops are the
// server's, not seeded, hence the wide bounds.
func TestSPopSpread(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	const size, pops = 5000, 2000
	members := spopSet(t, c, "s", size, 11)
	rank := make(map[string]int, size)
	for i, m := range members {
		rank[m] = i
	}
	popped := pipelinedSPops(t, c, "s", pops)
	seen := map[string]bool{}
	near, deciles := 0, make([]int, 10)
	for i, m := range popped {
		r, ok := rank[m]
		if !ok || seen[m] {
			t.Fatalf("pop %d: %q is not a member left in the set", i, m)
		}
		seen[m] = true
		deciles[r*10/size]++
		if i > 0 {
			if d := r - rank[popped[i-1]]; d >= -16 && d <= 16 {
				near++
			}
		}
	}
	if near > 60 {
		t.Errorf("%d of %d successive pops are within 16 places of each other in byte order; independent draws give about 16", near, pops-1)
	}
	chi2 := 0.0
	for _, n := range deciles {
		d := float64(n) - pops/10
		chi2 += d * d / (pops / 10)
	}
	if chi2 > 50 {
		t.Errorf("pops by decile of the byte order %v: chi-square %.1f over 9 degrees of freedom", deciles, chi2)
	}
	if n := c.SCard(context.Background(), "s").Val(); n != size-pops {
		t.Errorf("SCARD = %d after %d pops of %d", n, pops, size)
	}
	t.Logf("%d successive pops within 16 places; deciles %v, chi-square %.1f", near, deciles, chi2)
}

// TestSPopNodes drains a set with SPOP, one member per command, in
// pipelines mixed in a seeded order with the writes that must make SPOP
// forget what it learned of the set (picknodes.go): SADD of new and
// existing members, SREM, SMOVE out and in, and SPOP with a count. Every
// reply is checked against a model, and the test checks that pops did
// use the memo, so that it fails if it is never kept.
func TestSPopNodes(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	rng := newRand(5)
	model := map[string]bool{}
	for _, m := range spopSet(t, c, "s", 3000, 13) {
		model[m] = true
	}
	member := func() string { // one in the model, or a new one
		if rng.IntN(4) == 0 {
			return fmt.Sprintf("v%07d", rng.IntN(10_000_000))
		}
		for m := range model {
			return m
		}
		return "none"
	}
	pop := func(got string) {
		if !model[got] {
			t.Fatalf("SPOP returned %q, which the set does not hold", got)
		}
		delete(model, got)
	}
	memoUsed := 0
	for round := 0; len(model) > 0; round++ {
		pipe := c.Pipeline()
		var checks []func()
		for range 16 {
			switch r := rng.IntN(24); {
			case r < 19:
				cmd := pipe.SPop(ctx, "s")
				checks = append(checks, func() {
					if len(model) == 0 {
						if cmd.Err() != redis.Nil {
							t.Fatalf("round %d: SPOP of a missing set = %q, %v", round, cmd.Val(), cmd.Err())
						}
						return
					}
					pop(cmd.Val())
				})
			case r < 20:
				m := member()
				cmd := pipe.SAdd(ctx, "s", m)
				checks = append(checks, func() {
					if want := map[bool]int64{false: 1}[model[m]]; cmd.Val() != want {
						t.Fatalf("round %d: SADD %s = %d, want %d", round, m, cmd.Val(), want)
					}
					model[m] = true
				})
			case r < 21:
				m := member()
				cmd := pipe.SRem(ctx, "s", m)
				checks = append(checks, func() {
					if want := map[bool]int64{true: 1}[model[m]]; cmd.Val() != want {
						t.Fatalf("round %d: SREM %s = %d, want %d", round, m, cmd.Val(), want)
					}
					delete(model, m)
				})
			case r < 22:
				m := member()
				pipe.SMove(ctx, "s", "t", m)
				checks = append(checks, func() { delete(model, m) })
			case r < 23:
				m := fmt.Sprintf("w%07d", rng.IntN(10_000_000))
				pipe.SAdd(ctx, "t", m)
				pipe.SMove(ctx, "t", "s", m)
				checks = append(checks, func() { model[m] = true })
			default:
				cmd := pipe.SPopN(ctx, "s", int64(1+rng.IntN(3)))
				checks = append(checks, func() {
					for _, m := range cmd.Val() {
						pop(m)
					}
				})
			}
		}
		m, ok, err := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("s"), typeSet)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if p := s.ks.spops.get(elemsKey(nil, []byte("s"), m)); p != nil && len(p.nodes) > 0 {
				memoUsed++
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		for _, check := range checks {
			check()
		}
		all, err := c.SMembers(ctx, "s").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(model) {
			t.Fatalf("round %d: SMEMBERS has %d members, the model %d", round, len(all), len(model))
		}
		for _, m := range all {
			if !model[m] {
				t.Fatalf("round %d: SMEMBERS has %q, the model does not", round, m)
			}
		}
	}
	if memoUsed < 20 {
		t.Fatalf("SPOP's memo held nodes before only %d pipelines", memoUsed)
	}
	t.Logf("SPOP's memo held nodes before %d pipelines", memoUsed)
}

// TestSPopNodesLostBatch adds a member and pops in one batch that fails
// to commit (the WAL refuses it), through a pipeline, MULTI and a script.
// The count is back where the memo expects it, but the descent the pop
// made through the uncommitted view may have left a node bounded by the
// member that never came: a0000..a9 while a9 is no member. A stale node
// sends pops past its bound to the first b member, so the test counts the
// pops that take the lowest b member still in the set. Drawn uniformly,
// from at least 9800 members, that is 1 in 9800 per pop, and 5 hits in
// 200 pops have a chance below C(200,5)/9800^5 < 1e-10 (the server's
// draws cannot be seeded; the bound makes a false failure that unlikely).
func TestSPopNodesLostBatch(t *testing.T) {
	ctx := context.Background()
	addThenPop := func(p redis.Pipeliner) error {
		p.SAdd(ctx, "s", "a9")
		p.SPop(ctx, "s")
		return nil
	}
	for _, variant := range []struct {
		name string
		run  func(c *redis.Client) error
	}{
		{"pipeline", func(c *redis.Client) error {
			_, err := c.Pipelined(ctx, addThenPop)
			return err
		}},
		{"multi", func(c *redis.Client) error {
			_, err := c.TxPipelined(ctx, addThenPop)
			return err
		}},
		{"script", func(c *redis.Client) error {
			return c.Eval(ctx, "redis.call('sadd', KEYS[1], 'a9') return redis.call('spop', KEYS[1])", []string{"s"}).Err()
		}},
	} {
		t.Run(variant.name, func(t *testing.T) {
			toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpWrite, errorfs.OpSync}, ".log")
			s := startServer(t, func(c *Config) { c.FS = errorfs.Wrap(vfs.Default, toggle) })
			c := newClient(t, s, 2, nil)
			var args []any
			var bs []string // the b members in the set, in order
			for i := range 5000 {
				args = append(args, fmt.Sprintf("a%04d", i), fmt.Sprintf("b%04d", i))
				bs = append(bs, fmt.Sprintf("b%04d", i))
			}
			if err := c.SAdd(ctx, "s", args...).Err(); err != nil {
				t.Fatal(err)
			}
			// Each failed batch's SADD drops the memo the one before
			// left; its pop descends through "a" about every other time.
			stale := false
			for try := 0; try < 30 && !stale; try++ {
				toggle.Enable()
				err := variant.run(c)
				toggle.Disable()
				if err == nil {
					t.Fatal("the batch committed on a failing WAL")
				}
				if err := c.Do(ctx, "LSMGO.RESUME").Err(); err != nil {
					t.Fatal(err)
				}
				m, _, _ := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("s"), typeSet)
				p := s.ks.spops.get(elemsKey(nil, []byte("s"), m))
				if p != nil {
					for _, n := range p.nodes {
						stale = stale || string(n.lo) == "a9" || string(n.hi) == "a9"
					}
				}
			}
			t.Logf("a memo naming a9 left: %v", stale)
			if ok, err := c.SIsMember(ctx, "s", "a9").Result(); err != nil || ok {
				t.Fatalf("SISMEMBER a9 = %v, %v", ok, err)
			}
			const pops = 200
			hits := 0
			for range pops {
				got, err := c.SPop(ctx, "s").Result()
				if err != nil {
					t.Fatal(err)
				}
				if got == bs[0] {
					hits++
				}
				if i, ok := slices.BinarySearch(bs, got); ok {
					bs = slices.Delete(bs, i, i+1)
				}
			}
			if hits >= 5 {
				t.Errorf("%d of %d pops took the lowest b member left (uniform: < 5 but for a chance below 1e-10)", hits, pops)
			}
		})
	}
}
