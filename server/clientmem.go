package server

import (
	"cmp"
	"errors"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errClientMemory fails the read of a client that would take the clients'
// buffers past maxmemory-clients while it is the biggest of them.
var errClientMemory = errors.New("client evicted: maxmemory-clients reached")

// Returning freed buffers to the operating system: after a burst of large
// requests the Go heap shrinks at the next collections, but the runtime
// hands pages back to the kernel only slowly. Once this many bytes of
// client buffers were dropped, a background pass returns them at once,
// at most every scavengeEvery.
const (
	scavengeAfterBytes = 64 << 20
	scavengeEvery      = time.Second
	// bigRelease is the smallest drop of a single buffer that counts
	// towards scavengeAfterBytes; small buffers are reused by the heap.
	bigRelease = 1 << 20
)

// clientMemory bounds the bytes all clients' query buffers hold together,
// like Redis 7's maxmemory-clients. Each connection's RESP reader asks
// before its buffer grows (resp.MemoryBudget); a growth that would pass
// the bound closes the biggest clients first until the rest fit. A client
// that is itself the biggest has its read refused, which closes it. The
// sockets of clients chosen for eviction close at once, but their bytes
// stay counted until their goroutines drop the buffers, and the growth
// waits for that: the total never passes the bound.
type clientMemory struct {
	total    atomic.Int64 // bytes held by all readers
	evicted  atomic.Int64 // clients closed for the bound (INFO evicted_clients)
	released atomic.Int64 // big buffer bytes dropped since the last scavenge

	// evictMu serializes evictions, so two growing clients do not both
	// close victims for the same excess.
	evictMu sync.Mutex
}

// evictionWait bounds how long a growing client waits for the clients
// evicted on its behalf to drop their buffers before it is refused. The
// evicted release when their goroutines next run, which on a loaded
// machine took longer than 250 ms and refused a well-behaved client.
const evictionWait = 5 * time.Second

// reserve adds n to the total if the total stays within limit.
func (m *clientMemory) reserve(n, limit int64) bool {
	for {
		t := m.total.Load()
		if t+n > limit {
			return false
		}
		if m.total.CompareAndSwap(t, t+n) {
			return true
		}
	}
}

// connBudget is a connection's resp.MemoryBudget.
type connBudget struct{ c *conn }

// Grow reserves n bytes for the connection's buffer. Within the bound it
// costs one compare-and-swap; past it, the biggest clients are evicted
// and the growth waits (briefly) for their buffers to be dropped, so the
// total never passes the bound.
func (b connBudget) Grow(n int) error {
	c, m := b.c, &b.c.s.clientMem
	limit := c.s.config().maxMemoryClients()
	if limit <= 0 {
		m.total.Add(int64(n))
		c.mem.Add(int64(n))
		return nil
	}
	if !m.reserve(int64(n), limit) {
		if err := c.s.waitForRoom(c, int64(n), limit); err != nil {
			return err
		}
	}
	c.mem.Add(int64(n))
	return nil
}

func (b connBudget) Shrink(n int) {
	c, m := b.c, &b.c.s.clientMem
	c.mem.Add(-int64(n))
	m.total.Add(-int64(n))
	if n >= bigRelease {
		m.released.Add(int64(n))
	}
}

// waitForRoom evicts the biggest clients for c's growth by n and waits
// for their buffers to be dropped, then reserves n. Evictions are made
// again every roomRetry: the bytes of clients being evicted count as
// freed for every waiter at once, and once the first waiters took them
// the rest would otherwise wait out evictionWait with no one evicting
// for them. A client evicted itself while it waits gives up at once: its
// buffer is what the others wait for.
func (s *Server) waitForRoom(c *conn, n, limit int64) error {
	m := &s.clientMem
	deadline := time.Now().Add(evictionWait)
	for {
		if c.evicting.Load() || !s.makeRoomFor(c, n, limit) {
			return errClientMemory
		}
		c.detach() // the evicted may be the event loop's, closed by it
		for retry := time.Now().Add(roomRetry); ; time.Sleep(time.Millisecond) {
			if m.reserve(n, limit) {
				return nil
			}
			if c.evicting.Load() || time.Now().After(deadline) {
				return errClientMemory
			}
			if time.Now().After(retry) {
				break
			}
		}
	}
}

// roomRetry is how often a client waiting for room evicts again.
const roomRetry = 10 * time.Millisecond

// makeRoomFor evicts the biggest clients until c's growth by n fits
// within limit once their buffers are dropped, counting as gone those
// already being evicted. It reports false, evicting no one, when c itself
// (with its growth) is the biggest client left: then c is refused instead.
func (s *Server) makeRoomFor(c *conn, n, limit int64) bool {
	m := &s.clientMem
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	size := func(o *conn) int64 {
		if o == c {
			return o.mem.Load() + n
		}
		return o.mem.Load()
	}
	list := s.clientList()
	total := m.total.Load()
	excess := total + n - limit
	candidates := list[:0]
	listed := int64(0)
	for _, o := range list {
		mem := o.mem.Load()
		listed += mem
		if o.evicting.Load() {
			excess -= mem
		} else {
			candidates = append(candidates, o)
		}
	}
	// What the total holds beyond the listed clients' buffers (growths
	// other clients reserved and have not yet counted as theirs) cannot
	// be freed by evicting anyone: without this, many concurrent growths
	// made the excess larger than every big client together, and the
	// small ones were evicted too, down to a well-behaved one
	// (TestMaxMemoryClients, once under load, with 300 flooders).
	excess -= max(0, total-listed)
	slices.SortFunc(candidates, func(a, b *conn) int { return cmp.Compare(size(b), size(a)) })
	for _, o := range candidates {
		if excess <= 0 {
			break
		}
		if o == c {
			return false
		}
		mem := o.mem.Load()
		o.evicting.Store(true)
		m.evicted.Add(1)
		s.log.Warn("evicting client: maxmemory-clients reached", "client", o.id,
			"addr", o.raddr.String(), "buffer_bytes", mem, "maxmemory_clients", limit)
		o.closeSocket()
		excess -= mem
	}
	return excess <= 0
}

// returnMemoryLoop hands dropped client buffers back to the operating
// system after bursts, so that RSS falls back near its idle level.
func (s *Server) returnMemoryLoop() {
	defer s.bgWG.Done()
	t := time.NewTicker(scavengeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if s.clientMem.released.Load() >= scavengeAfterBytes {
				s.clientMem.released.Store(0)
				debug.FreeOSMemory()
			}
		}
	}
}
