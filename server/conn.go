package server

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/netutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

var (
	errQueryBufferLimit = errors.New("client query buffer limit exceeded")
	errShuttingDown     = errors.New("server shutting down")
)

// conn is one client connection, served by one goroutine. Fields without a
// comment belong to that goroutine alone; CLIENT LIST reads the others
// from other goroutines.
type conn struct {
	s *Server
	// nc is the socket; while the event loop serves the connection it is
	// closed and raw holds the socket (loop_linux.go). raddr and laddr
	// are its addresses, for other goroutines.
	nc           net.Conn
	raddr, laddr net.Addr
	id           uint64
	created      time.Time
	rd           *resp.Reader
	wr           *resp.Writer

	authed bool
	// user is the ACL user the connection runs as (CLIENT LIST reads
	// it); aclKeys is scratch space for the keys of a checked command.
	user    atomic.Pointer[aclUser]
	aclKeys []keyRef
	quit    bool
	// failed records that the running command replied with an error.
	failed bool

	// info is read by CLIENT LIST and INFO from other goroutines.
	info struct {
		sync.Mutex
		name, libName, libVer string
		db                    int
	}
	// lastCmd and lastActive (unix nanoseconds) describe the last
	// completed command as of the last publish.
	lastCmd    atomic.Pointer[command]
	lastActive atomic.Int64
	proto      atomic.Int32

	// tally counts the commands run since the last publish; lastRun is the
	// last of them.
	tally   tally
	lastRun *command
	// mark is when the previous command finished: the start of the next
	// one, whose latency then includes the parsing of its arguments. It is
	// zero after every network read, so that waiting for input never
	// counts as latency. Reusing it saves a clock read per pipelined
	// command.
	mark time.Time

	// batch collects the running command's writes until apply.
	batch *lsmgo.Batch
	// durable is the durability of the connection's newest write, which
	// every reply byte waits for (durable.go).
	durable lsmgo.Pending
	// pending holds pipelined writes that have run but not committed
	// (pipeline.go).
	pending pendingWrites
	stripes lockSet
	// latePin is set while the running command reads through a view
	// pinLate opened; run closes it.
	latePin bool

	// view serves a run of pipelined pipeView reads from one pinned
	// engine state (see reader). Every other command, and every network
	// read, closes it first: a command must see this connection's own
	// writes, and a command received later must see writes acknowledged
	// meanwhile.
	view *lsmgo.View
	// viewDBs is the map of databases of view's moment (openView).
	viewDBs *dbMap
	// reading is the map of databases a read without locks uses, seen by
	// SWAPDB and FLUSHDB, which wait for it (databases.go); announced
	// says it is set.
	reading   atomic.Pointer[dbMap]
	announced bool

	// blk is the connection's part in blocking commands (blocking.go).
	blk blockState
	// unblocker is where CLIENT UNBLOCK reaches the connection while it
	// is blocked (unblock.go).
	unblocker unblockPoint
	// tx is the transaction MULTI opened, nil outside one; exec is set
	// while EXEC runs its commands (see tx.go). watched lists the keys
	// WATCH named; watchDirty is set, by any connection's write, once
	// one of them changed.
	// sub is the connection's Pub/Sub state, nil until it first
	// subscribes, monitors, tracks or speaks RESP3 (pubsub.go).
	sub *subscriber
	// trk is the connection's tracking state, nil while tracking is off
	// (tracking.go).
	trk *tracker

	tx   *transaction
	exec *execState
	// depth counts the runs in progress: 2 while EXEC runs a queued
	// command. recoverHandler acts at depth 0.
	depth      int
	watched    []watchedKey
	watchDirty atomic.Bool

	// db is the selected database (SELECT); scratch builds engine keys
	// and values in its namespace (useDB).
	db      int
	scratch keyBuf

	// replies is CLIENT REPLY's mode; unmuted is the connection's writer
	// while a command's replies are silenced (cmd_client.go).
	replies replyMode
	unmuted *resp.Writer
	// state holds the flags CLIENT LIST shows (stateMulti …); queued,
	// nsub and npsub its multi, sub and psub counts.
	state               atomic.Uint32
	queued, nsub, npsub atomic.Int64

	// notes are the keyspace events of writes not yet committed
	// (notify.go).
	notes []keyEvent
	// notesSeq is the last sequence number the writes of the waiting
	// notes committed at, while replicas want events (replnotify.go).
	notesSeq uint64

	elemBuf []byte // collection element keys under construction
	// vals holds the values of the running command's collection point
	// reads (pointread.go); hits and found are getElems' results.
	vals    []byte
	hits    [][]byte
	found   []bool
	nameBuf []byte // lower-cased command names

	// mem is the size of this client's query buffer, as accounted to the
	// server's maxmemory-clients bound; evicting is set when the bound
	// chose this client to close.
	mem      atomic.Int64
	evicting atomic.Bool
	// bufs is what CLIENT LIST shows of the buffers (clientbufs.go).
	bufs clientBufs
	// inBytes counts the input read from the socket, in the connection's
	// goroutine or while blocked; Pub/Sub orders messages by it (push).
	inBytes atomic.Int64

	// loop is the event loop serving the connection, nil while a
	// goroutine serves it (loop_linux.go). Only the connection's server
	// changes it and nc, under modeMu, which closeSocket and interrupt
	// take to reach the connection the right way; closeReq says a close
	// was asked for, which the loop carries out if it serves the
	// connection or takes it later. detached tells the loop's turn that the
	// running command handed the connection to the goroutine running it;
	// raw is the loop's socket.
	modeMu   sync.Mutex
	loop     *eventLoop
	closeReq atomic.Bool
	detached bool
	raw      rawIO
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	cfg := s.config()
	c := &conn{s: s, nc: nc, raddr: nc.RemoteAddr(), laddr: nc.LocalAddr(), id: id, created: time.Now(), batch: s.ks.newBatch()}
	c.rd = resp.NewReader(connReader{c}, resp.Limits{MaxBulkLen: cfg.ProtoMaxBulkLen, MaxMultibulkLen: cfg.MaxMultibulkLen})
	c.wr = resp.NewWriter(countingWriter{c})
	c.user.Store(s.acl.byDefault)
	c.setAuthed(s.acl.authenticates())
	c.proto.Store(2)
	c.lastActive.Store(c.created.UnixNano())
	return c
}

