package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/redis/go-redis/v9"
)

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// TestCollections checks what TestRedisDiff cannot without redis-server
// and what depends on the storage layout: a collection deleted, expired,
// overwritten or renamed leaves elements behind under its old version, and
// none of them may show through in a new collection at the same key.
func TestCollections(t *testing.T) {
	s := startServer(t, nil)
	bothProtocols(t, s, func(t *testing.T, c *redis.Client) {
		runSteps(t, c, []step{
			{args: []any{"HSET", "h", "a", "1", "b", "2", "a", "3"}, want: int64(2)},
			{args: []any{"HGET", "h", "a"}, want: "3"},
			{args: []any{"HLEN", "h"}, want: int64(2)},
			{args: []any{"TYPE", "h"}, want: "hash"},
			{args: []any{"GET", "h"}, err: wrongType},
			{args: []any{"SADD", "h", "x"}, err: wrongType},
			{args: []any{"MGET", "h"}, want: []any{nil}},
			{args: []any{"SETNX", "h", "v"}, want: int64(0)},
			{args: []any{"DEL", "h"}, want: int64(1)},
			{args: []any{"HSET", "h", "c", "1"}, want: int64(1)},
			{args: []any{"HKEYS", "h"}, want: []any{"c"}},
			{args: []any{"HGET", "h", "a"}, want: nil},
			// Overwritten by a string, then a hash again.
			{args: []any{"SET", "h", "s"}, want: "OK"},
			{args: []any{"HSET", "h", "d", "1"}, err: wrongType},
			{args: []any{"DEL", "h"}, want: int64(1)},
			{args: []any{"HSET", "h", "d", "1"}, want: int64(1)},
			{args: []any{"HKEYS", "h"}, want: []any{"d"}},
			// Emptied collections are deleted.
			{args: []any{"HDEL", "h", "d", "d", "zz"}, want: int64(1)},
			{args: []any{"EXISTS", "h"}, want: int64(0)},
			{args: []any{"SADD", "s", "m1", "m2", "m1"}, want: int64(2)},
			{args: []any{"SREM", "s", "m1", "m2"}, want: int64(2)},
			{args: []any{"TYPE", "s"}, want: "none"},
			// Expiry, and a collection made after it expired.
			{args: []any{"SADD", "s", "m1", "m2"}, want: int64(2)},
		})
		// A TTL under half a second reads 0; a loaded machine may take
		// longer than the 30 ms to ask, and then the key is gone.
		set := time.Now()
		runSteps(t, c, []step{{args: []any{"PEXPIRE", "s", "30"}, want: int64(1)}})
		if ttl, _ := do(context.Background(), c, "TTL", "s"); ttl != int64(0) && (ttl != int64(-2) || time.Since(set) < 30*time.Millisecond) {
			t.Errorf("TTL of a set expiring in 30 ms: %v after %v", ttl, time.Since(set))
		}
		time.Sleep(60 * time.Millisecond)
		runSteps(t, c, []step{
			{args: []any{"SCARD", "s"}, want: int64(0)},
			{args: []any{"SADD", "s", "m3"}, want: int64(1)},
			{args: []any{"SMEMBERS", "s"}, want: []any{"m3"}},
			{args: []any{"TTL", "s"}, want: int64(-1)},
			// RENAME moves the elements; the old name's version is gone.
			{args: []any{"HSET", "r", "f", "v"}, want: int64(1)},
			{args: []any{"EXPIRE", "r", "100"}, want: int64(1)},
			{args: []any{"RENAME", "r", "s"}, want: "OK"},
			{args: []any{"HGET", "s", "f"}, want: "v"},
			{args: []any{"TTL", "s"}, want: int64(100)},
			{args: []any{"HSET", "r", "g", "w"}, want: int64(1)},
			{args: []any{"HKEYS", "r"}, want: []any{"g"}},
			{args: []any{"SCAN", "0", "TYPE", "hash"}, want: []any{"0", []any{"r", "s"}}},
			{args: []any{"FLUSHALL"}, want: "OK"},
			{args: []any{"HSET", "r", "z", "1"}, want: int64(1)},
			{args: []any{"HLEN", "r"}, want: int64(1)},
		})
	})
}

// TestCollectionsSurviveRestart checks that collections are read back
// from disk, and that a collection made after a restart does not see the
// elements of one deleted before it.
func TestCollectionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	c := newClient(t, s, 2, nil)
	for i := range 200 {
		if err := c.HSet(ctx, "big", fmt.Sprint("f", i), i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.SAdd(ctx, "set", "a", "b")
	c.HSet(ctx, "gone", "old", "1")
	c.Del(ctx, "gone")
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, func(c *Config) { c.Dir = dir })
	c2 := newClient(t, s2, 2, nil)
	runSteps(t, c2, []step{
		{args: []any{"HLEN", "big"}, want: int64(200)},
		{args: []any{"HGET", "big", "f199"}, want: "199"},
		{args: []any{"SMEMBERS", "set"}, want: []any{"a", "b"}},
		{args: []any{"HSET", "gone", "new", "1"}, want: int64(1)},
		{args: []any{"HKEYS", "gone"}, want: []any{"new"}},
	})
	var cursor uint64
	seen := 0
	for {
		fields, next, err := c2.HScan(ctx, "big", cursor, "*", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen += len(fields) / 2
		if cursor = next; cursor == 0 {
			break
		}
	}
	if seen != 200 {
		t.Errorf("HSCAN of 200 fields returned %d", seen)
	}
}

// TestConcurrentCollectionWrites checks that read-modify-writes of one
// collection from many clients are atomic: no increment and no member is
// lost, and the stored count matches the elements.
func TestConcurrentCollectionWrites(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const clients, each = 8, 100
	errs := make(chan error, clients)
	for g := range clients {
		c := newClient(t, s, 2, nil)
		go func() {
			for i := range each {
				if err := c.HIncrBy(ctx, "h", "n", 1).Err(); err != nil {
					errs <- err
					return
				}
				if err := c.SAdd(ctx, "s", fmt.Sprint(g, "-", i), "shared").Err(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, s, 2, nil)
	runSteps(t, c, []step{
		{args: []any{"HGET", "h", "n"}, want: fmt.Sprint(clients * each)},
		{args: []any{"SCARD", "s"}, want: int64(clients*each + 1)},
	})
	if members, err := c.SMembers(ctx, "s").Result(); err != nil || len(members) != clients*each+1 {
		t.Errorf("SMEMBERS: %d members, %v; want %d", len(members), err, clients*each+1)
	}
}

// TestVersionClockSurvivesRestart: versions handed out after a restart are
// past every version handed out before, even when the wall clock is behind
// them (here: a reservation an hour ahead, as after the clock was stepped
// back by an hour), so a new collection never sees a deleted one's
// elements.
func TestVersionClockSurvivesRestart(t *testing.T) {
	db, err := lsmgo.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ahead := uint64(time.Now().Add(time.Hour).UnixNano())
	if err := db.Set([]byte(versionsKey), binary.BigEndian.AppendUint64(nil, ahead), nil); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for restart := range 3 {
		vc, err := newVersionClock(db)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			v, err := vc.nextVersion()
			if err != nil {
				t.Fatal(err)
			}
			if v < ahead || v <= last {
				t.Fatalf("restart %d: version %d, not past %d (reserved ahead) and %d (last handed out)", restart, v, ahead, last)
			}
			last = v
		}
	}
}
