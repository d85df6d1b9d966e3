package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPipelinedWritesShareOneCommit sends one pipeline of read-modify-
// write commands on three keys of three types: each reply counts the
// writes before it (each command read its key with the pending writes on
// top), and the whole pipeline cost the engine a few commits, not one per
// command.
func TestPipelinedWritesShareOneCommit(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	var in strings.Builder
	var want []string
	for i := range 40 {
		in.WriteString("LPUSH l x\r\nHINCRBY h f 2\r\n")
		fmt.Fprintf(&in, "ZADD z %d m%d\r\n", i, i%20)
		want = append(want, fmt.Sprintf(":%d\r\n", i+1), fmt.Sprintf(":%d\r\n", 2*(i+1)), fmt.Sprintf(":%d\r\n", 1-i/20))
	}
	in.WriteString("ZCARD z\r\n")
	want = append(want, ":20\r\n")
	before := s.db.Metrics().Commits.Batches
	r.send(in.String())
	for i, w := range want {
		eq(t, fmt.Sprintf("reply %d", i), r.reply(), w)
	}
	if n := s.db.Metrics().Commits.Batches - before; n > 3 {
		t.Errorf("a pipeline of 120 writes took %d commits", n)
	}
}

// TestPipelineLeavesNoWholeLock pipelines writes to a key whose stripe
// another holder has: the first write's stripe try fails after it took
// the whole-keyspace lock shared, and that lock must not outlive the
// pipeline, or the next script or FLUSHDB would wait for good.
func TestPipelineLeavesNoWholeLock(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	locks := s.ks.locks
	stripe := &locks.stripes[locks.stripe([]byte("k"))]
	stripe.Lock()
	r.send("SET k v\r\nSET k w\r\n")
	time.Sleep(100 * time.Millisecond) // the pipeline meets the held stripe
	stripe.Unlock()
	eq(t, "first reply", r.reply(), "+OK\r\n")
	eq(t, "second reply", r.reply(), "+OK\r\n")
	if !locks.whole.TryLock() {
		t.Fatal("the whole-keyspace lock is still held after the pipeline's replies")
	}
	locks.whole.Unlock()
}

// TestPipelinedWritesCrossing runs clients that pipeline INCRs of the same
// keys in opposite orders at once: a pipeline holds its keys' stripes
// until it commits, so the clients must not deadlock, and no increment may
// be lost.
func TestPipelinedWritesCrossing(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const clients, rounds, keys = 4, 200, 8
	var wg sync.WaitGroup
	for w := range clients {
		c := newClient(t, s, 2, nil)
		wg.Go(func() {
			for range rounds {
				p := c.Pipeline()
				for k := range keys {
					if w%2 == 1 {
						k = keys - 1 - k
					}
					p.Incr(ctx, fmt.Sprintf("n%d", k))
					p.HIncrBy(ctx, "h", fmt.Sprintf("f%d", k), 1)
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c := newClient(t, s, 2, nil)
	for k := range keys {
		if got, err := c.Get(ctx, fmt.Sprintf("n%d", k)).Int(); err != nil || got != clients*rounds {
			t.Errorf("n%d = %d (%v), want %d", k, got, err, clients*rounds)
		}
		if got, err := c.HGet(ctx, "h", fmt.Sprintf("f%d", k)).Int(); err != nil || got != clients*rounds {
			t.Errorf("h f%d = %d (%v), want %d", k, got, err, clients*rounds)
		}
	}
}
