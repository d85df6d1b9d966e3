package server

import (
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// The command-execution path: every command a client sends passes through
// conn.execute, which checks it (known, arity, subcommand, AUTH, RESP2
// subscriber mode), queues it inside MULTI, or runs it through conn.run,
// which calls the handler and accounts for it (statistics, slow log).
// Handlers read through conn.reader and write through conn.batch and
// conn.commit; EXEC (tx.go) and pipelining change what those mean without
// the handlers knowing.

// execute runs one command and writes its reply. It knows commands only
// by their table entries: the pipelined fast paths are chosen by an
// entry's pipe flags.
func (c *conn) execute(args [][]byte) {
	cmd := lookup(commands, &c.nameBuf, args[0])
	if cmd == nil || cmd.pipe&pipeView == 0 {
		c.closeView()
	}
	deferring := cmd != nil && c.mayDefer(cmd, args)
	if !deferring {
		c.commitPending()
		// Messages published before this command was read go out
		// before its reply, as in Redis, where PUBLISH fills the
		// subscribers' output buffers at once: the connection may have
		// read the command before the publisher's wake-up reached it.
		c.deliverPushes(c.inputEnd())
	}
	defer c.unmuteReplies(c.muteReplies())
	if cmd == nil {
		c.s.metrics.unknownCommands.Inc()
		c.reject(nil, unknownCommand(args))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.reject(cmd, wrongArity(cmd))
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		sub := lookup(cmd.subs, &c.nameBuf, args[1])
		if sub == nil {
			c.reject(nil, unknownSubcommand(cmd.name, args[1]))
			return
		}
		if !sub.arityOK(len(args)) {
			c.reject(sub, wrongArity(sub))
			return
		}
		cmd = sub
		if cmd.pipe&pipeView == 0 {
			c.closeView()
		}
	}
	if !c.authed && cmd.flags&flagNoAuth == 0 {
		c.reject(cmd, msgNoAuth)
		return
	}
	if p := c.perms(); !p.unrestricted {
		if msg := c.aclRefusal(p, cmd, args, c.aclContext()); msg != "" {
			c.reject(cmd, msg)
			return
		}
	}
	if c.refusedBusy(cmd) {
		return
	}
	if cmd.flags&flagWrite != 0 || c.tx != nil && isExec(cmd) && c.tx.writes() {
		if msg := c.s.writeRefusal(); msg != "" {
			c.reject(cmd, msg)
			return
		}
	}
	if cmd.pipe&pipeSubscribed == 0 && c.subscribed() && c.wr.Protocol() == 2 {
		c.reject(cmd, msgSubscribedOnly(cmd))
		return
	}
	if c.tx != nil && cmd.flags&flagNoMulti != 0 {
		c.reject(cmd, "ERR Command not allowed inside a transaction")
		return
	}
	// Fed as received, as Redis does: a queued command when queued,
	// EXEC before the commands it runs.
	c.feedMonitors(cmd, args, "")
	if c.tx != nil && cmd.pipe&pipeNoQueue == 0 {
		c.queue(cmd, args)
		c.mark = time.Now()
		c.lastActive.Store(c.mark.UnixNano())
		return
	}
	c.s.pause.wait(cmd, c.s.done, c.detach)
	if deferring {
		c.runDeferring(cmd, args)
		return
	}
	if cmd.pipe&pipeView != 0 && c.view == nil && c.rd.Buffered() > 0 {
		// Without a view (the DB closing) reads go to the DB.
		_ = c.openView()
	}
	c.run(cmd, args)
	// The clients blocked on keys this command filled are served once it
	// has committed: inside EXEC, once EXEC has.
	if len(c.blk.ready) > 0 && !c.inExec() {
		c.s.blocked.serveReady(c)
	}
}

// run runs cmd, whose checks have passed, and accounts for it.
func (c *conn) run(cmd *command, args [][]byte) {
	start := c.clock()
	c.failed = false
	c.depth++
	defer c.recoverHandler(cmd)
	c.useDB()
	c.touchKeys(cmd, args)
	if c.trk != nil {
		c.beforeTracked(cmd, args)
	}
	if c.depth == 1 {
		c.bufs.cmd, c.bufs.args = cmd, args
	}
	if err := cmd.run(c, cmd, args); err != nil {
		c.replyErr(err)
	}
	if c.trk != nil {
		c.afterTracked(cmd)
	}
	if c.latePin {
		c.latePin = false
		c.closeView()
	}
	c.releaseReads()
	if c.depth == 1 {
		c.doneReading()
		c.bufs.args = nil // they alias the input buffer
	}
	now := time.Now()
	c.mark = now
	if c.pending.open {
		c.pending.add(cmd, start, c.failed)
		return
	}
	c.finished(cmd, args, now.Sub(start), c.failed)
	c.flushNotes()
}

// reader is what the running command reads through: inside EXEC, the
// transaction's state with its writes so far on top; for a write deferred
// in a pipeline, the state with the pending writes on top
// (pendingReader); the pipeline's view when the command is a pipeView
// read inside a pipeline; else the DB's newest state.
func (c *conn) reader() lsmgo.Reader {
	if c.pending.open {
		return c.pendingReader()
	}
	if c.exec != nil {
		return c.exec.overlay
	}
	if c.view != nil {
		return c.view
	}
	c.useDBToRead()
	return c.s.ks.latest()
}

// closeView releases the connection's pipelined-read view, if any.
func (c *conn) closeView() {
	if c.view != nil {
		c.view.Close()
		c.view, c.viewDBs = nil, nil
	}
}

// clock returns the start time of the command about to run.
func (c *conn) clock() time.Time {
	if c.mark.IsZero() {
		c.mark = time.Now()
	}
	return c.mark
}

// inExec reports whether the running command runs inside EXEC: a
// blocking command must not block then, but answer as on timeout.
func (c *conn) inExec() bool { return c.exec != nil }

// reject answers a command that does not run: cmd, when given, counts it
// among its rejected calls (Redis counts no command for an unknown command
// or subcommand). Inside MULTI it fails the transaction. It still counts
// as activity for the idle timeout.
func (c *conn) reject(cmd *command, msg string) {
	if cmd != nil {
		c.s.cmdStats[cmd.id].rejected.Add(1)
	}
	if len(c.pending.cmds) > 0 {
		// A command that would have deferred: the replies pending
		// before it go first.
		c.commitPending()
		c.deliverPushes(c.inputEnd())
	}
	c.s.errors.count(msg)
	if c.tx != nil {
		c.rejectQueued(cmd, msg)
	} else {
		c.wr.Error(msg)
	}
	c.mark = time.Now()
	c.lastActive.Store(c.mark.UnixNano())
}

// finished accounts for a command that took d: its tally and the slow
// log. Staged pipelined writes pass nil args and skip the slow log, whose
// arguments would no longer be available.
func (c *conn) finished(cmd *command, args [][]byte, d time.Duration, failed bool) {
	c.lastRun = cmd
	cfg := c.s.config()
	c.tally.since(c.s.stats.epoch.Load())
	if c.tally.add(cmd, d, failed, cfg.LatencyTracking) {
		c.publish()
	}
	if args != nil && cfg.SlowlogSlowerThan >= 0 && d >= cfg.SlowlogSlowerThan {
		c.s.slowlog.add(c, redactArgs(cmd, args), d, cfg.SlowlogMaxLen)
	}
	// A script's commands are inside its sample, as in Redis.
	if cfg.LatencyMonitorThreshold > 0 && d >= cfg.LatencyMonitorThreshold && !c.inScript() {
		c.s.latency.addCommand(cmd, d)
	}
}

// Reply helpers. Every error reply goes through fail so that the command
// is counted as failed.

func (c *conn) fail(msg string) {
	c.failed = true
	c.s.errors.count(msg)
	c.wr.Error(msg)
}

func (c *conn) ok() { c.wr.SimpleString("OK") }

// replyErr writes err, which must be non-nil, as a command error.
func (c *conn) replyErr(err error) { c.fail(engineError(err)) }

// commit commits and empties the connection's batch. Inside EXEC the batch
// joins the transaction's, which commits at the end of EXEC; in a pipeline
// it may join the pending batch (deferWrite), which the connection loop
// commits before any of its replies leaves.
func (c *conn) commit() error {
	if c.deferWrite() {
		return nil
	}
	if c.inExec() {
		c.exec.batch.Append(c.batch)
		c.batch.Reset()
		return c.exec.batch.Err()
	}
	err := c.apply(c.batch)
	c.batch.Reset()
	return err
}

// pinLate opens a view for the rest of the running command when it reads
// straight from the DB (no view, transaction, pipeline batch or lock of
// its own), and reports whether it did; run closes it.
func (c *conn) pinLate() bool {
	if c.view != nil || c.inExec() || c.pending.open || len(c.stripes) > 0 {
		return false
	}
	if c.openView() != nil {
		return false
	}
	c.useDB()
	c.latePin = true
	return true
}

// pin makes the running read command see one engine state through all
// its reads (metadata, then elements), unless it already reads through the
// pipeline's view; the caller defers the returned func. Without a view
// (the DB closing) reads go to the DB.
func (c *conn) pin() func() {
	if c.view != nil || c.inExec() || c.pending.open {
		return func() {}
	}
	if c.openView() != nil {
		return func() {}
	}
	c.useDB()
	return c.closeView
}
