package server

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Pipelined writes share one commit. A write whose keys its table entry
// locates (command.deferrable) that arrives with more input already
// buffered, or behind writes already pending, runs with the connection in
// deferring mode: its handler runs as always, but conn.commit adds its
// write to the connection's pending batch instead of committing it, and
// its reply goes to a side buffer. The connection loop commits the pending
// batch when the batch of received commands ends (before it flushes and
// reads again), and execute does before any command that does not defer;
// only then are the deferred replies released, in order, or each
// replaced by the commit's error. So same-key writes in a pipeline cost
// one commit, and other connections' batches still meet them in group
// commit.
//
// While deferring, the pipeline holds the stripes of every key its
// commands locked, exclusively (shared for a blind write), until the
// commit: no other client writes them in between, so each command reads
// its keys as the pending batch leaves them (pendingReader: through an
// Overlay of the pending batch over a View taken once those stripes were
// held, or straight from the DB when the pending batch writes none of
// its stripes), as EXEC's commands do. A held stripe is only ever taken
// with a try (TryLock): a pipeline never waits while holding stripes, so
// it cannot deadlock with another. When a try fails, or the command asks
// for anything the pipeline cannot hold (every stripe, a blocking wait),
// it leaves deferring mode first: the pending writes commit, their stripes
// are released, and it runs as if it had not been deferred. This relies
// on handlers taking a command's locks in one call (conn.lock), which the
// stripes' ascending order requires anyway.

// Bounds of the pending batch; past them it commits, so that replies keep
// flowing, memory stays bounded, and other clients' writes wait for few
// held stripes.
const (
	maxPending          = 1024
	maxPendingBatchSize = 1 << 20
	maxPendingStripes   = 128
)

// pendingWrites are the connection's deferred writes and their replies.
type pendingWrites struct {
	batch  *lsmgo.Batch
	cmds   []*command // the commands that ran deferring, in order
	failed []bool     // whether each one replied with an error
	ends   []int      // where each one's reply ends in replies
	since  time.Time  // when the first of them started

	// excl and shared are the stripes held, exclusively and shared,
	// until the batch commits, as lists (to release) and as sets;
	// written is the set of the stripes of the keys the batch writes;
	// cmdExcl the running command's stripes (lockDeferred).
	excl, shared       lockSet
	exclSet, sharedSet stripeSet
	written            stripeSet
	cmdExcl            lockSet
	// whole is set while the batch holds keyLocks.whole shared, as every
	// holder of stripes does.
	whole bool

	// view and overlay show the pending batch over the state of a moment
	// when the stripes in covered were held (pendingReader).
	view    *lsmgo.View
	overlay *lsmgo.Overlay
	covered stripeSet

	// replies holds the deferred commands' replies, then the running
	// command's; wr writes into it and stands in for the connection's
	// writer, out, while a command runs deferring.
	replies bytes.Buffer
	wr, out *resp.Writer

	// open is set while a command runs deferring; left when it left
	// deferring mode but goes on writing its reply to the side buffer
	// (leaveDeferring).
	open, left bool
}

// add records cmd, started at start, which ran deferring and whose reply
// ends the side buffer.
func (p *pendingWrites) add(cmd *command, start time.Time, failed bool) {
	p.wr.Flush()
	if len(p.cmds) == 0 {
		p.since = start
	}
	p.cmds = append(p.cmds, cmd)
	p.failed = append(p.failed, failed)
	p.ends = append(p.ends, p.replies.Len())
}

// mayDefer reports whether cmd may run deferring: a deferrable command,
// with the connection in a state where it would run at once, inside a
// pipeline. execute makes its other checks before running it.
func (c *conn) mayDefer(cmd *command, args [][]byte) bool {
	return cmd.deferrable() && cmd.subs == nil && cmd.arityOK(len(args)) &&
		c.authed && c.perms().unrestricted && c.tx == nil && !c.subscribed() && c.replies == replyOn &&
		!c.s.pause.on.Load() && c.s.monitors.n.Load() == 0 &&
		(c.rd.Buffered() > 0 || len(c.pending.cmds) > 0)
}

// runDeferring runs cmd in deferring mode.
func (c *conn) runDeferring(cmd *command, args [][]byte) {
	p := &c.pending
	if p.wr == nil {
		p.wr = resp.NewWriter(&p.replies)
		p.batch = c.s.ks.newBatch()
	}
	p.wr.SetProtocol(c.wr.Protocol())
	p.out, c.wr = c.wr, p.wr
	p.open = true
	c.run(cmd, args)
	if p.left {
		// It left deferring mode: the pending replies went out then,
		// and its own follows them now.
		p.wr.Flush()
		p.left = false
		c.wr = p.out
		c.releaseReplies(p.replies.Len())
		return
	}
	p.open = false
	p.cmdExcl = p.cmdExcl[:0]
	c.wr = p.out
	if len(p.cmds) >= maxPending || p.batch.Len() >= maxPendingBatchSize || len(p.excl)+len(p.shared) >= maxPendingStripes {
		c.commitPending()
	}
}

