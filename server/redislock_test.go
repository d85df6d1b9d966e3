package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
)

// TestRedislockLibrary drives the server with a real script-heavy client
// library as its users call it: github.com/bsm/redislock, whose Obtain,
// Refresh, TTL and Release are Lua scripts (EVALSHA, falling back to
// EVAL). Several clients contend for one lock with retries; critical
// sections must never overlap, a refreshed lock must keep its new TTL, and
// a lock already released must refuse a second release.
func TestRedislockLibrary(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const clients, rounds = 6, 20
	var inside, overlaps, taken atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		locker := redislock.New(newClient(t, s, 2+i%2, nil))
		wg.Go(func() {
			for range rounds {
				lock, err := locker.Obtain(ctx, "job-lock", 5*time.Second, &redislock.Options{
					RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 5000),
				})
				if err != nil {
					t.Errorf("obtain: %v", err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				taken.Add(1)
				if err := lock.Refresh(ctx, 10*time.Second, nil); err != nil {
					t.Errorf("refresh: %v", err)
				}
				if ttl, err := lock.TTL(ctx); err != nil || ttl <= 5*time.Second {
					t.Errorf("TTL after refresh: %v, %v", ttl, err)
				}
				inside.Add(-1)
				if err := lock.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
				if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
					t.Errorf("second release: %v, want ErrLockNotHeld", err)
				}
			}
		})
	}
	wg.Wait()
	eq(t, "overlapping critical sections", overlaps.Load(), int64(0))
	eq(t, "locks taken", taken.Load(), int64(clients*rounds))
}
