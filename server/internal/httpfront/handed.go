package httpfront

import (
	"bytes"
	"io"
	"net"
	"net/http"
)

// handedConn is a connection given to net/http. Its reads return the
// bytes the front read first, and it keeps the methods net/http and
// handlers look for on a *net.TCPConn: ReadFrom (sendfile(2) for
// http.ServeContent and io.Copy to a ResponseWriter) and CloseWrite (a
// graceful close).
//
// It also takes the connection back for the front, with the states
// net/http reports (Listener.ConnState), once net/http has answered a
// request without a body. That needs net/http to hold no byte past that
// request when it waits for the next one, so the connection gives it the
// request's head and nothing more (modeHead): net/http's reads fill a
// 4 KiB buffer, and would otherwise take the next pipelined request
// along. While net/http answers (modeAnswer), its only read is the
// background one that watches for the client closing; bytes of a next
// request that arrive then stay in the front's buffer. When net/http goes
// idle (modeIdle), its next read — the one that waits for the next
// request — runs the front on the connection, and returns only when a
// request goes to net/http again, or the connection ends.
//
// net/http calls Read from one goroutine at a time (its connection's, or
// its background read's, which it ends before it reports the connection
// idle or hijacked), and ConnState from the connection's goroutine; only
// Close comes from others. This leans on how net/http's HTTP/1 server
// reads (as of Go 1.26: a request without a body is read to its head's
// end, then only by the background read until StateIdle), which its
// documentation does not promise: TestFrontTakesBackRandom and imgbed's
// TestServePlainKeepAlive fail if that changes.
type handedConn struct {
	net.Conn
	c *conn // its buffer: c.buf[given:c.n] read and not yet given to net/http
	// given is what net/http has read of c.buf; mode what its reads are
	// for.
	given int
	mode  handedMode
}

type handedMode uint8

const (
	// modeHead: net/http reads a request head; a read gives it the bytes
	// up to the head's end at most.
	modeHead handedMode = iota
	// modeNoBody: net/http has the head of a request without a body and
	// reads nothing more of it; with no ConnState calls, the connection
	// stays in this mode and is net/http's, as in modeRaw.
	modeNoBody
	// modeAnswer: net/http answers that request (it said so: StateActive);
	// a read is the background one.
	modeAnswer
	// modeIdle: net/http has answered and waits for the next request
	// (StateIdle); the front reads it.
	modeIdle
	// modeRaw: the connection is net/http's for good.
	modeRaw
)

// ConnState follows the states net/http gives the connections it was
// handed, to take them back for the front between requests (see
// handedConn). Set it as the http.Server's ConnState, or call it from
// that; without it, a connection handed to net/http stays there.
func (l *Listener) ConnState(nc net.Conn, st http.ConnState) {
	hc, ok := nc.(*handedConn)
	if !ok {
		return
	}
	switch {
	case st == http.StateActive && hc.mode == modeNoBody:
		hc.mode = modeAnswer
	case st == http.StateIdle && hc.mode == modeAnswer:
		hc.mode = modeIdle
	case st == http.StateHijacked:
		hc.mode = modeRaw
	}
}

func (hc *handedConn) Read(p []byte) (int, error) {
	c := hc.c
	for {
		switch hc.mode {
		case modeHead:
			end := bytes.Index(c.buf[:c.n], headEnd)
			if bareLF(c.buf[:c.n], end) || end < 0 && c.n == len(c.buf) {
				// A head net/http may end elsewhere, or one longer than
				// the buffer: net/http reads the rest as it comes.
				hc.mode = modeRaw
				continue
			}
			if end < 0 {
				if hc.given < c.n {
					return hc.give(p, c.n), nil // kept in c.buf to find the end
				}
				m, err := hc.Conn.Read(c.buf[c.n:])
				c.n += m
				if m == 0 {
					return 0, err
				}
				continue
			}
			n := hc.give(p, end+4)
			if hc.given == end+4 {
				hc.mode = modeRaw
				if noBody(c.buf[:end+4]) {
					hc.mode = modeNoBody
				}
				c.n = copy(c.buf, c.buf[end+4:c.n])
				hc.given = 0
			}
			return n, nil
		case modeAnswer:
			// The background read: it learns of the client closing, and
			// of nothing else (a next request's bytes stay in c.buf).
			if c.n == len(c.buf) {
				return 0, nil
			}
			m, err := hc.Conn.Read(c.buf[c.n:])
			c.n += m
			if m > 0 {
				return 0, nil
			}
			return 0, err
		case modeIdle:
			if !hc.serveFront() {
				return 0, io.EOF
			}
		default: // modeNoBody, modeRaw
			if hc.given < c.n {
				n := hc.give(p, c.n)
				if hc.given == c.n {
					c.n, hc.given = 0, 0
				}
				return n, nil
			}
			return hc.Conn.Read(p)
		}
	}
}

// give copies c.buf[hc.given:limit] to p, as far as it goes.
func (hc *handedConn) give(p []byte, limit int) int {
	n := copy(p, hc.c.buf[hc.given:limit])
	hc.given += n
	return n
}

// noBody reports whether net/http takes the request with head (its blank
// line included) as one without a body, that ends with its head: an
// HTTP/1.x request line and no field that frames a body.
func noBody(head []byte) bool {
	line, fields := cutLine(head)
	if !bytes.HasSuffix(line, protoHTTP1) && !bytes.HasSuffix(line, []byte(" HTTP/1.0")) {
		return false
	}
	for rest := fields; len(rest) > 0; {
		line, rest = cutLine(rest)
		name, _, _ := bytes.Cut(line, []byte{':'})
		if equalFold(name, "Content-Length") || equalFold(name, "Transfer-Encoding") {
			return false
		}
	}
	return true
}

// serveFront runs the front on the connection while net/http waits for
// its next request, until a request goes to net/http (true, in modeHead)
// or the connection ends (false: closed here). With the Listener closing,
// it leaves the connection to net/http (modeRaw).
func (hc *handedConn) serveFront() bool {
	c := hc.c
	c.state.Store(stateIdle)
	if !c.l.track(c) {
		c.state.Store(stateHanded)
		hc.mode = modeRaw
		return true
	}
	handOff := c.answer(false)
	c.l.untrack(c)
	if handOff {
		c.state.Store(stateHanded)
		// A Close that came during the last answer (see Close).
		handOff = !c.closeAsked.Load()
	}
	if !handOff {
		c.state.Store(stateClosed)
		c.nc.Close()
		return false
	}
	hc.mode = modeHead
	return true
}

// Close closes the connection, unless the front is answering a request on
// it: net/http, which took the connection for idle, closes it when it
// shuts down, and the front closes it at the end of the answer, as it
// does its own. The flag comes first and the state second, and the front
// sets them the other way round, so one of the two sees the other's.
func (hc *handedConn) Close() error {
	hc.c.closeAsked.Store(true)
	if hc.c.state.Load() == stateActive {
		return nil
	}
	return hc.Conn.Close()
}

// WriteTo hides the inner connection's WriteTo (splice(2) on a
// *net.TCPConn), which would skip the pending bytes.
func (hc *handedConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{hc})
}

func (hc *handedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := hc.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{hc.Conn}, r)
}

// CloseWrite shuts down the writing side, where the connection can.
func (hc *handedConn) CloseWrite() error {
	if cw, ok := hc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