// deferWrite adds c.batch to the pending batch when the running command
// is deferring, and reports whether it did.
func (c *conn) deferWrite() bool {
	p := &c.pending
	if !p.open {
		return false
	}
	// The stripes the command locked, and those of the keys its batch
	// names (a write that locked nothing, such as a blind one): a key
	// layout that userKeyOf does not know is still covered by its lock.
	for _, s := range p.cmdExcl {
		p.written.add(s)
	}
	locks := c.s.ks.locks
	c.batch.ForEachKey(func(k []byte) {
		if _, key, ok := userKeyOf(k); ok {
			p.written.add(locks.stripe(key))
		}
	})
	p.batch.Append(c.batch)
	c.batch.Reset()
	return true
}

// lockDeferred takes, for the deferring command, the stripes of every
// step-th key of keys that the pipeline does not hold yet, with a try
// each, and keeps them until the commit. It reports false, having left
// deferring mode, when a try fails or a stripe is held only shared.
func (c *conn) lockDeferred(keys [][]byte, step int) bool {
	p := &c.pending
	locks := c.s.ks.locks
	want := p.cmdExcl[:0]
	for i := 0; i < len(keys); i += step {
		want = want.add(locks, keys[i])
	}
	slices.Sort(want)
	want = slices.Compact(want)
	p.cmdExcl = want
	if !p.holdWhole(locks) {
		p.cmdExcl = p.cmdExcl[:0]
		c.leaveDeferring()
		return false
	}
	n := len(p.excl)
	for _, s := range want {
		switch {
		case p.exclSet.has(s):
			continue
		case !p.sharedSet.has(s) && locks.stripes[s].TryLock():
			p.excl = append(p.excl, s)
			p.exclSet.add(s)
			continue
		}
		// Give back what this call took: leaving commits the rest.
		for _, t := range p.excl[n:] {
			locks.stripes[t].Unlock()
			p.exclSet.remove(t)
		}
		p.excl = p.excl[:n]
		p.cmdExcl = p.cmdExcl[:0]
		c.leaveDeferring()
		return false
	}
	return true
}

// lockBlindDeferred takes key's stripe shared for a deferring blind write,
// unless the pipeline holds it already, and keeps it until the commit. It
// reports false, having left deferring mode, when the try fails.
func (c *conn) lockBlindDeferred(key []byte) bool {
	p := &c.pending
	locks := c.s.ks.locks
	s := locks.stripe(key)
	if !p.exclSet.has(s) && !p.sharedSet.has(s) {
		if !p.holdWhole(locks) || !locks.stripes[s].TryRLock() {
			c.leaveDeferring()
			return false
		}
		p.shared = append(p.shared, s)
		p.sharedSet.add(s)
	}
	return true
}

// holdWhole takes keyLocks.whole shared, with a try, unless the batch
// holds it already, and reports whether it holds it.
func (p *pendingWrites) holdWhole(locks *keyLocks) bool {
	if !p.whole {
		p.whole = locks.whole.TryRLock()
	}
	return p.whole
}

// pendingReader is conn.reader for a deferring command: the DB's newest
// state when the pending batch writes none of the command's stripes (they
// are held, so nothing else writes them either), else the pending batch
// over a view taken while all of them were held.
func (c *conn) pendingReader() lsmgo.Reader {
	p := &c.pending
	if p.batch.Count() == 0 || (len(p.cmdExcl) > 0 && !p.written.hasAny(p.cmdExcl)) {
		return c.s.ks.latest()
	}
	if p.view == nil || !p.covered.hasAll(p.cmdExcl) {
		p.closeView()
		v, err := c.s.ks.newView()
		if err != nil {
			return c.s.ks.latest() // the DB is closing: its reads fail
		}
		p.view, p.overlay = v, v.Overlay(p.batch)
		p.covered = p.exclSet
	}
	return p.overlay
}

func (p *pendingWrites) closeView() {
	if p.view != nil {
		p.view.Close()
		p.view, p.overlay = nil, nil
	}
}

// leaveDeferring ends deferring mode for the running command, if it is in
// it: the pending writes commit and their replies (and any messages
// published meanwhile) go out, and the command goes on as an ordinary
// one. Its reply still goes to the side buffer, which runDeferring
// releases when it ends: a handler may hold on to the writer it started
// with (a method value such as c.wr.NullArray). It is called where the
// command holds no stripe of its own yet.
func (c *conn) leaveDeferring() {
	p := &c.pending
	if !p.open {
		return
	}
	p.wr.Flush()
	p.open, p.left = false, true
	// commitPending releases the pending replies only: the command's
	// reply so far stays in the side buffer, after them.
	c.wr = p.out
	c.commitPending()
	c.deliverPushes(c.inputEnd())
	c.wr = p.wr
}

