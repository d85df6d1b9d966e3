package server

import (
	"fmt"
	"runtime/debug"
)

// A handler must never panic: bad input gets an error reply. Should one
// panic anyway, the process survives it: the connection that ran the
// command is closed, the panic is logged with the command's name and stack
// and counted (INFO total_command_panics, /metrics
// lsmgo_command_panics_total). Runtime faults that are not panics (a
// concurrent map write, stack exhaustion) still end the process.

// handlerPanic carries a recovered panic out of EXEC to the connection
// loop, with the name and stack of the queued command that raised it.
type handlerPanic struct {
	cmd   string
	value any
	stack []byte
}

// recoverHandler is deferred by run. Inside EXEC it passes the panic on,
// so that EXEC's own deferred unlocks run and its batch is never applied;
// at the outermost run it ends the connection.
func (c *conn) recoverHandler(cmd *command) {
	c.depth--
	r := recover()
	if r == nil {
		return
	}
	p, ok := r.(*handlerPanic)
	if !ok {
		p = &handlerPanic{cmd: cmd.name, value: r, stack: debug.Stack()}
	}
	if c.depth > 0 {
		panic(p)
	}
	c.s.stats.panics.Add(1)
	c.s.log.Error("command panicked; closing its connection", "cmd", p.cmd, "client", c.id,
		"addr", c.nc.RemoteAddr().String(), "panic", fmt.Sprint(p.value), "stack", string(p.stack))
	// Whatever the handler had written to its batch, or a transaction to
	// its overlay, is dropped unapplied. Its stripe locks were released by
	// the handlers' deferred unlocks as the panic unwound, or, when it ran
	// deferring in a pipeline, by abandonPending.
	c.batch.Reset()
	c.abandonPending()
	c.exec = nil
	// The locks are gone already, so a pop in between could have read a
	// memo the handler moved; dropping them now keeps it to that window.
	c.s.ks.lostBatch()
	c.tx = nil
	// Close before anything is flushed: the buffered reply may be cut
	// mid-way, and a client must not read half a reply as a whole one.
	c.closeSocket()
	c.quit = true
}
