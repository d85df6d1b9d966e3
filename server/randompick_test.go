package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRandomPicksBySeeking checks the picks that SRANDMEMBER, SPOP and
// HRANDFIELD make by seeking (keyspace.randomElem) rather than by a pass:
// every pick is an element of the current collection, never of a deleted
// one at the same key; over members that differ in their last digits the
// picks are uniform (a chi-square far below what any bias gives); picks
// with a positive count are distinct, and paired with their own values.
func TestRandomPicksBySeeking(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	// A deleted set at the same key leaves elements under an old version.
	c.SAdd(ctx, "s", "old-1", "old-2", "zzz")
	c.Del(ctx, "s")
	// Names whose last four digits run through every value, as
	// redis-benchmark's and most generated ids do: seeking picks them
	// uniformly (doc/server.md says what uneven names get).
	const n = 10000
	members := map[string]int{}
	args := []any{}
	for i := range n {
		m := fmt.Sprintf("m:%06d", i)
		members[m] = 0
		args = append(args, m)
	}
	if err := c.SAdd(ctx, "s", args...).Err(); err != nil {
		t.Fatal(err)
	}
	const draws = 10 * n
	for done := 0; done < draws; done += 1000 {
		pipe := c.Pipeline()
		cmds := make([]*redis.StringCmd, 1000)
		for i := range cmds {
			cmds[i] = pipe.SRandMember(ctx, "s")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range cmds {
			m := cmd.Val()
			if _, ok := members[m]; !ok {
				t.Fatalf("SRANDMEMBER picked %q, not a member", m)
			}
			members[m]++
		}
	}
	chi2 := 0.0
	for _, got := range members {
		d := float64(got) - draws/n
		chi2 += d * d / (draws / n)
	}
	// Uniform picks give about n (standard deviation about 140); picks
	// that favour some members by even 2× give several times more.
	if chi2 > 1.5*n {
		t.Errorf("chi-square of %d picks over %d members = %.0f, want about %d", draws, n, chi2, n)
	}

	// Sparse random names among many: picks with a positive count are
	// distinct and come with their own values.
	rng := rand.New(rand.NewPCG(7, 8))
	sparse := map[string]int{}
	for len(sparse) < 100 { // with the pads below: more than seekMinSize
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		sparse[string(b)] = 0
		c.HSet(ctx, "h", string(b), "v"+string(b))
	}
	pad := make([]any, 0, 2*100*seekPicks)
	for i := range 100 * seekPicks {
		pad = append(pad, fmt.Sprintf("pad%d", i), "p")
	}
	c.HSet(ctx, "h", pad...)
	for range 200 {
		pairs, err := c.HRandFieldWithValues(ctx, "h", 50).Result()
		if err != nil || len(pairs) != 50 {
			t.Fatalf("HRANDFIELD h 50 WITHVALUES = %d pairs, %v", len(pairs), err)
		}
		seen := map[string]bool{}
		for _, p := range pairs {
			if seen[p.Key] {
				t.Fatalf("HRANDFIELD with a positive count repeated %q", p.Key)
			}
			seen[p.Key] = true
			if _, ok := sparse[p.Key]; ok {
				sparse[p.Key]++
			}
			if want := "v" + p.Key; p.Value != want && p.Value != "p" {
				t.Fatalf("HRANDFIELD paired %q with %q", p.Key, p.Value)
			}
		}
	}
	hits := 0
	for _, n := range sparse {
		hits += n
	}
	t.Logf("chi-square %.0f over %d members; sparse names: %d picks of 10,000 (uniform: about 150)", chi2, n, hits)
}
