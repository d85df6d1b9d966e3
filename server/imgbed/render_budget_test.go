package imgbed

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRenderBudget: concurrent renders of random sizes never hold more
// than the budget together, all finish, one larger than the budget is
// refused at once, and a waiter that gives up leaves nothing held.
func TestRenderBudget(t *testing.T) {
	const total = 1000
	b := newRenderBudget(total)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(5, 6))
	for range 64 {
		n := 1 + rng.Int64N(total)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.acquire(context.Background(), n); err != nil {
				t.Error(err)
				return
			}
			now := held.Add(n)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			held.Add(-n)
			b.release(n)
		}()
	}
	wg.Wait()
	if peak.Load() > total || b.inUse() != 0 {
		t.Fatalf("peak %d of %d, %d left in use", peak.Load(), total, b.inUse())
	}
	var api *apiError
	if err := b.acquire(context.Background(), total+1); !errors.As(err, &api) || api.status != 422 {
		t.Fatalf("over the budget: %v", err)
	}
	// FIFO: a large waiter is not overtaken by a later small one.
	if err := b.acquire(context.Background(), 600); err != nil {
		t.Fatal(err)
	}
	bigIn := make(chan struct{})
	go func() {
		b.acquire(context.Background(), 800)
		close(bigIn)
	}()
	for b.waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(ctx, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a small render overtook a waiting large one: %v", err)
	}
	b.release(600)
	<-bigIn
	b.release(800)
	if b.inUse() != 0 || b.waiting() != 0 {
		t.Fatalf("%d in use, %d waiting", b.inUse(), b.waiting())
	}
}
