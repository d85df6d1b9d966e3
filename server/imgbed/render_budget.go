package imgbed

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// renderBudget admits renders by their estimated peak memory: the bytes
// of the renders running never exceed the total. Waiters are admitted in
// arrival order, so a large render is not starved by a stream of small
// ones (the small ones queue behind it instead).
type renderBudget struct {
	total int64

	mu      sync.Mutex
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newRenderBudget(total int64) *renderBudget { return &renderBudget{total: total} }

// errOverBudget: one render alone would need more than the whole budget.
func errOverBudget(n, total int64) error {
	return &apiError{http.StatusUnprocessableEntity, "too_large", fmt.Sprintf(
		"rendering this image needs about %d MiB, more than the %d MiB renders may use (render_memory)", n>>20, total>>20)}
}

// acquire waits until n bytes fit, or ctx ends.
func (b *renderBudget) acquire(ctx context.Context, n int64) error {
	if n > b.total {
		return errOverBudget(n, b.total)
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.total {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // admitted meanwhile: give it back
			b.used -= n
			b.admit()
		default:
			for i, o := range b.waiters {
				if o == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			b.admit() // the head may have been waiting behind w
		}
		return ctx.Err()
	}
}

// release returns n bytes and admits the waiters that now fit.
func (b *renderBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.admit()
	b.mu.Unlock()
}

// admit lets waiters in, in order, while the head fits. b.mu is held.
func (b *renderBudget) admit() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.total {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// waiting returns how many renders wait.
func (b *renderBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// inUse returns the bytes admitted.
func (b *renderBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
