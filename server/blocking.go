package server

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP; BZPOPMIN,
// BZPOPMAX and BZMPOP build on the same registry). The registry is keyed
// by user key and knows nothing of types: a blocked client leaves a try
// function, and a write that may have made a key non-empty names the key;
// once that write has committed, the writer's goroutine runs the tries of
// the clients blocked on the key, oldest first, until one finds nothing.
//
// A blocking command's handler parses its arguments and calls
//
//	c.blockingCommand(keys, timeout, try, timedOut)
//
// where try(nil) runs the command's non-blocking form against its keys in
// argument order, writes the reply and returns true, or returns false
// having written and committed nothing (every key empty); blockingCommand
// runs it, then blocks the client when it found nothing (unless inside
// EXEC: c.inExec() makes the command behave as its non-blocking form), and
// calls timedOut to write the reply of a command that found nothing in
// time. A disconnect while blocked ends the connection; shutdown replies
// with an error.
//
// Every write that may turn a key into a non-empty value a blocked client
// waits for (a push, LMOVE's destination, RENAME's destination, ZADD, ...)
// calls c.signalReady(key) before it returns; the key's waiters
// are served after the command finishes (conn.execute), so after its
// commit, and before its reply is flushed: a client that saw the push
// acknowledged cannot then pop ahead of the clients that were blocked.
//
// A try called with a key (not nil) serves the client from that key only,
// as Redis 7.0 serves a blocked client from the key that became ready; it
// returns false without replying when the key is empty or holds another
// type. Tries run on the writer's goroutine while the blocked client's
// goroutine is parked in block, so a try may use the blocked connection's
// buffers, batch and reply writer freely; it takes its own key locks and
// must not be called with any held. A try may call c.signalReady for keys
// it wrote (BLMOVE's destination); those are served next, in the same
// loop.
type blockRegistry struct {
	mu sync.Mutex
	// waiting lists the clients blocked on each key, by order.
	waiting map[string][]*waiter
	// tickets numbers the blocking commands in the order they ran (see
	// waiter.order).
	tickets atomic.Uint64
	// blocked counts the clients blocked on keys: the writers' fast path
	// (serveReady does nothing while it is zero), and waits those
	// in WAIT; INFO's blocked_clients is their sum, as Redis does.
	blocked, waits atomic.Int64
}

// waiter is one blocked client.
type waiter struct {
	c    *conn
	keys []string
	// order is the waiter's place in its keys' queues, taken before its
	// connection leaves the event loop: the loop goes on to the next
	// client while this one registers, and Redis serves the clients
	// blocked on a key in the order their commands ran.
	order uint64
	try   func(key []byte) bool
	// mu is held while a try runs, so that the client cannot leave
	// (time out, disconnect) halfway through being served.
	mu sync.Mutex
	// state is waiting until the client is served or leaves.
	state  waiterState
	served chan struct{} // closed when a try succeeded
}

type waiterState uint8

const (
	waiting waiterState = iota
	served
	left
)

// blockResult says how block ended.
type blockResult uint8

const (
	blockServed blockResult = iota
	blockTimedOut
	blockAborted
)

// maxReadAhead bounds the input a blocked client's connection buffers:
// past it, the server stops reading, and so stops noticing a disconnect,
// until the client is unblocked.
const maxReadAhead = 1 << 20

// blockState is a connection's part in blocking.
type blockState struct {
	// ready lists the keys this command's writes may have made
	// non-empty; it is served after the command (serveReady).
	ready [][]byte
	// readAhead holds input read while the client was blocked, which
	// the RESP reader gets before reading the network again; readErr
	// is the read error that ended it, if any.
	readAhead []byte
	readErr   error
}

// mayBlock reports whether a blocking command may block: not inside
// EXEC, where it behaves as its non-blocking form (c.inExec() reports
// EXEC while it runs the queued commands).
func (c *conn) mayBlock() bool { return !c.inExec() }

// signalReady records that the running command may have made key a
// non-empty value; key must stay valid until the command finishes.
func (c *conn) signalReady(key []byte) {
	c.blk.ready = append(c.blk.ready, key)
}

// apply commits b (keyspace.apply) and signals every key it writes that
// a client is blocked on. A push signals its key itself; this is for the
// other writes (DEL, SET, FLUSHALL, XGROUP DESTROY, RENAME …), after
// which Redis serves or fails the clients blocked in XREADGROUP on the
// key: the stream they wait on, or its group, may be gone. Other blocked
// commands' tries find nothing new and keep waiting.
func (c *conn) apply(b *lsmgo.Batch) error {
	p, err := c.s.ks.apply(b)
	if err != nil {
		return err
	}
	c.willReplyAfter(p)
	if c.s.repl.events.wantedFlags() != 0 && b.Seq() != 0 {
		// An empty batch commits nothing and has no position.
		c.notesSeq = b.Seq() + uint64(b.Count()) - 1
	}
	if c.s.tracking.active() {
		c.s.invalidateBatch(c, b)
	}
	r := &c.s.blocked
	if r.blocked.Load() == 0 {
		return nil
	}
	b.ForEachKey(func(k []byte) { r.signalWaited(c, k) })
	return nil
}