// connReader is the io.Reader under the RESP reader: the input read while
// the client was blocked (blocking.go), then the network. The connection
// loop (serve) decides when it is called.
type connReader struct{ c *conn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	if n, err := c.takeReadAhead(p); n > 0 || err != nil {
		return n, err
	}
	var n int
	var err error
	if c.loop != nil {
		n, err = c.raw.readOnce(p)
	} else {
		n, err = c.nc.Read(p)
	}
	c.s.stats.netIn.Add(int64(n))
	c.inBytes.Add(int64(n))
	return n, err
}

// countingWriter counts reply bytes for INFO and /metrics. It publishes
// the connection's tally first, so that a client that has read a reply
// finds its command counted.
type countingWriter struct{ c *conn }

func (w countingWriter) Write(p []byte) (int, error) {
	if err := w.c.awaitDurable(); err != nil {
		return 0, err
	}
	w.c.publish()
	c := w.c
	if c.loop == nil {
		n, err := c.nc.Write(p)
		c.s.stats.netOut.Add(int64(n))
		return n, err
	}
	n, err := c.raw.writeAll(p)
	if err == errWouldBlock {
		// The client is not reading fast enough: wait for it in a
		// goroutine, with what remains.
		c.detach()
		var m int
		m, err = c.nc.Write(p[n:])
		n += m
	}
	c.s.stats.netOut.Add(int64(n))
	return n, err
}

