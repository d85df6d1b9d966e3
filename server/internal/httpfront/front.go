// Package httpfront answers an HTTP server's plainest requests on the
// connection itself and hands every other connection to net/http.
//
// For a small GET, net/http's own work costs more than the answer: each
// request gets a Request, a header map on each side, sorted header
// writing, a background read (a goroutine and a read(2) that finds
// nothing) and layers of buffered writers, where nginx reads the request
// and answers with one writev(2) or sendfile(2). A Listener sits between
// a TCP listener and an http.Server: it reads each connection's requests
// itself, and a plain request (below) that its Handler answers costs a
// read, a parse that allocates almost nothing, and the Handler's one
// writev or header-and-sendfile. At the first request that is not plain,
// or that the Handler declines, the connection goes to the http.Server
// (through the Listener's Accept) with the bytes read so far: net/http
// answers that request as if the front were not there. When the
// http.Server's ConnState calls the Listener's, the connection comes back
// to the front once net/http has answered a request without a body (a
// page, an error, a range): the front reads the next request
// while net/http waits for it, answers it if it is plain, and hands it
// over otherwise (see handedConn). A request with a body, a head the
// front cannot delimit as net/http would, or a hijacked connection leave
// the connection with net/http for good.
//
// A plain request is a GET or a HEAD over HTTP/1.1 with an origin-form
// target of unreserved characters (no escapes; a clean path, which
// http.ServeMux would not redirect; a query of unreserved characters,
// '=' and '&'), well-formed header fields of visible ASCII, exactly one
// Host, a head that fits the connection's buffer (HeadBytes), and none
// of the fields that frame a body, ask for a range or a precondition,
// or change the connection (see notPlainFields), but for the two a
// browser revalidates with, If-None-Match and If-Modified-Since: a
// Handler that answers a request with them answers as http.ServeContent
// does (304 Not Modified where they say so). Connection, if present, is
// "keep-alive". Everything else — Range, If-Match, HTTP/1.0, HTTP/2,
// uploads — is net/http's, and so is a request whose head the Handler
// declines (a page, an error). A Handler answers a HEAD with the head
// alone.
//
// The Handler must answer exactly as the http.Server's handler would,
// byte for byte but for the Date field's second; its tests compare the
// two. Timeouts follow the http.Server's: a fresh connection's first head
// must arrive within HeaderTimeout of the accept, a later head within
// HeaderTimeout of its first byte, and a connection waits for its next
// request as long as the client keeps it open (no IdleTimeout). Each
// write of an answer has the Handler's own deadline.
package httpfront

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers req with w and returns true, or declines and returns
// false having called none of w's methods: the connection then goes to
// net/http with the request.
type Handler func(w *Writer, req *Request) bool

// Config holds the Listener's settings.
type Config struct {
	// HeaderTimeout is the http.Server's ReadHeaderTimeout; 0 is none.
	HeaderTimeout time.Duration
}

// HeadBytes is the most bytes of a request head the front reads into a
// connection's buffer; a longer head goes to net/http (whose limit,
// MaxHeaderBytes, is larger). A buffer is kept per connection, as net/http
// keeps its 4 KiB bufio.Reader.
const HeadBytes = 4 << 10

// Listener is a net.Listener for an http.Server that answers plain
// requests itself (see the package doc). Close it by closing the
// http.Server (Shutdown or Close), then call Wait.
type Listener struct {
	ln      net.Listener
	handler Handler
	cfg     Config

	handoff chan net.Conn
	errs    chan error // the inner listener's accept errors, for net/http
	done    chan struct{}
	closing atomic.Bool
	once    sync.Once

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

// Listen starts answering the connections ln accepts; net/http gets the
// others by calling the returned Listener's Accept (http.Server.Serve).
func Listen(ln net.Listener, h Handler, cfg Config) *Listener {
	l := &Listener{
		ln: ln, handler: h, cfg: cfg,
		handoff: make(chan net.Conn), errs: make(chan error), done: make(chan struct{}),
		conns: make(map[*conn]struct{}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// acceptLoop starts a connection's loop per accept. An accept error goes
// to net/http's Accept, which backs off on temporary errors as it does
// for a plain listener before it calls again.
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.closing.Load() {
				return
			}
			select {
			case l.errs <- err:
				continue
			case <-l.done:
				return
			}
		}
		c := connPool.Get().(*conn)
		c.l, c.nc, c.accepted = l, nc, time.Now()
		if !l.track(c) {
			nc.Close()
			return
		}
		go c.serve()
	}
}

// track registers c, unless the Listener is closed.
func (l *Listener) track(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing.Load() {
		return false
	}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	return true
}

func (l *Listener) untrack(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.wg.Done()
}

// Accept returns the next connection handed to net/http.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.handoff:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the front's idle connections and lets
// those answering a request close after it, as http.Server.Shutdown does
// with its own.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		l.closing.Store(true)
		l.mu.Unlock()
		close(l.done)
		err = l.ln.Close()
		l.closeConns(false)
	})
	return err
}

