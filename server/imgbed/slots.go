package imgbed

import (
	"context"
	"errors"
	"sync"
	"time"
)

// uploadSlots bounds the uploads reading their bodies at once, in total
// and per client, so that a few clients holding slow uploads open cannot
// take every slot: a client over its share waits for one of its own
// uploads to end, however many slots are free. Waiting is bounded too, so
// a saturated host answers at once with 503 and Retry-After rather than
// holding the request for the whole upload timeout.
type uploadSlots struct {
	total, perClient int

	mu   sync.Mutex
	used int
	held map[string]int // slots held per client; absent when none
	// freed is closed, and replaced, whenever a slot is released: waiters
	// select on it instead of polling.
	freed chan struct{}
}

var errSlotWait = errors.New("no upload slot became free in time")

func newUploadSlots(total, perClient int) *uploadSlots {
	return &uploadSlots{total: total, perClient: min(perClient, total), held: make(map[string]int), freed: make(chan struct{})}
}

// acquire takes a slot for client, waiting at most wait for one. It fails
// with errSlotWait when none came free in time, or with ctx's error.
func (s *uploadSlots) acquire(ctx context.Context, client string, wait time.Duration) error {
	var timeout <-chan time.Time
	for {
		s.mu.Lock()
		if s.used < s.total && s.held[client] < s.perClient {
			s.used++
			s.held[client]++
			s.mu.Unlock()
			return nil
		}
		freed := s.freed
		s.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return errSlotWait
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back a slot client acquired.
func (s *uploadSlots) release(client string) {
	s.mu.Lock()
	s.used--
	if s.held[client]--; s.held[client] == 0 {
		delete(s.held, client)
	}
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

// inUse returns the slots held, in total and by client.
func (s *uploadSlots) inUse(client string) (total, byClient int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.held[client]
}
