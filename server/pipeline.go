package server

import (
	"bytes"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Pipelined writes share one commit. A command flagged pipeDefer that
// arrives with more input already buffered (or behind writes already
// pending) runs with the connection in deferring mode: its handler runs
// as always, but apply adds its write to the connection's pending batch
// instead of committing it, lockBlind leaves the stripe for the commit to
// hold, and its reply goes to a side buffer. The connection loop commits
// the pending batch when the batch of received commands ends (before it
// flushes and reads again), and execute does before any command that
// does not defer; only then are the deferred replies released, in order,
// or replaced by the commit's error. A deferring handler that asks for
// anything else (an exclusive lock, a read) leaves deferring mode first:
// the pending writes commit and it runs as if it had not been deferred.
//
// Today only blind writes carry pipeDefer (SET without NX, XX, GET or
// KEEPTTL). A write that reads, or holds an exclusive lock, joins the
// same mechanism by reading through an Overlay of the pending batch and
// holding its stripes until the commit, as EXEC does.

// Bounds of the pending batch; past them it commits, so that replies keep
// flowing and memory stays bounded.
const (
	maxPending          = 1024
	maxPendingBatchSize = 1 << 20
)

// pendingWrites are the connection's deferred writes and their replies.
type pendingWrites struct {
	batch   *lsmgo.Batch
	cmds    []*command // the commands whose writes batch holds
	ends    []int      // where each one's reply ends in replies
	since   time.Time  // when the first of them started
	stripes lockSet    // held shared while batch commits

	// replies holds the deferred commands' replies, then the running
	// command's; wr writes into it and stands in for the connection's
	// writer, out, while a command runs deferring.
	replies bytes.Buffer
	wr, out *resp.Writer

	// open is set while a command runs deferring; deferred once its
	// write has joined batch.
	open, deferred bool
}

// add records cmd, started at start, whose write has joined the batch
// and whose reply ends the side buffer.
func (p *pendingWrites) add(cmd *command, start time.Time) {
	p.wr.Flush()
	if len(p.cmds) == 0 {
		p.since = start
	}
	p.cmds = append(p.cmds, cmd)
	p.ends = append(p.ends, p.replies.Len())
}

// mayDefer reports whether cmd may run deferring: a pipeDefer command
// that passes every check execute makes, inside a pipeline.
func (c *conn) mayDefer(cmd *command, args [][]byte) bool {
	return cmd.pipe&pipeDefer != 0 && cmd.subs == nil && cmd.arityOK(len(args)) &&
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
	if !p.open {
		return // it left deferring mode
	}
	p.wr.Flush()
	p.open = false
	c.wr = p.out
	if len(p.ends) == 0 || p.ends[len(p.ends)-1] != p.replies.Len() {
		// It replied without deferring a write (a syntax error, a value
		// too big): its reply follows the pending ones.
		c.commitPending()
		c.deliverPushes(c.inputEnd())
		c.releaseReplies(p.replies.Len())
	}
	if len(p.cmds) >= maxPending || p.batch.Len() >= maxPendingBatchSize {
		c.commitPending()
	}
}

// deferWrite adds c.batch to the pending batch when the running command
// is deferring, and reports whether it did. A batch that would pass the
// bound commits the pending writes first and is applied as usual.
func (c *conn) deferWrite() bool {
	p := &c.pending
	if !p.open {
		return false
	}
	if len(p.cmds) > 0 && p.batch.Len()+c.batch.Len() > maxPendingBatchSize {
		c.leaveDeferring()
		return false
	}
	p.batch.Append(c.batch)
	c.batch.Reset()
	p.deferred = true
	return true
}

// leaveDeferring ends deferring mode for the running command, if it is in
// it: the pending writes commit, and the command goes on as an ordinary
// one, its reply so far (and any messages published meanwhile) after the
// pending replies.
func (c *conn) leaveDeferring() {
	p := &c.pending
	if !p.open {
		return
	}
	p.wr.Flush()
	p.open, p.deferred = false, false // a write it deferred commits now
	c.wr = p.out
	c.commitPending()
	c.deliverPushes(c.inputEnd())
	c.releaseReplies(p.replies.Len())
}

// commitPending commits the pending batch, if any, and writes the replies
// of its commands, or the commit's error in place of each.
func (c *conn) commitPending() {
	p := &c.pending
	if len(p.cmds) == 0 {
		return
	}
	locks := c.s.ks.locks
	held := p.stripes.lockShared(locks)
	err := c.apply(p.batch)
	held.unlockShared(locks)
	now := time.Now()
	c.mark = now
	if err == nil {
		c.releaseReplies(p.ends[len(p.ends)-1])
	} else {
		c.dropNotes()
		msg := engineError(err)
		for range p.cmds {
			c.s.errors.count(msg)
			c.wr.Error(msg)
		}
		p.replies.Next(p.ends[len(p.ends)-1])
	}
	for _, cmd := range p.cmds {
		// Without arguments: they are gone, and the slow log skips it.
		c.finished(cmd, nil, now.Sub(p.since), err != nil)
	}
	p.batch.Reset()
	clear(p.cmds)
	p.cmds, p.ends = p.cmds[:0], p.ends[:0]
	p.stripes = p.stripes[:0]
	if cap(p.stripes) > maxPending {
		p.stripes = nil
	}
	c.flushNotes() // after the cmds are gone: the writes committed
	// The clients blocked on keys these writes filled are served now
	// that they have committed.
	if len(c.blk.ready) > 0 {
		c.s.blocked.serveReady(c)
	}
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

// dropPending forgets the pending writes and their replies, unapplied:
// after a handler panicked, the connection closes without answering them.
func (c *conn) dropPending() {
	p := &c.pending
	if p.open {
		p.open, p.deferred = false, false
		c.wr = p.out
	}
	if p.batch != nil {
		p.batch.Reset()
	}
	clear(p.cmds)
	p.cmds, p.ends, p.stripes = p.cmds[:0], p.ends[:0], p.stripes[:0]
	p.replies.Reset()
	c.dropNotes()
}
