package httpfront

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Writer sends the answer to a Request. A Handler that answers calls one
// of its Respond methods once; one that declines calls none.
type Writer struct {
	c *conn
	// started is set once a byte of the answer may have left; failed once
	// a write failed, which ends the connection.
	started, failed bool
}

// Respond sends the answer: head (the status line and the header fields,
// each line ended by CRLF, in the order net/http writes them: sorted),
// then net/http's Date field and the blank line, then body, in one
// writev(2). Each write gets a deadline of idle from its start.
func (w *Writer) Respond(head, body []byte, idle time.Duration) error {
	w.started = true
	c := w.c
	c.head = appendDate(append(c.head[:0], head...))
	c.vec[0], c.vec[1] = c.head, body
	c.bufs = c.vec[:]
	c.nc.SetWriteDeadline(time.Now().Add(idle))
	_, err := c.bufs.WriteTo(c.nc)
	c.vec[1] = nil
	return w.fail(err)
}

// RespondFrom sends the answer head (as Respond) and then a body that
// send writes to the io.Writer it is given. That writer implements
// io.ReaderFrom with the connection's own, so a body copied from an
// *os.File (through an io.LimitedReader) goes out with sendfile(2). The
// head goes out with the first byte of the body: a send that fails before
// writing anything leaves the connection untouched, and the Handler may
// still decline (an error from storage then gets net/http's answer). Each
// write or ReadFrom call gets a deadline of idle from its start.
func (w *Writer) RespondFrom(head []byte, idle time.Duration, send func(io.Writer) error) error {
	c := w.c
	c.head = appendDate(append(c.head[:0], head...))
	b := &bodyWriter{w: w, idle: idle}
	err := send(b)
	if err == nil && !w.started {
		// An empty body: the head alone.
		err = b.start()
	}
	return w.fail(err)
}

// Started reports whether a byte of the answer may have left: a Handler
// that started an answer must not decline it.
func (w *Writer) Started() bool { return w.started }

func (w *Writer) fail(err error) error {
	if err != nil && w.started {
		w.failed = true
	}
	return err
}

// bodyWriter is the writer RespondFrom gives send.
type bodyWriter struct {
	w    *Writer
	idle time.Duration
}

// start writes the held head, once.
func (b *bodyWriter) start() error {
	if b.w.started {
		return nil
	}
	b.w.started = true
	c := b.w.c
	c.nc.SetWriteDeadline(time.Now().Add(b.idle))
	_, err := c.nc.Write(c.head)
	return err
}

func (b *bodyWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c := b.w.c
	if !b.w.started {
		// The head and the first piece in one writev(2).
		b.w.started = true
		c.vec[0], c.vec[1] = c.head, p
		c.bufs = c.vec[:]
		c.nc.SetWriteDeadline(time.Now().Add(b.idle))
		n, err := c.bufs.WriteTo(c.nc)
		c.vec[1] = nil
		return max(0, int(n)-len(c.head)), err
	}
	c.nc.SetWriteDeadline(time.Now().Add(b.idle))
	return c.nc.Write(p)
}

// FileSender is the writer RespondFrom gives send: its Write and
// ReadFrom as described there, and SendFile for bodies that lie in files
// shared with other readers.
type FileSender interface {
	io.Writer
	// SendFile writes n bytes of f from off, with sendfile(2) at that
	// offset when f and the connection have descriptors (an *os.File
	// and a TCP connection): f's position is neither used nor moved, so
	// one descriptor can serve many answers at once, and a piece costs
	// one system call where a ReadFrom of a positioned file costs a
	// seek too. Each call gets a write deadline of RespondFrom's idle.
	SendFile(f io.ReaderAt, off, n int64) (int64, error)
}

func (b *bodyWriter) SendFile(f io.ReaderAt, off, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	if sent, handled, err := b.sendFile(f, off, n); handled {
		return sent, err
	}
	sent, err := io.Copy(writeOnly{b}, io.NewSectionReader(f, off, n))
	if err == nil && sent < n {
		err = io.ErrUnexpectedEOF // as sendFile says of a file that ends early
	}
	return sent, err
}

func (b *bodyWriter) ReadFrom(src io.Reader) (int64, error) {
	if err := b.start(); err != nil {
		return 0, err
	}
	c := b.w.c
	c.nc.SetWriteDeadline(time.Now().Add(b.idle))
	if rf, ok := c.nc.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{c.nc}, src)
}

// dateCache is net/http's Date field for the current second, formatted
// once a second rather than once a request.
var dateCache atomic.Pointer[dateLine]

type dateLine struct {
	sec  int64
	line []byte // "Date: ...\r\n\r\n"
}

// appendDate appends the Date field, as net/http writes it after the
// sorted fields, and the blank line that ends the head.
func appendDate(b []byte) []byte {
	now := time.Now()
	d := dateCache.Load()
	if d == nil || d.sec != now.Unix() {
		line := append([]byte("Date: "), now.UTC().AppendFormat(nil, http.TimeFormat)...)
		d = &dateLine{sec: now.Unix(), line: append(line, "\r\n\r\n"...)}
		dateCache.Store(d)
	}
	return append(b, d.line...)
}

// writeOnly hides a writer's ReadFrom from io.Copy.
type writeOnly struct{ io.Writer }
