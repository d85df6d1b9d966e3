package httpfront

import (
	"io"
	"net"
)

// handedConn is a connection given to net/http: its reads return the
// bytes the front read first. It keeps the methods net/http and handlers
// look for on a *net.TCPConn: ReadFrom (sendfile(2) for http.ServeContent
// and io.Copy to a ResponseWriter) and CloseWrite (a graceful close).
type handedConn struct {
	net.Conn
	pending []byte
}

func newHanded(nc net.Conn, read []byte) net.Conn {
	return &handedConn{Conn: nc, pending: append([]byte(nil), read...)}
}

func (c *handedConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// WriteTo hides the inner connection's WriteTo (splice(2) on a
// *net.TCPConn), which would skip the pending bytes.
func (c *handedConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

func (c *handedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite shuts down the writing side, where the connection can.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