// signalWaited signals, on c, the user key of engine key k when a client
// is blocked on it.
func (r *blockRegistry) signalWaited(c *conn, k []byte) {
	// Waiters are registered by user key in any database: one signalled
	// from another database tries, finds nothing, waits on.
	_, key, ok := userKeyOf(k)
	if !ok {
		return
	}
	r.mu.Lock()
	_, waited := r.waiting[string(key)]
	r.mu.Unlock()
	if waited && !slices.ContainsFunc(c.blk.ready, func(k []byte) bool { return bytes.Equal(k, key) }) {
		c.signalReady(bytes.Clone(key))
	}
}

// serveReady serves the clients blocked on the keys the command that just
// finished signalled, and on those their tries signal in turn. It works
// in rounds, as Redis does: the keys signalled while serving one round's
// keys make the next round, so a key emptied and filled again (BLMOVE
// a→b while another waits to move b→a) is served again.
func (r *blockRegistry) serveReady(c *conn) {
	round := c.blk.ready
	defer func(buf [][]byte) {
		clear(buf)
		c.blk.ready = buf[:0] // kept for the next command
	}(round)
	// Checked after the commit: a client that registers later tries
	// once more after registering, so it cannot miss this write.
	if r.blocked.Load() == 0 {
		return
	}
	for len(round) > 0 {
		var next [][]byte // copies: the tries' keys are their clients' arguments
		for i, key := range round {
			if slices.ContainsFunc(round[:i], func(k []byte) bool { return bytes.Equal(k, key) }) {
				continue
			}
			r.mu.Lock()
			ws := slices.Clone(r.waiting[string(key)])
			r.mu.Unlock()
			for _, w := range ws {
				if r.tryServe(w, key, c, &next) == waiting {
					break // the key is empty again (or not a fit): the rest wait
				}
			}
		}
		round = next
	}
}

// tryServe runs w's try for key unless w has left; it returns served when
// the try succeeded, left when w was gone, and waiting when the try found
// nothing. Run by another connection than w's, it moves the keys the try
// signalled to *queue, cloned: they belong to w's arguments, which w
// reuses once it runs again.
func (r *blockRegistry) tryServe(w *waiter, key []byte, runner *conn, queue *[][]byte) waiterState {
	w.mu.Lock()
	if w.state != waiting {
		w.mu.Unlock()
		return left
	}
	ok := w.try(key)
	if ok {
		w.state = served
		w.c.flushNotes() // the try committed: see notify.go
	}
	if w.c != runner {
		for _, k := range w.c.blk.ready {
			*queue = append(*queue, bytes.Clone(k))
		}
		clear(w.c.blk.ready)
		w.c.blk.ready = w.c.blk.ready[:0]
	}
	w.mu.Unlock()
	if !ok {
		return waiting
	}
	r.remove(w)
	close(w.served)
	return served
}

// keys returns every key a client is blocked on: after SWAPDB, which may
// have filled any of them, they all get tried.
func (r *blockRegistry) keys() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([][]byte, 0, len(r.waiting))
	for k := range r.waiting {
		keys = append(keys, []byte(k))
	}
	return keys
}

// add registers w on its keys, in each key's queue by w.order (almost
// always at the end).
func (r *blockRegistry) add(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[string][]*waiter{}
	}
	for _, k := range w.keys {
		ws := r.waiting[k]
		i := len(ws)
		for i > 0 && ws[i-1].order > w.order {
			i--
		}
		r.waiting[k] = slices.Insert(ws, i, w)
	}
	r.blocked.Add(1)
}

// remove takes w off its keys' queues; it is idempotent.
func (r *blockRegistry) remove(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, k := range w.keys {
		ws := r.waiting[k]
		if i := slices.Index(ws, w); i >= 0 {
			found = true
			ws = slices.Delete(ws, i, i+1)
			if len(ws) == 0 {
				delete(r.waiting, k)
			} else {
				r.waiting[k] = ws
			}
		}
	}
	if found {
		r.blocked.Add(-1)
	}
}

// blockingCommand runs a blocking command (see blockRegistry): try(nil)
// first, then, when that found nothing, blocks on keys for timeout (0:
// forever) unless the connection may not block.
func (c *conn) blockingCommand(keys [][]byte, timeout time.Duration, try func(key []byte) bool, timedOut func()) {
	// A pipeline may not hold stripes while it waits: the write that
	// would wake it could need them.
	c.leaveDeferring()
	if try(nil) {
		return
	}
	if !c.mayBlock() || c.block(keys, timeout, try) == blockTimedOut {
		timedOut()
	}
}

