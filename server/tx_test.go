package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTxReadsOwnWrites checks that a queued command sees the writes of
// those queued before it, for strings, hashes, sets and keyspace scans,
// while nothing is visible to others before EXEC.
func TestTxReadsOwnWrites(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "n", "5", 0)
		p.Incr(ctx, "n")
		p.Get(ctx, "n")
		p.HSet(ctx, "h", "f", "1", "g", "2")
		p.HIncrBy(ctx, "h", "f", 10)
		p.HGetAll(ctx, "h")
		p.SAdd(ctx, "s", "a", "b")
		p.SRem(ctx, "s", "a")
		p.SMembers(ctx, "s")
		p.Rename(ctx, "h", "h2")
		p.HGet(ctx, "h2", "f")
		p.Keys(ctx, "*")
		p.DBSize(ctx)
		p.Del(ctx, "s")
		p.Exists(ctx, "s")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%v %v %v %v %v %v %v", cmds[2].(*redis.StringCmd).Val(), cmds[5].(*redis.MapStringStringCmd).Val(),
		cmds[8].(*redis.StringSliceCmd).Val(), cmds[10].(*redis.StringCmd).Val(), len(cmds[11].(*redis.StringSliceCmd).Val()),
		cmds[12].(*redis.IntCmd).Val(), cmds[14].(*redis.IntCmd).Val())
	if want := "6 map[f:11 g:2] [b] 11 3 3 0"; got != want {
		t.Fatalf("replies inside EXEC: %s, want %s", got, want)
	}
	if v, _ := c.Get(ctx, "n").Result(); v != "6" {
		t.Fatalf("after EXEC n = %q", v)
	}
}

// TestTxRuntimeErrors checks that a command failing inside EXEC reports
// its error in EXEC's reply while the others still run.
func TestTxRuntimeErrors(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	r.send("SET s x\r\nMULTI\r\nINCR s\r\nSET t 1\r\nHSET s f v\r\nINCR t\r\nEXEC\r\n")
	var got string
	for range 7 {
		got += r.reply()
	}
	want := "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n" +
		"*4\r\n-ERR value is not an integer or out of range\r\n+OK\r\n" +
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:2\r\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestWatchSeesEveryChange checks that EXEC fails after another client
// changes a watched key in any way — SET, DEL, an element write, RENAME
// onto or away from it, a type change, FLUSHALL, FLUSHDB, expiry — and
// succeeds after changes of other keys and when nothing changed; in
// RESP3 the failed EXEC is a null.
func TestWatchSeesEveryChange(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	other := newClient(t, s, 2, nil)
	setup := func() {
		other.FlushAll(ctx)
		other.Set(ctx, "k", "1", 0)
		other.HSet(ctx, "h", "f", "1")
		other.Set(ctx, "src", "x", 0)
	}
	changes := map[string]func(){
		"set":         func() { other.Set(ctx, "k", "2", 0) },
		"same value":  func() { other.Set(ctx, "k", "1", 0) },
		"del":         func() { other.Del(ctx, "k") },
		"element":     func() { other.HSet(ctx, "h", "f", "2") },
		"new element": func() { other.HSet(ctx, "h", "g", "2") },
		"rename onto": func() { other.Rename(ctx, "src", "k") },
		"rename away": func() { other.Rename(ctx, "k", "elsewhere") },
		"type change": func() { other.Del(ctx, "k"); other.SAdd(ctx, "k", "m") },
		"flushall":    func() { other.FlushAll(ctx) },
		"flushdb":     func() { other.FlushDB(ctx) },
		"expire":      func() { other.Expire(ctx, "k", time.Hour) },
		"expiry": func() {
			other.PExpire(ctx, "k", time.Millisecond)
			for deadline := time.Now().Add(10 * time.Second); other.Exists(ctx, "k").Val() == 1; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("key did not expire")
				}
			}
		},
		"":              func() {},
		"other key":     func() { other.Set(ctx, "unrelated", "1", 0) },
		"absent member": func() { other.HDel(ctx, "h", "nosuch") },
	}
	for proto := 2; proto <= 3; proto++ {
		for name, change := range changes {
			for _, watched := range []string{"k", "h"} {
				setup()
				c := newClient(t, s, proto, func(o *redis.Options) { o.PoolSize = 1 })
				err := c.Watch(ctx, func(tx *redis.Tx) error {
					change()
					_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "done", "1", 0)
						return nil
					})
					return err
				}, watched)
				// "expiry" of k happens after "expire"'s PEXPIRE too;
				// the expire case itself changes the key.
				affects := map[string][]string{"k": {"set", "same value", "del", "rename onto", "rename away", "type change", "flushall", "flushdb", "expire", "expiry"},
					"h": {"element", "new element", "flushall", "flushdb"}}[watched]
				want := false
				for _, a := range affects {
					want = want || a == name
				}
				if got := errors.Is(err, redis.TxFailedErr); got != want || err != nil && !got {
					t.Errorf("RESP%d, WATCH %s, change %q: EXEC err %v, want failure %v", proto, watched, name, err, want)
				}
				c.Close()
			}
		}
	}
}

// TestTxIsolation runs transactions that keep invariants — two counters
// equal, and money moved between accounts with a constant total —
// against concurrent transactions that read them all, which must never
// see a transaction half done. Run it under -race.
func TestTxIsolation(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const accounts, initial = 5, 1000
	setup := newClient(t, s, 2, nil)
	for i := range accounts {
		setup.Set(ctx, "acct"+strconv.Itoa(i), initial, 0)
	}
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, s, 2+w%2, nil)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				from, to := rng.IntN(accounts), rng.IntN(accounts)
				amount := int64(rng.IntN(50))
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, "a")
					p.DecrBy(ctx, "acct"+strconv.Itoa(from), amount)
					p.IncrBy(ctx, "acct"+strconv.Itoa(to), amount)
					p.Incr(ctx, "b")
					return nil
				})
				if err != nil {
					report(err)
					return
				}
			}
		}()
	}
	keys := []string{"a", "b"}
	for i := range accounts {
		keys = append(keys, "acct"+strconv.Itoa(i))
	}
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, s, 2+r%2, nil)
			for range rounds {
				cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys {
						p.Get(ctx, k)
					}
					return nil
				})
				if err != nil && !errors.Is(err, redis.Nil) {
					report(err)
					return
				}
				var vals []int64
				for _, cmd := range cmds {
					n, _ := cmd.(*redis.StringCmd).Int64()
					vals = append(vals, n)
				}
				total := int64(0)
				for _, v := range vals[2:] {
					total += v
				}
				if vals[0] != vals[1] || total != accounts*initial {
					report(fmt.Errorf("reader %d saw a transaction half done: a=%d b=%d total=%d", r, vals[0], vals[1], total))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	a, _ := setup.Get(ctx, "a").Int()
	b, _ := setup.Get(ctx, "b").Int()
	if a != 4*rounds || b != a {
		t.Fatalf("a=%d b=%d after %d transactions", a, b, 4*rounds)
	}
}
