package imgbed

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// uploadSlots bounds the uploads reading their bodies at once, in total
// and per client, so that a few clients holding slow uploads open cannot
// take every slot: a client over its share waits for one of its own
// uploads to end, however many slots are free. Waiting is bounded too, so
// a saturated host answers at once with 503 and Retry-After rather than
// holding the request for the whole upload timeout. Waiters are served
// in arrival order: a freed slot goes to the oldest waiter whose client
// is under its share, so a burst of uploads (a batch from one page) waits
// in turn instead of racing for each slot, which left some waiting past
// the bound (503) while later ones went through.
type uploadSlots struct {
	total, perClient int

	mu   sync.Mutex
	used int
	held map[string]int // slots held per client; absent when none
	// queue holds the waiters, oldest first. Whenever a slot is free,
	// no waiter in it could take it (release hands slots over).
	queue []*slotWaiter
}

// slotWaiter is an acquire waiting for a slot: release closes granted
// once it has taken one for it.
type slotWaiter struct {
	client  string
	granted chan struct{}
}

var errSlotWait = errors.New("no upload slot became free in time")

func newUploadSlots(total, perClient int) *uploadSlots {
	return &uploadSlots{total: total, perClient: min(perClient, total), held: make(map[string]int)}
}

// free reports whether client may take a slot now; s.mu is held.
func (s *uploadSlots) free(client string) bool {
	return s.used < s.total && s.held[client] < s.perClient
}

// take gives client a slot; s.mu is held.
func (s *uploadSlots) take(client string) {
	s.used++
	s.held[client]++
}

// acquire takes a slot for client, waiting at most wait for one. It fails
// with errSlotWait when none came free in time, or with ctx's error.
func (s *uploadSlots) acquire(ctx context.Context, client string, wait time.Duration) error {
	s.mu.Lock()
	if s.free(client) {
		s.take(client)
		s.mu.Unlock()
		return nil
	}
	w := &slotWaiter{client: client, granted: make(chan struct{})}
	s.queue = append(s.queue, w)
	s.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return nil
	case <-t.C:
		err = errSlotWait
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		return nil // granted as the wait ended: keep it
	default:
	}
	s.queue = slices.DeleteFunc(s.queue, func(q *slotWaiter) bool { return q == w })
	return err
}

// release gives back a slot client acquired, to the oldest waiter that
// may take it, if any.
func (s *uploadSlots) release(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	if s.held[client]--; s.held[client] == 0 {
		delete(s.held, client)
	}
	for i, w := range s.queue {
		if s.free(w.client) {
			s.take(w.client)
			close(w.granted)
			s.queue = slices.Delete(s.queue, i, i+1)
			return
		}
	}
}

// inUse returns the slots held, in total and by client.
func (s *uploadSlots) inUse(client string) (total, byClient int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.held[client]
}