// commitPending commits the pending batch, if any, releases its stripes
// and writes the replies of its commands, or the commit's error in place
// of each.
func (c *conn) commitPending() {
	p := &c.pending
	if len(p.cmds) == 0 && len(p.excl) == 0 && len(p.shared) == 0 {
		// A first command whose stripe try failed may have left the
		// whole-keyspace lock held shared: its non-deferred run takes it
		// again, and a holder left behind would stop every script,
		// FLUSHDB and SWAPDB, and every writer queued behind them.
		p.releaseStripes(c.s.ks.locks)
		return
	}
	var err error
	if p.batch.Count() > 0 || p.batch.Err() != nil {
		err = c.apply(p.batch)
	}
	p.releaseStripes(c.s.ks.locks)
	now := time.Now()
	c.mark = now
	if len(p.cmds) > 0 {
		if err == nil {
			c.releaseReplies(p.ends[len(p.ends)-1])
		} else {
			// No reply may claim a write, or a state read through
			// the pending batch, that did not happen.
			c.dropNotes()
			msg := engineError(err)
			for range p.cmds {
				c.s.errors.count(msg)
				c.wr.Error(msg)
			}
			p.replies.Next(p.ends[len(p.ends)-1])
		}
	}
	for i, cmd := range p.cmds {
		// Without arguments: they are gone, and the slow log skips it.
		c.finished(cmd, nil, now.Sub(p.since), err != nil || p.failed[i])
	}
	p.batch.Reset()
	clear(p.cmds)
	p.cmds, p.failed, p.ends = p.cmds[:0], p.failed[:0], p.ends[:0]
	c.flushNotes() // after the cmds are gone: the writes committed
	// The clients blocked on keys these writes filled are served now
	// that they have committed.
	if len(c.blk.ready) > 0 {
		c.s.blocked.serveReady(c)
	}
}

// releaseStripes closes the view and releases every stripe the pending
// batch held.
func (p *pendingWrites) releaseStripes(locks *keyLocks) {
	p.closeView()
	p.excl.each(locks, (*sync.RWMutex).Unlock)
	p.shared.each(locks, (*sync.RWMutex).RUnlock)
	if p.whole {
		locks.whole.RUnlock()
		p.whole = false
	}
	p.excl, p.shared, p.cmdExcl = p.excl[:0], p.shared[:0], p.cmdExcl[:0]
	p.exclSet, p.sharedSet, p.written, p.covered = stripeSet{}, stripeSet{}, stripeSet{}, stripeSet{}
}

// stripeSet is a set of stripes as a bitmap: 128 bytes.
type stripeSet [numStripes / 64]uint64

func (s *stripeSet) add(i uint32)      { s[i/64] |= 1 << (i % 64) }
func (s *stripeSet) remove(i uint32)   { s[i/64] &^= 1 << (i % 64) }
func (s *stripeSet) has(i uint32) bool { return s[i/64]&(1<<(i%64)) != 0 }

// hasAny reports whether the set holds any of list.
func (s *stripeSet) hasAny(list lockSet) bool {
	return slices.ContainsFunc(list, s.has)
}

// hasAll reports whether the set holds every one of list.
func (s *stripeSet) hasAll(list lockSet) bool {
	return !slices.ContainsFunc(list, func(i uint32) bool { return !s.has(i) })
}

// releaseReplies moves the first n bytes of the side buffer to the
// connection's writer.
func (c *conn) releaseReplies(n int) {
	if n > 0 {
		c.wr.Raw(c.pending.replies.Next(n))
	}
	if c.pending.replies.Len() == 0 {
		c.pending.replies.Reset()
	}
}

// abandonPending commits the pending writes and forgets their replies,
// after a handler panicked: the connection closes without answering them.
// The writes are those of the commands before the panicking one, and
// whatever it committed itself before it panicked, all of which a
// connection that does not defer would have applied by then too.
func (c *conn) abandonPending() {
	p := &c.pending
	if p.open || p.left {
		p.open, p.left = false, false
		c.wr = p.out
	}
	if p.batch != nil && p.batch.Count() > 0 {
		if err := c.apply(p.batch); err != nil {
			c.s.log.Warn("the writes pipelined before a panicking command failed", "client", c.id, "err", err)
		}
		p.batch.Reset()
	}
	p.releaseStripes(c.s.ks.locks)
	clear(p.cmds)
	p.cmds, p.failed, p.ends = p.cmds[:0], p.failed[:0], p.ends[:0]
	p.replies.Reset()
	c.dropNotes()
}