// serveOn is the connection loop, run in the calling goroutine until the
// connection ends (the event loop calls it to hand a connection over). It
// runs every command the client has sent so far, in order; when the input
// buffered holds no complete command, the batch of received commands has
// ended: it commits the writes they left pending, delivers Pub/Sub
// messages, flushes the replies, and only then may block on the network.
// That is how a pipeline gets one write(2) per batch of commands without
// a reply ever waiting for later input, or leaving before its write is in
// the WAL.
func (c *conn) serveOn() {
	for !c.quit && !c.s.cutoff.Load() {
		args, ok, err := c.rd.ReadBuffered()
		if ok {
			c.execute(args)
			continue
		}
		if err == nil {
			err = c.endBatch()
		}
		if err == nil && c.reattach() {
			return
		}
		if err == nil {
			err = c.awaitInput()
		}
		if err != nil {
			c.finish(err)
			return
		}
	}
	c.finish(nil)
}

// reattach gives the connection back to the event loop between two
// batches, once nothing keeps it with its goroutine any more (it waited,
// or its client read slowly), so that the loop serves every plain client
// in the order their input arrived, as Redis' one thread does.
func (c *conn) reattach() bool {
	l := c.s.loop
	if l == nil || c.sub != nil || c.blk.readAhead != nil || c.blk.readErr != nil ||
		c.s.closing.Load() || c.s.config().AppendFsync == "always" {
		return false
	}
	return l.add(c)
}

// finish ends the connection: after a read error err, or when it quit or
// was cut off.
func (c *conn) finish(err error) {
	if err != nil {
		c.readFailed(err)
	} else {
		c.commitPending()
		c.wr.Flush()
	}
	c.close()
}

// closeSocket closes the connection's socket from any goroutine, which
// ends the connection: its goroutine's next read or write fails; the
// event loop is asked to close it between two batches.
func (c *conn) closeSocket() {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	c.closeReq.Store(true) // for eventLoop.add, if the loop takes it now
	if c.loop != nil {
		c.loop.kick(c)
		return
	}
	c.nc.Close()
}

// interrupt makes the connection look at the server's state (shutdown)
// soon: a goroutine waiting for input wakes; the loop gives it a turn.
func (c *conn) interrupt() {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	if c.loop != nil {
		c.loop.kick(c)
		return
	}
	c.nc.SetReadDeadline(time.Now())
}

// endBatch finishes the commands received so far: their pending writes
// commit, the messages published before the input read so far arrived
// go out (readEnd), and the replies are flushed.
func (c *conn) endBatch() error {
	c.closeView()
	c.commitPending()
	c.deliverPushes(c.readEnd())
	if err := c.wr.Flush(); err != nil {
		return err
	}
	c.flushedPushes()
	c.publish()
	c.mark = time.Time{}
	return nil
}

// readEnd is the input position every complete command read has run
// to: between batches, all the input read but not handed over from a
// blocked read-ahead. Pub/Sub orders messages by it (push).
func (c *conn) readEnd() int64 {
	return c.inBytes.Load() - int64(len(c.blk.readAhead)) + 1
}

// idleChecks enforces the query buffer limit and shutdown between two
// batches: before a goroutine or the event loop waits for input.
func (c *conn) idleChecks() error {
	if int64(c.rd.Buffered()) >= c.s.config().QueryBufferLimit {
		return errQueryBufferLimit
	}
	if c.s.closing.Load() {
		return errShuttingDown
	}
	return nil
}

