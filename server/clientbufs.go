package server

import (
	"sync/atomic"
	"unsafe"
)

// CLIENT LIST's buffer fields (qbuf, qbuf-free, argv-mem, multi-mem, obl,
// oll, omem, tot-mem), as Redis 7.0 defines them. A connection's own
// buffers belong to its goroutine, so it publishes what other clients see
// each time it waits for input or blocks (publishBuffers): an idle or
// blocked client's figures are exact, a busy one's are as of its last
// wait. The client asking sees its own buffers as they are.

// clientBufs is the published part.
type clientBufs struct {
	qbuf, qbufFree, argvMem, obl, wbuf atomic.Int64
	// multiMem is kept current by MULTI's queueing (queue, discard).
	multiMem atomic.Int64
	// sub is the connection's Pub/Sub queue once it has one (ensureSub).
	sub atomic.Pointer[subscriber]
	// cmd and args are the top-level command the connection runs, which
	// a blocking command publishes (publishBlocked); only the
	// connection's goroutine touches them.
	cmd  *command
	args [][]byte
}

// bufFields are one client's figures.
type bufFields struct {
	qbuf, qbufFree, argvMem, multiMem, obl, oll, omem, totMem int64
}

// queuedArgCost is what a queued argument costs beyond its bytes: its
// slice header (Redis counts a pointer).
const queuedArgCost = int64(unsafe.Sizeof([]byte(nil)))

// publishBuffers publishes the buffers of a connection about to wait:
// the input of a partly received command, and the arguments of it that
// have arrived whole or, while blocked, those of the blocking command.
func (c *conn) publishBuffers(argv int64) {
	b := &c.bufs
	b.qbuf.Store(int64(c.rd.Buffered()))
	b.qbufFree.Store(int64(c.rd.Free()))
	b.argvMem.Store(argv + int64(c.rd.PartialArgs()))
	b.obl.Store(int64(c.wr.Buffered()))
	b.wbuf.Store(int64(c.wr.Size()))
}

// publishBlocked publishes what a client about to block shows, as Redis
// does for one: the blocking command as its cmd, its arguments as
// argv-mem (Redis keeps them until the command ends), and as qbuf the
// input after it, which grows as the client sends more while it waits
// (readAheadWhileBlocked).
func (c *conn) publishBlocked() {
	if c.bufs.cmd != nil {
		c.lastCmd.Store(c.bufs.cmd)
	}
	c.publishBuffers(argBytes(c.bufs.args))
}

// argBytes sums the lengths of args.
func argBytes(args [][]byte) int64 {
	var n int64
	for _, a := range args {
		n += int64(len(a))
	}
	return n
}

// bufferFields returns c's figures as self, running args, sees them.
func (c *conn) bufferFields(self *conn, args [][]byte) bufFields {
	b := &c.bufs
	var f bufFields
	wbuf := b.wbuf.Load()
	if c == self {
		f.qbuf, f.qbufFree = int64(c.rd.Held()), int64(c.rd.Free())
		f.argvMem = argBytes(args)
		f.obl, wbuf = int64(c.wr.Buffered()), int64(c.wr.Size())
	} else {
		f.qbuf, f.qbufFree = b.qbuf.Load(), b.qbufFree.Load()
		f.argvMem, f.obl = b.argvMem.Load(), b.obl.Load()
	}
	if c.state.Load()&stateMulti != 0 {
		f.multiMem = b.multiMem.Load()
	}
	if sub := b.sub.Load(); sub != nil {
		sub.mu.Lock()
		f.oll, f.omem = int64(len(sub.marks)), int64(len(sub.queue)+sub.inflight)
		sub.mu.Unlock()
	}
	// The query buffer as maxmemory-clients accounts it (its whole
	// size), the reply buffer, the queued transaction and messages. The
	// arguments alias the query buffer, so they add nothing.
	f.totMem = c.mem.Load() + wbuf + f.multiMem + f.omem
	return f
}
