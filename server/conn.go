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
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Pipelined batchable writes are staged into one engine batch up to these
// bounds; past them the batch commits so replies keep flowing and memory
// stays bounded.
const (
	maxStaged          = 1024
	maxStagedBatchSize = 1 << 20
)

var (
	errQueryBufferLimit = errors.New("client query buffer limit exceeded")
	errShuttingDown     = errors.New("server shutting down")
)

// conn is one client connection, served by one goroutine. Fields without a
// comment belong to that goroutine alone; CLIENT LIST reads the others
// from other goroutines.
type conn struct {
	s       *Server
	nc      net.Conn
	id      uint64
	created time.Time
	rd      *resp.Reader
	wr      *resp.Writer

	authed bool
	quit   bool
	// failed records that the running command replied with an error.
	failed bool

	// info is read by CLIENT LIST and INFO from other goroutines.
	info struct {
		sync.Mutex
		name, libName, libVer string
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

	// batch is empty except while pipelined batchable writes are staged
	// in it (staged lists their commands); every other command commits
	// it first, so replies stay in order. The staged commands all count
	// their latency from stagedAt, when the first of them started.
	batch    *lsmgo.Batch
	staged   []*command
	stagedAt time.Time
	stripes  lockSet

	// view serves a run of pipelined pipeView reads from one pinned
	// engine state (see reader). Every other command, and every network
	// read, closes it first: a command must see this connection's own
	// writes, and a command received later must see writes acknowledged
	// meanwhile.
	view *lsmgo.View

	// blk is the connection's part in blocking commands (blocking.go).
	blk blockState
	// tx is the transaction MULTI opened, nil outside one; exec is set
	// while EXEC runs its commands (see tx.go). watched lists the keys
	// WATCH named; watchDirty is set, by any connection's write, once
	// one of them changed.
	// sub is the connection's Pub/Sub state, nil until it first
	// subscribes (pubsub.go).
	sub *subscriber

	tx         *transaction
	exec       *execState
	watched    []watchedKey
	watchDirty atomic.Bool

	scratch []byte // engine keys and values under construction
	elemBuf []byte // collection element keys under construction
	nameBuf []byte // lower-cased command names

	// mem is the size of this client's query buffer, as accounted to the
	// server's maxmemory-clients bound; evicting is set when the bound
	// chose this client to close.
	mem      atomic.Int64
	evicting atomic.Bool
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	cfg := s.config()
	c := &conn{s: s, nc: nc, id: id, created: time.Now(), batch: s.ks.newBatch()}
	c.rd = resp.NewReader(connReader{c}, resp.Limits{MaxBulkLen: cfg.ProtoMaxBulkLen, MaxMultibulkLen: cfg.MaxMultibulkLen})
	c.wr = resp.NewWriter(countingWriter{c})
	c.authed = cfg.RequirePass == ""
	c.rd.SetAuthRequired(!c.authed)
	c.proto.Store(2)
	c.lastActive.Store(c.created.UnixNano())
	return c
}

// connReader is the io.Reader under the RESP reader. The RESP reader calls
// it only when it has no complete command left, so this is the moment
// everything received so far has been executed: staged writes commit and
// replies go out before the goroutine may block on the network. That is
// how pipelining gets one write(2) per batch of commands without ever
// holding a reply back.
type connReader struct{ c *conn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	for {
		c.closeView()
		c.commitStaged()
		c.deliverPushes()
		if err := c.wr.Flush(); err != nil {
			return 0, err
		}
		c.flushedPushes()
		c.publish()
		c.mark = time.Time{}
		if n, err := c.takeReadAhead(p); n > 0 || err != nil {
			return n, err
		}
		cfg := c.s.config()
		if int64(c.rd.Buffered()) >= cfg.QueryBufferLimit {
			return 0, errQueryBufferLimit
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
			return 0, errShuttingDown
		}
		// Checked after arming the deadline too: a message queued
		// after this check moves the deadline after this arming.
		if c.pendingPushes() {
			continue
		}
		// A Read that finds data ready returns it even if a publisher
		// moved the deadline meanwhile: execute delivers the messages
		// queued before each command runs, so none is overtaken.
		n, err := c.nc.Read(p)
		c.s.stats.netIn.Add(int64(n))
		if n == 0 && c.sub != nil && isTimeout(err) && c.sub.woken.Swap(false) {
			continue
		}
		return n, err
	}
}

// isTimeout reports whether err is a network timeout. It is a function of
// its own because errors.As moves its target to the heap: declared in
// connReader.Read, the target cost an allocation on every read.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// countingWriter counts reply bytes for INFO and /metrics. It publishes
// the connection's tally first, so that a client that has read a reply
// finds its command counted.
type countingWriter struct{ c *conn }

func (w countingWriter) Write(p []byte) (int, error) {
	w.c.publish()
	n, err := w.c.nc.Write(p)
	w.c.s.stats.netOut.Add(int64(n))
	return n, err
}

func (c *conn) serve() {
	defer c.close()
	// Here rather than in newConn: the budget may evict other clients,
	// which takes clientsMu, held while a connection is admitted.
	c.rd.SetBudget(connBudget{c})
	for !c.quit && !c.s.cutoff.Load() {
		args, err := c.rd.ReadCommand()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.execute(args)
	}
	c.commitStaged()
	c.wr.Flush()
}

// readFailed ends the connection after a read error: a protocol error gets
// Redis' reply first; timeouts, limits and disconnects just close.
func (c *conn) readFailed(err error) {
	c.commitStaged()
	var pe *resp.ProtocolError
	switch {
	case errors.As(err, &pe):
		c.s.metrics.protocolErrors.Inc()
		c.s.errors.count("ERR")
		c.wr.Error("ERR " + pe.Msg)
		c.wr.Flush()
		lingerClose(c.nc)
	case errors.Is(err, errClientMemory):
		c.s.clientMem.evicted.Add(1)
		c.s.log.Warn("closing client whose buffer would pass maxmemory-clients", "client", c.id,
			"addr", c.nc.RemoteAddr().String(), "buffer_bytes", c.mem.Load())
		c.nc.Close()
	case errors.Is(err, errQueryBufferLimit):
		c.s.log.Warn("closing client that reached max query buffer length", "client", c.id, "addr", c.nc.RemoteAddr().String())
		c.wr.Flush()
		lingerClose(c.nc)
	default:
		if isTimeout(err) && !c.s.closing.Load() {
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
	c.unwatchAll()
	c.unsubscribeAll()
	c.closeView()
	c.publish()
	c.nc.Close()
	c.rd.Close()
	c.s.removeClient(c)
}

// execute runs one command and writes its reply. It knows commands only
// by their table entries: the pipelined fast paths are chosen by an
// entry's batch function and pipe flags.
func (c *conn) execute(args [][]byte) {
	cmd := lookup(commands, &c.nameBuf, args[0])
	if cmd == nil || cmd.pipe&pipeView == 0 {
		c.closeView()
	}
	// A batchable write is staged when more input is already buffered, or
	// when writes are staged already (the last write of a pipeline rides
	// with the others: the batch commits before the next read anyway).
	if cmd != nil && cmd.batch != nil && c.authed && c.tx == nil && cmd.arityOK(len(args)) &&
		(c.rd.Buffered() > 0 || len(c.staged) > 0) && c.stage(cmd, args) {
		return
	}
	c.commitStaged()
	// Messages published before this command was read go out before its
	// reply, as in Redis, where PUBLISH fills the subscribers' output
	// buffers at once: the connection may have read the command before
	// the publisher's wake-up reached it.
	c.deliverPushes()
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
	if c.refusedBusy(cmd) {
		return
	}
	if cmd.pipe&pipeSubscribed == 0 && c.subscribed() && c.wr.Protocol() == 2 {
		c.reject(cmd, msgSubscribedOnly(cmd))
		return
	}
	if c.tx != nil && cmd.pipe&pipeNoQueue == 0 {
		c.queue(cmd, args)
		c.mark = time.Now()
		c.lastActive.Store(c.mark.UnixNano())
		return
	}
	if cmd.pipe&pipeView != 0 && c.view == nil && c.rd.Buffered() > 0 {
		// Without a view (the DB closing) reads go to the DB.
		c.view, _ = c.s.ks.newView()
	}
	c.run(cmd, args)
	// The clients blocked on keys this command filled are served once it
	// has committed: inside EXEC, once EXEC has.
	if len(c.blk.ready) > 0 && !c.inExec() {
		c.s.blocked.serveReady(c)
	}
}

// reader is what the running command reads through: inside EXEC, the
// transaction's state with its writes so far on top; the pipeline's view
// when the command is a pipeView read inside a pipeline; else the DB's
// newest state.
func (c *conn) reader() lsmgo.Reader {
	if c.exec != nil {
		return c.exec.overlay
	}
	if c.view != nil {
		return c.view
	}
	return c.s.ks.latest()
}

// closeView releases the connection's pipelined-read view, if any.
func (c *conn) closeView() {
	if c.view != nil {
		c.view.Close()
		c.view = nil
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
	if c.tally.add(cmd, d, failed) {
		c.publish()
	}
	cfg := c.s.config()
	if args != nil && cfg.SlowlogSlowerThan >= 0 && d >= cfg.SlowlogSlowerThan {
		c.s.slowlog.add(c, args, d, cfg.SlowlogMaxLen)
	}
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

// countLookup feeds INFO's keyspace_hits and keyspace_misses.
func (c *conn) countLookup(hit bool) {
	if hit {
		c.tally.hits++
	} else {
		c.tally.misses++
	}
}

// stage lets cmd's batch function add the command's write to the pending
// batch, and reports whether it did. A staged command's reply is written
// when the batch commits, which happens before any other command runs or
// any read may block, so the client sees replies in order and each only
// after its write is in the WAL.
func (c *conn) stage(cmd *command, args [][]byte) bool {
	if !cmd.batch(c, args) {
		return false
	}
	if len(c.staged) == 0 {
		c.stagedAt = c.clock()
	}
	c.staged = append(c.staged, cmd)
	if len(c.staged) >= maxStaged || c.batch.Len() >= maxStagedBatchSize {
		c.commitStaged()
	}
	return true
}

// lockAtCommit records that a staged write touches key: commitStaged holds
// the key's stripe, shared, while the batch applies. Only blind writes are
// staged (see keyLocks).
func (c *conn) lockAtCommit(key []byte) {
	c.stripes = c.stripes.add(c.s.ks.locks, key)
}

// commitStaged commits the staged writes, if any, and writes their
// replies.
func (c *conn) commitStaged() {
	if len(c.staged) == 0 {
		return
	}
	locks := c.s.ks.locks
	held := c.stripes.lockShared(locks)
	err := c.s.ks.apply(c.batch)
	held.unlockShared(locks)
	now := time.Now()
	c.mark = now
	for _, cmd := range c.staged {
		if err != nil {
			msg := engineError(err)
			c.s.errors.count(msg)
			c.wr.Error(msg)
		} else {
			c.wr.SimpleString("OK")
		}
		c.finished(cmd, nil, now.Sub(c.stagedAt), err != nil)
	}
	c.batch.Reset()
	clear(c.staged)
	c.staged = c.staged[:0]
	c.stripes = c.stripes[:0]
	if cap(c.stripes) > maxStaged {
		c.stripes = nil
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

// engineError turns an engine error into a Redis error reply. A read-only
// engine gets MISCONF, which Redis uses when it cannot persist writes.
func engineError(err error) string {
	switch {
	case errors.Is(err, errWrongType):
		return err.Error()
	case errors.Is(err, lsmgo.ErrReadOnly):
		return "MISCONF Errors writing to disk; writes are refused until an operator runs LSMGO.RESUME (or restarts the server): " + err.Error()
	case errors.Is(err, lsmgo.ErrNoSpace):
		// Redis, too, answers MISCONF while it cannot persist; unlike
		// the read-only case this one heals once space is freed.
		return "MISCONF Disk full; writes resume by themselves once space is freed: " + err.Error()
	case errors.Is(err, lsmgo.ErrClosed):
		return "ERR server is shutting down"
	}
	return "ERR " + err.Error()
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
