package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestKill9SwapDBFlushDB kills the server with SIGKILL while one client
// swaps databases and another flushes and refills one, then restarts it:
// each SWAPDB and FLUSHDB is all or nothing, and the databases stay apart
// across the restart. Databases 0-3 each start with keys of every type,
// all stamped with the database's origin, under the same names; after the
// restart every database must hold one origin's keys alone, in the order
// of the last acknowledged swap or the one after it (in flight at the
// kill). Database 4 is flushed and refilled with one MSET of 50 keys
// stamped with a generation: it must hold none of them, or all 50 of one
// generation no older than the last acknowledged.
func TestKill9SwapDBFlushDB(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", "no", "--loglevel", "warning"}
	srv := startChild(t, args...)
	ctx := context.Background()
	const swapped, flushed, fill = 4, 4, 50
	for db := range swapped {
		fillOrigin(t, ctx, dbClient(t, srv.addr, db), fmt.Sprint("origin", db))
	}

	var acks atomic.Int64
	var wg sync.WaitGroup
	perm := []int{0, 1, 2, 3} // perm[db] is the origin db holds, as of the last acknowledged SWAPDB
	var next [2]int           // the swap in flight
	wg.Add(2)
	go func() {
		defer wg.Done()
		rc := dbClient(t, srv.addr, 0)
		for i := 0; ; i++ {
			a, b := i%swapped, (i+1+i/swapped)%swapped
			next = [2]int{a, b}
			if rc.Do(ctx, "SWAPDB", a, b).Err() != nil {
				return
			}
			perm[a], perm[b] = perm[b], perm[a]
			acks.Add(1)
		}
	}()
	lastFill := -1
	go func() {
		defer wg.Done()
		rc := dbClient(t, srv.addr, flushed)
		for gen := 0; ; gen++ {
			if rc.FlushDB(ctx).Err() != nil {
				return
			}
			pairs := make([]any, 0, 2*fill)
			for k := range fill {
				pairs = append(pairs, fmt.Sprint("g", k), gen)
			}
			if rc.MSet(ctx, pairs...).Err() != nil {
				return
			}
			lastFill = gen
			acks.Add(1)
		}
	}()
	srv.killAfter(t, &acks, 400)
	wg.Wait()

	srv = startChild(t, args...)
	got := make([]int, swapped)
	for db := range swapped {
		got[db] = originOf(t, ctx, dbClient(t, srv.addr, db))
	}
	inFlight := slices.Clone(perm)
	inFlight[next[0]], inFlight[next[1]] = inFlight[next[1]], inFlight[next[0]]
	if !slices.Equal(got, perm) && !slices.Equal(got, inFlight) {
		t.Fatalf("after kill -9 the databases hold origins %v; want %v (last acknowledged SWAPDB) or %v (the one in flight)", got, perm, inFlight)
	}
	rc := dbClient(t, srv.addr, flushed)
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		vals, err := rc.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		gens := map[any]bool{}
		for _, v := range vals {
			gens[v] = true
		}
		var gen int
		if len(gens) == 1 {
			fmt.Sscan(fmt.Sprint(vals[0]), &gen)
		}
		if len(keys) != fill || len(gens) != 1 || gen < lastFill {
			t.Fatalf("after kill -9 database %d holds %d keys of generations %v; want none, or %d of one generation >= %d", flushed, len(keys), gens, fill, lastFill)
		}
	}
	t.Logf("%d SWAPDB and FLUSHDB+MSET acknowledged; databases %v, none torn", acks.Load(), got)
}

func dbClient(t *testing.T, addr string, db int) *redis.Client {
	rc := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, MaxRetries: -1, PoolSize: 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// fillOrigin writes keys of every type stamped with origin.
func fillOrigin(t *testing.T, ctx context.Context, rc *redis.Client, origin string) {
	t.Helper()
	for _, err := range []error{
		rc.Set(ctx, "str", origin, 0).Err(),
		rc.HSet(ctx, "hash", "a", origin, "b", origin).Err(),
		rc.RPush(ctx, "list", origin, origin, origin).Err(),
		rc.SAdd(ctx, "set", origin).Err(),
		rc.ZAdd(ctx, "zset", redis.Z{Score: 1, Member: origin}).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// originOf returns the origin whose keys the database holds, failing
// unless they all have the same.
func originOf(t *testing.T, ctx context.Context, rc *redis.Client) int {
	t.Helper()
	var seen []string
	seen = append(seen, rc.Get(ctx, "str").Val())
	seen = append(seen, rc.HVals(ctx, "hash").Val()...)
	seen = append(seen, rc.LRange(ctx, "list", 0, -1).Val()...)
	seen = append(seen, rc.SMembers(ctx, "set").Val()...)
	seen = append(seen, rc.ZRange(ctx, "zset", 0, -1).Val()...)
	if n := rc.DBSize(ctx).Val(); len(seen) != 8 || n != 5 {
		t.Fatalf("database %d holds %d keys, values %q; want 5 keys of one origin", rc.Options().DB, n, seen)
	}
	for _, v := range seen[1:] {
		if v != seen[0] {
			t.Fatalf("database %d mixes origins: %q", rc.Options().DB, seen)
		}
	}
	var origin int
	if _, err := fmt.Sscanf(seen[0], "origin%d", &origin); err != nil {
		t.Fatalf("database %d holds %q", rc.Options().DB, seen)
	}
	return origin
}