// block parks the connection until try serves it from one of keys, the
// timeout passes (0: never), the client disconnects, the server shuts
// down, or CLIENT UNBLOCK ends the wait (unblock.go): as a timeout, or
// with an error it replies, returning blockAborted. While parked it
// reads the client's input ahead, so that it sees a disconnect; that
// input is served once the command ends. On a disconnect the connection
// ends without a reply, as in Redis; on shutdown the client gets an
// error.
func (c *conn) block(keys [][]byte, timeout time.Duration, try func(key []byte) bool) blockResult {
	r := &c.s.blocked
	w := &waiter{c: c, try: try, served: make(chan struct{}), order: r.tickets.Add(1)}
	c.detach()
	c.doneReading()
	for _, k := range keys {
		if !slices.Contains(w.keys, string(k)) {
			w.keys = append(w.keys, string(k))
		}
	}
	// Published before the waiter is registered: from then on the
	// connection that serves it writes the reply into c.wr.
	c.publishBlocked()
	r.add(w)
	// A write that committed between the caller's try and add found no
	// waiter to serve.
	if r.tryServe(w, nil, c, nil) == served {
		return blockServed
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	stop, gone := c.readAheadWhileBlocked()
	unblocked := c.unblocker.arm(func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.state != waiting {
			return false
		}
		w.state = left
		return true
	})
	c.setState(stateBlocked, true)
	defer c.setState(stateBlocked, false)
	res := blockTimedOut
	select {
	case <-w.served:
	case <-timer:
	case <-unblocked:
	case <-gone:
		res = blockAborted
	case <-c.s.done:
		res = blockAborted
	}
	stop()
	r.remove(w)
	if ub, cause := c.unblocker.disarm(); ub && res != blockAborted && c.endBlocked(cause) {
		return blockAborted
	}
	w.mu.Lock()
	if w.state == served {
		res = blockServed
	}
	w.state = max(w.state, left)
	w.mu.Unlock()
	switch {
	case res != blockAborted:
	case c.blk.readErr != nil:
		c.quit = true
	default:
		c.fail(engineError(lsmgo.ErrClosed))
	}
	return res
}

// readAheadWhileBlocked reads the client's input into c.blk.readAhead in
// the background, so that a client that disconnects while blocked is
// noticed (gone closes). stop ends the reading and returns once it has.
func (c *conn) readAheadWhileBlocked() (stop func(), gone <-chan struct{}) {
	goneCh := make(chan struct{})
	exited := make(chan struct{})
	// The idle timeout does not apply to a blocked client.
	c.nc.SetReadDeadline(time.Time{})
	go func() {
		defer close(exited)
		buf := make([]byte, 4096)
		for len(c.blk.readAhead) < maxReadAhead {
			n, err := c.nc.Read(buf)
			c.blk.readAhead = append(c.blk.readAhead, buf[:n]...)
			c.bufs.qbuf.Add(int64(n))
			c.s.stats.netIn.Add(int64(n))
			c.inBytes.Add(int64(n))
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					c.blk.readErr = err
					close(goneCh)
				}
				return
			}
		}
	}()
	return func() {
		c.nc.SetReadDeadline(aLongTimeAgo)
		<-exited
		// conn.awaitInput arms the idle deadline again, and checks for
		// shutdown after doing so.
		c.nc.SetReadDeadline(time.Time{})
	}, goneCh
}

// aLongTimeAgo is a read deadline that interrupts a read at once.
var aLongTimeAgo = time.Unix(1, 0)

// takeReadAhead hands the RESP reader input read while the client was
// blocked, then the read error that ended it; n is 0 and err nil when
// there is none.
func (c *conn) takeReadAhead(p []byte) (n int, err error) {
	if len(c.blk.readAhead) > 0 {
		n = copy(p, c.blk.readAhead)
		c.blk.readAhead = c.blk.readAhead[n:]
		if len(c.blk.readAhead) == 0 {
			c.blk.readAhead = nil
		}
		return n, nil
	}
	err, c.blk.readErr = c.blk.readErr, nil
	return 0, err
}

// parseTimeout parses a blocking command's timeout in seconds as the
// Redis 7.0 that CI runs does: a float read and multiplied by 1000 in long
// double (64-bit mantissa, as big.Float with precision 64 computes it),
// rounded up to whole milliseconds, so that 0.0001 waits 1 ms; 0 (and
// anything above -0.001) blocks forever. It replies itself on error.
func parseTimeout(arg []byte) (time.Duration, error) {
	f, ok := parseFloat(arg)
	if !ok {
		return 0, redisError("ERR timeout is not a float or out of range")
	}
	ms := new(big.Float).SetPrec(64)
	if !math.IsInf(f, 0) {
		if _, _, err := ms.Parse(string(arg), 0); err != nil {
			ms.SetFloat64(f)
		}
	}
	ms.Mul(ms, big.NewFloat(1000))
	// The conversion to a 64-bit integer yields the most negative one
	// on overflow (amd64), which Redis then finds negative.
	n, acc := ms.Int64()
	overflow := acc != big.Exact && (n == math.MaxInt64 || n == math.MinInt64)
	if acc == big.Below && ms.Sign() > 0 && !overflow {
		n++ // Int64 truncates; a positive fraction rounds up
	}
	if math.IsInf(f, 0) || overflow || n < 0 {
		return 0, redisError("ERR timeout is negative")
	}
	// Redis 7.0 takes any positive timeout; past ~292 years is forever.
	return time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, nil
}
