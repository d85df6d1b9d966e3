package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// randomWriteArgs is a seeded random write of some type: strings, hashes,
// lists, sets, sorted sets, streams, bitmaps, HyperLogLogs, deletions,
// expiries and a script.
func randomWriteArgs(rng interface{ IntN(int) int }) []any {
	k := fmt.Sprintf("k%d", rng.IntN(30))
	v := strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(400))
	switch rng.IntN(14) {
	case 0:
		return []any{"set", "s:" + k, v}
	case 1:
		return []any{"append", "s:" + k, v}
	case 2:
		return []any{"hset", "h:" + k, fmt.Sprint("f", rng.IntN(8)), v}
	case 3:
		return []any{"rpush", "l:" + k, v, k}
	case 4:
		return []any{"lpop", "l:" + k}
	case 5:
		return []any{"sadd", "set:" + k, fmt.Sprint("m", rng.IntN(20))}
	case 6:
		return []any{"zadd", "z:" + k, rng.IntN(100), fmt.Sprint("m", rng.IntN(20))}
	case 7:
		return []any{"xadd", "x:" + k, "*", "f", v}
	case 8:
		return []any{"setbit", "b:" + k, rng.IntN(4096), rng.IntN(2)}
	case 9:
		return []any{"pfadd", "hll:" + k, fmt.Sprint("e", rng.IntN(1000))}
	case 10:
		return []any{"del", "s:" + k, "h:" + k, "l:" + k, "x:" + k}
	case 11:
		return []any{"pexpire", "h:" + k, 1_000_000 + rng.IntN(1000)}
	case 12:
		return []any{"eval", "redis.call('incrby', KEYS[1], ARGV[1]) return redis.call('set', KEYS[2], ARGV[1])", 2, "n:" + k, "e:" + k, rng.IntN(100)}
	default:
		return []any{"set", "t:" + k, v, "px", 1_000_000 + rng.IntN(1000)}
	}
}

// journaledWrite runs a random write in a transaction with INCR n and
// RPUSH journal n: a replica whose content is a prefix of the primary's
// history has a journal of exactly 1..n.
func journaledWrite(ctx context.Context, c *redis.Client, rng interface{ IntN(int) int }) error {
	args := randomWriteArgs(rng)
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, args...)
		p.Incr(ctx, "n")
		p.Eval(ctx, "return redis.call('rpush', KEYS[1], redis.call('get', KEYS[2]))", []string{"journal", "n"})
		return nil
	})
	if err == redis.Nil { // LPOP of an empty list
		return nil
	}
	return err
}

// fullContent is every key's type, DUMP (XRANGE for a stream) and
// absolute expiry: the whole content as Redis sees it. The engine's keys
// are not compared: elements of deleted collections stay there until a
// compaction drops them, and each side compacts on its own schedule.
func fullContent(t *testing.T, s *Server) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	defer c.Close()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		var v any
		if typ == "stream" {
			v, err = c.XRange(ctx, k, "-", "+").Result()
		} else {
			v, err = c.Dump(ctx, k).Result()
		}
		if err != nil {
			t.Fatalf("reading %s %s: %v", typ, k, err)
		}
		out[k] = fmt.Sprint(typ, v, c.PExpireTime(ctx, k).Val())
	}
	return out
}

// checkJournal checks that the replica's journal is exactly 1..n, read in
// one transaction; a replica swapping in a full copy refuses and is
// skipped.
func checkJournal(t *testing.T, ctx context.Context, rc *redis.Client) {
	var n *redis.StringCmd
	var journal *redis.StringSliceCmd
	if _, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Get(ctx, "n")
		journal = p.LRange(ctx, "journal", 0, -1)
		return nil
	}); err != nil && err != redis.Nil {
		return
	}
	got := journal.Val()
	for i, e := range got {
		if e != fmt.Sprint(i+1) {
			t.Fatalf("the replica's journal holds %s at %d: not a prefix of the primary's history", e, i)
		}
	}
	if want := n.Val(); want != "" && want != fmt.Sprint(len(got)) {
		t.Fatalf("the replica's n is %s, its journal %d long", want, len(got))
	}
}

// setRingLimit sizes s's in-memory replication ring, so that a test's
// replicas fall out of it after a few writes.
func setRingLimit(s *Server, limit int) {
	s.repl.backlog.mu.Lock()
	s.repl.backlog.limit = limit
	s.repl.backlog.mu.Unlock()
}

// TestReplicationThroughCutLink follows a primary through a proxy that
// cuts and delays the link, while seeded random writes of every type run:
// the replica starts empty (a full sync), resumes after short cuts, and
// takes a new full copy after a cut long enough for its position to leave
// the primary's (here small) backlog. Throughout, its journal shows a
// prefix of the primary's history; once caught up, every key's type,
// content and expiry equal the primary's.
func TestReplicationThroughCutLink(t *testing.T) {
	ctx := context.Background()
	// The ring alone, small, so that long cuts need full syncs.
	primary := startServer(t, func(c *Config) { c.ReplBacklogSize = 0 })
	setRingLimit(primary, 32<<10)
	pc := newClient(t, primary, 2, nil)
	rng := newRand(23)
	for range 200 {
		if err := journaledWrite(ctx, pc, rng); err != nil {
			t.Fatal(err)
		}
	}
	replica, rc, proxy := startReplicaBehindProxy(t, primary, func(o *redis.Options) { o.MaxRetries = 3 })
	caughtUp := func(what string) {
		t.Helper()
		waitFor(t, what, func() bool { return lastSeq(replica) == lastSeq(primary) })
		p, r := fullContent(t, primary), fullContent(t, replica)
		for k, v := range p {
			if r[k] != v {
				t.Fatalf("%s: key %q differs on the replica:\n%s\n%s", what, k, r[k], v)
			}
		}
		if len(r) != len(p) {
			t.Fatalf("%s: the replica holds %d keys, the primary %d", what, len(r), len(p))
		}
	}
	caughtUp("the first full sync")

	for round := range 4 {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				checkJournal(t, ctx, rc)
				time.Sleep(time.Millisecond)
			}
		})
		long := round%2 == 1
		proxy.Delay.Store(int64(time.Duration(rng.IntN(3)) * time.Millisecond))
		// A short cut comes near the end of the round's writes: what
		// follows it fits in the backlog.
		cutAt := 280
		if long {
			cutAt = 50
		}
		for i := range 300 {
			if i == cutAt {
				if !long {
					// Behind a delaying proxy on a loaded machine the
					// replica may lag by more than the backlog holds.
					waitFor(t, "the replica before a short cut", func() bool { return lastSeq(replica) == lastSeq(primary) })
				}
				proxy.Down.Store(long)
				proxy.Cut()
			}
			if i == 250 {
				proxy.Down.Store(false)
			}
			if err := journaledWrite(ctx, pc, rng); err != nil {
				t.Fatal(err)
			}
		}
		proxy.Delay.Store(0)
		close(stop)
		wg.Wait()
		caughtUp(fmt.Sprintf("round %d", round))
	}
	full, resumed := primary.repl.fullSyncs.Load(), primary.repl.resumes.Load()
	t.Logf("full syncs %d, resumes %d, cuts %d", full, resumed, proxy.Cuts.Load())
	if full < 2 || resumed < 2 {
		t.Fatalf("full syncs %d, resumes %d: want a full sync after each long cut and resumes after short ones", full, resumed)
	}
}