// awaitInput reads more input from the client, or returns nil without
// reading when messages wait to be delivered (the loop's endBatch sends
// them). It arms the idle timeout and enforces the query buffer limit and
// shutdown first.
func (c *conn) awaitInput() error {
	if c.blk.readAhead == nil && c.blk.readErr == nil {
		cfg := c.s.config()
		if int64(c.rd.Buffered()) >= cfg.QueryBufferLimit {
			return errQueryBufferLimit
		}
		// A subscriber is exempt from the idle timeout, as in Redis; its
		// deadline is reset each time, since publishers move it to wake
		// it (pubsub.go).
		switch {
		case cfg.Timeout > 0 && !c.subscribed():
			c.nc.SetReadDeadline(time.Unix(0, c.lastActive.Load()).Add(cfg.Timeout))
		case c.sub != nil:
			c.nc.SetReadDeadline(time.Time{})
		}
		// Checked after arming the deadline: see Server.shutdown.
		if c.s.closing.Load() {
			return errShuttingDown
		}
		// Checked after arming the deadline too: a message queued
		// after this check moves the deadline after this arming.
		if c.readyPushes(c.readEnd()) {
			return nil
		}
		c.publishBuffers(0)
	}
	// A read that finds data ready returns it even if a publisher moved
	// the deadline meanwhile: execute delivers the messages queued before
	// each command runs, so none is overtaken.
	err := c.rd.Fill()
	if err != nil && c.sub != nil && netutil.IsTimeout(err) && c.sub.woken.Swap(false) {
		return nil // woken by a publisher: deliver, then read again
	}
	return err
}

// readFailed ends the connection after a read error: a protocol error gets
// Redis' reply first; timeouts, limits and disconnects just close.
func (c *conn) readFailed(err error) {
	c.commitPending()
	var pe *resp.ProtocolError
	switch {
	case errors.As(err, &pe):
		c.s.metrics.protocolErrors.Inc()
		c.s.errors.count("ERR")
		c.wr.Error("ERR " + pe.Msg)
		c.wr.Flush()
		lingerClose(c.nc)
	case errors.Is(err, errClientMemory):
		if !c.evicting.Load() { // an evicted client was counted and logged by makeRoomFor
			c.s.clientMem.evicted.Add(1)
			c.s.log.Warn("closing client whose buffer would pass maxmemory-clients", "client", c.id,
				"addr", c.nc.RemoteAddr().String(), "buffer_bytes", c.mem.Load())
		}
		c.nc.Close()
	case errors.Is(err, errQueryBufferLimit):
		c.s.log.Warn("closing client that reached max query buffer length", "client", c.id, "addr", c.nc.RemoteAddr().String())
		c.wr.Flush()
		lingerClose(c.nc)
	default:
		if netutil.IsTimeout(err) && !c.s.closing.Load() {
			c.s.log.Debug("closing idle client", "client", c.id)
		}
		c.wr.Flush()
	}
}

// Bounds of lingerClose's draining.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// lingerClose closes a connection whose client may still be sending. A
// socket closed with unread input makes the kernel send RST, which can
// destroy the error reply before the client reads it; half-closing first
// and draining the input for a moment turns that into a clean close.
func lingerClose(nc net.Conn) {
	if hc, ok := nc.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		nc.SetReadDeadline(time.Now().Add(lingerTime))
		io.CopyN(io.Discard, nc, lingerBytes)
	}
	nc.Close()
}

func (c *conn) close() {
	c.doneReading() // a handler that panicked may have left it set
	c.unmonitor()
	c.unwatchAll()
	c.unsubscribeAll()
	c.s.disableTracking(c)
	c.closeView()
	c.publish()
	c.nc.Close()
	c.rd.Close()
	c.s.removeClient(c)
}

// publish makes the connection's activity since the last publish visible
// to other goroutines: its tally, its last command and when that ended.
func (c *conn) publish() {
	if c.lastRun == nil {
		return
	}
	c.tally.publish(c.s)
	c.lastCmd.Store(c.lastRun)
	c.lastActive.Store(c.mark.UnixNano())
	c.lastRun = nil
}

// countLookup feeds INFO's keyspace_hits and keyspace_misses, and fires
// the "keymiss" event (notify-keyspace-events m) of a miss of key, as
// Redis does for the same lookups.
func (c *conn) countLookup(key []byte, hit bool) {
	if hit {
		c.tally.hits++
		return
	}
	c.tally.misses++
	c.notify(notifyKeyMiss, "keymiss", key)
}

func (c *conn) clientName() string {
	c.info.Lock()
	defer c.info.Unlock()
	return c.info.name
}

func sortConns(list []*conn) {
	slices.SortFunc(list, func(a, b *conn) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
}