// closeConns closes the front's connections: the idle ones, or all.
func (l *Listener) closeConns(all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if all || c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.nc.Close()
		}
	}
}

// Wait waits, after Close, for the front's connections to end; when ctx
// ends first, it closes them and returns ctx's error once they ended.
func (l *Listener) Wait(ctx context.Context) error {
	ended := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		l.closeConns(true)
		<-ended
		return ctx.Err()
	}
}

// Addr returns the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// conn is a connection the front reads.
type conn struct {
	l        *Listener
	nc       net.Conn
	accepted time.Time
	state    atomic.Int32 // stateIdle, stateActive, stateClosed or stateHanded

	buf []byte // HeadBytes; buf[:n] read and not yet answered
	n   int
	// closeAsked is set by a handed connection's Close, which net/http
	// calls while the front answers a request on it (handedConn.Close).
	closeAsked atomic.Bool
	head       []byte    // the answer's head (Writer)
	vec        [2][]byte // Writer's writev(2) of the head and a body
	bufs       net.Buffers
	w          Writer // reused: a Writer per request was an allocation
}

// A connection is idle while it waits for a request (Close may close it),
// active from the first byte of a head to the end of the answer, and
// handed while net/http reads it.
const (
	stateIdle int32 = iota
	stateActive
	stateClosed
	stateHanded
)

// connPool keeps ended connections' state, buffers included, for the
// next accept: with many short connections (wrk -c 2000), a 4 KiB buffer
// and a head per connection were a tenth of the allocations.
var connPool = sync.Pool{New: func() any { return &conn{buf: make([]byte, HeadBytes)} }}

func (c *conn) serve() {
	if !c.answer(true) {
		c.nc.Close()
		c.release()
		return
	}
	// Untracked before net/http has it: its reads may track c again
	// (handedConn.serveFront).
	c.l.untrack(c)
	if !c.handOff() {
		c.nc.Close()
	}
}

// answer reads c's requests and answers the plain ones the Handler takes.
// It returns true at the first other one, which is then at the start of
// c.buf[:c.n], or false when the connection is to be closed: closed by
// the client or by Close, out of time, a failed answer.
func (c *conn) answer(fresh bool) (handOff bool) {
	req := Request{nc: c.nc}
	for ; ; fresh = false {
		used, ok := c.readRequest(&req, fresh)
		if !ok {
			return false
		}
		c.w = Writer{c: c}
		w := &c.w
		if used == 0 || !c.l.handler(w, &req) {
			// A Handler that declined what it began to answer broke the
			// answer, and the connection with it.
			return !w.started
		}
		c.n = copy(c.buf, c.buf[used:c.n])
		if w.failed || c.n == 0 && !c.state.CompareAndSwap(stateActive, stateIdle) || c.l.closing.Load() || c.closeAsked.Load() {
			return false
		}
	}
}

// release ends c's tracking and returns its state to connPool.
func (c *conn) release() {
	c.l.untrack(c)
	*c = conn{buf: c.buf, head: c.head[:0]}
	connPool.Put(c)
}

// readRequest reads until c.buf holds a whole head and parses it into req,
// returning the head's length, or 0 when the request is not plain. It
// returns !ok when the connection ended: closed by the client or by
// Close, or out of time.
func (c *conn) readRequest(req *Request, fresh bool) (used int, ok bool) {
	var deadline time.Time // the one set; zero: none
	if fresh && c.l.cfg.HeaderTimeout > 0 {
		deadline = c.accepted.Add(c.l.cfg.HeaderTimeout)
		c.nc.SetReadDeadline(deadline)
	}
	for {
		if c.n > 0 {
			// Bytes of a request: the connection is no longer idle, unless
			// Close took it first.
			if c.state.Load() == stateIdle && !c.state.CompareAndSwap(stateIdle, stateActive) {
				return 0, false
			}
			used, more := parse(c.buf[:c.n], req)
			if used > 0 || !more || c.n == len(c.buf) {
				if !deadline.IsZero() {
					c.nc.SetReadDeadline(time.Time{})
				}
				return used, true
			}
			if deadline.IsZero() && c.l.cfg.HeaderTimeout > 0 {
				deadline = time.Now().Add(c.l.cfg.HeaderTimeout)
				c.nc.SetReadDeadline(deadline)
			}
		}
		m, err := c.nc.Read(c.buf[c.n:])
		c.n += m
		if err != nil && m == 0 {
			return 0, false
		}
	}
}

// handOff gives the connection, with the bytes read from it, to net/http,
// reporting false when the Listener closed first.
func (c *conn) handOff() bool {
	c.state.Store(stateHanded)
	select {
	case c.l.handoff <- &handedConn{Conn: c.nc, c: c}:
		return true
	case <-c.l.done:
		return false
	}
}
