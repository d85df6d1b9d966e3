package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSPopDrainsWithoutWalkingDeletions drains a set with SPOP (single
// and with a count) and SREM in a seeded random mix, checking every reply
// against a model, and after each round checks that a walk of the set
// passes over few deletions for its size: SPOP moves a set whose walks
// are mostly deletions to a fresh version (walkCost.mostlyDead), so the
// pops do not slow down as the set drains.
func TestSPopDrainsWithoutWalkingDeletions(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	rng := newRand(20)
	const n = 4000
	model := map[string]bool{}
	args := []any{}
	for range n {
		m := fmt.Sprintf("m:%06d", rng.IntN(1_000_000))
		model[m] = true
		args = append(args, m)
	}
	if err := c.SAdd(ctx, "s", args...).Err(); err != nil {
		t.Fatal(err)
	}
	c.Expire(ctx, "s", 3600_000_000_000) // a fresh version keeps the expiry
	rounds := 0
	for len(model) > 0 {
		rounds++
		pipe := c.Pipeline()
		var pops []*redis.StringCmd
		var counted []*redis.StringSliceCmd
		var rems []*redis.IntCmd
		var remmed []string
		for range 50 {
			switch r := rng.IntN(10); {
			case r < 7:
				pops = append(pops, pipe.SPop(ctx, "s"))
			case r < 9:
				counted = append(counted, pipe.SPopN(ctx, "s", int64(1+rng.IntN(5))))
			default:
				m := fmt.Sprintf("m:%06d", rng.IntN(1_000_000))
				for k := range model { // usually a member
					if rng.IntN(4) > 0 {
						m = k
					}
					break
				}
				remmed = append(remmed, m)
				rems = append(rems, pipe.SRem(ctx, "s", m))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		take := func(m string) {
			if !model[m] {
				t.Fatalf("round %d: SPOP returned %q, not a member", rounds, m)
			}
			delete(model, m)
		}
		// Replies are checked after the pipeline: the model only needs
		// each popped member to be a member exactly once.
		for _, p := range pops {
			if p.Err() == redis.Nil {
				continue
			}
			take(p.Val())
		}
		for _, p := range counted {
			for _, m := range p.Val() {
				take(m)
			}
		}
		for i, r := range rems {
			if r.Val() == 1 {
				take(remmed[i])
			}
		}
		if got := c.SCard(ctx, "s").Val(); got != int64(len(model)) {
			t.Fatalf("round %d: SCARD = %d, want %d", rounds, got, len(model))
		}
		m, ok, err := s.ks.getColl(s.ks.latest(), &keyBuf{}, []byte("s"), typeSet)
		if err != nil || ok != (len(model) > 0) {
			t.Fatalf("round %d: metadata: ok %v, err %v", rounds, ok, err)
		}
		if !ok {
			break
		}
		if ttl := c.TTL(ctx, "s").Val(); ttl <= 0 {
			t.Fatalf("round %d: TTL %v: the expiry was lost", rounds, ttl)
		}
		dead, err := s.ks.walkElems(s.ks.latest(), []byte("s"), m, nil, nil, func(_, _ []byte) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		if dead > 8*m.count+256 {
			t.Fatalf("round %d: a walk of the %d members passed over %d deletions", rounds, m.count, dead)
		}
	}
	if got := c.Exists(ctx, "s").Val(); got != 0 {
		t.Fatalf("the drained set still exists")
	}
}
