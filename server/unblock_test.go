package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisDiffClientUnblock blocks go-redis clients in BLPOP, XREAD
// BLOCK and WAIT on lsmgo and on redis-server, unblocks each with CLIENT
// UNBLOCK in each mode, and compares what every client saw: the blocked
// commands' replies, CLIENT UNBLOCK's, and the b flag of CLIENT LIST
// before and after.
func TestRedisDiffClientUnblock(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := newClient(t, s, 2, nil)
	theirs := newClient(t, s, 2, func(o *redis.Options) { o.Network, o.Addr = "unix", redisSock })
	for _, mode := range []string{"", "TIMEOUT", "ERROR"} {
		got, want := unblockTranscript(t, ours, mode), unblockTranscript(t, theirs, mode)
		if got != want {
			t.Fatalf("mode %q:\n lsmgo: %s\n redis: %s", mode, got, want)
		}
	}
	ctx := context.Background()
	for _, args := range [][]any{
		{"CLIENT", "UNBLOCK", "1", "BOGUS"},
		{"CLIENT", "UNBLOCK", "x"},
		{"CLIENT", "UNBLOCK", "x", "bogus"},
		{"CLIENT", "UNBLOCK", "1", "ERROR", "extra"},
		{"CLIENT", "UNBLOCK", "999999"},
		{"CLIENT", "UNBLOCK", "-1", "error"},
		{"CLIENT", "UNBLOCK"},
	} {
		got, want := fmt.Sprint(ours.Do(ctx, args...)), fmt.Sprint(theirs.Do(ctx, args...))
		if got != want {
			t.Errorf("lsmgo: %s\nredis: %s", got, want)
		}
	}
}

// unblockTranscript blocks three clients of rdb, unblocks each in mode
// ("" for the default) and records what happened.
func unblockTranscript(t *testing.T, rdb *redis.Client, mode string) string {
	t.Helper()
	ctx := context.Background()
	rdb.Del(ctx, "ub:list", "ub:stream")
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "ub:stream", ID: "1-1", Values: []string{"f", "v"}})
	blocked := []func(c *redis.Conn) string{
		func(c *redis.Conn) string { return fmt.Sprint(c.BLPop(ctx, 100*time.Second, "ub:list")) },
		func(c *redis.Conn) string {
			return fmt.Sprint(c.XRead(ctx, &redis.XReadArgs{Streams: []string{"ub:stream", "$"}, Block: 100 * time.Second}))
		},
		func(c *redis.Conn) string { return fmt.Sprint(c.Do(ctx, "WAIT", 1, 100000)) },
	}
	var out strings.Builder
	for _, run := range blocked {
		c := rdb.Conn()
		id := c.ClientID(ctx).Val()
		done := make(chan string, 1)
		go func() { done <- run(c) }()
		list := func() string { return rdb.Do(ctx, "CLIENT", "LIST", "ID", id).Val().(string) }
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(list(), "flags=b") {
			if time.Now().After(deadline) {
				t.Fatalf("client %d never blocked: %s", id, list())
			}
			time.Sleep(5 * time.Millisecond)
		}
		args := []any{"CLIENT", "UNBLOCK", id}
		if mode != "" {
			args = append(args, mode)
		}
		fmt.Fprintf(&out, "unblock: %v\n", rdb.Do(ctx, args...).Val())
		select {
		case r := <-done:
			fmt.Fprintf(&out, "blocked client: %s\n", r)
		case <-time.After(5 * time.Second):
			t.Fatalf("client %d still blocked after CLIENT UNBLOCK", id)
		}
		l := list()
		fmt.Fprintf(&out, "blocked after: %v\nagain: %v\n", strings.Contains(l, "flags=b"), rdb.Do(ctx, args...).Val())
		c.Close()
	}
	return out.String()
}
