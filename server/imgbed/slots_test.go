package imgbed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestUploadSlotsOrder queues seeded random acquires of a few clients
// behind full slots and releases one slot at a time: each release goes to
// the oldest waiter whose client is under its share (computed here from
// the queue as a model), never past the total or a share; a waiter that
// gives up leaves the queue and gets errSlotWait.
func TestUploadSlotsOrder(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 22))
			const total, share = 4, 2
			s := newUploadSlots(total, share)
			clients := []string{"a", "b", "c", "d"}
			holders := map[string]int{} // the model of held
			for _, c := range []string{"a", "a", "b", "b"} {
				if err := s.acquire(context.Background(), c, time.Minute); err != nil {
					t.Fatal(err)
				}
				holders[c]++
			}
			if err := s.acquire(context.Background(), "e", 10*time.Millisecond); !errors.Is(err, errSlotWait) {
				t.Fatalf("acquire with every slot held: %v, want errSlotWait", err)
			}
			if s.mu.Lock(); len(s.queue) != 0 {
				t.Fatalf("%d waiters left after a timeout", len(s.queue))
			}
			s.mu.Unlock()
			type waiter struct {
				client string
				done   chan error
			}
			var queue []waiter
			for i := range 12 {
				c := clients[rng.IntN(len(clients))]
				w := waiter{c, make(chan error, 1)}
				go func() { w.done <- s.acquire(context.Background(), c, time.Minute) }()
				waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.queue) == i+1 })
				queue = append(queue, w)
			}
			for len(queue) > 0 {
				var from string
				for c, n := range holders {
					if n > 0 && (from == "" || c < from) {
						from = c
					}
				}
				s.release(from)
				holders[from]--
				next := -1 // the model's choice
				for i, w := range queue {
					if holders[w.client] < share {
						next = i
						break
					}
				}
				if next < 0 {
					continue
				}
				w := queue[next]
				if err := <-w.done; err != nil {
					t.Fatal(err)
				}
				holders[w.client]++
				queue = append(queue[:next], queue[next+1:]...)
				for _, o := range queue {
					select {
					case err := <-o.done:
						t.Fatalf("a waiter of %s went past the oldest eligible one (%v)", o.client, err)
					default:
					}
				}
				want := 0
				for _, n := range holders {
					want += n
				}
				used, _ := s.inUse("")
				if _, held := s.inUse(w.client); used != want || used > total || held != holders[w.client] || held > share {
					t.Fatalf("%d slots used of %d (want %d), %s holds %d of %d (want %d)", used, total, want, w.client, held, share, holders[w.client])
				}
			}
		})
	}
}
