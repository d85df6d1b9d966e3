package resp

import (
	"io"
)

const (
	// writerBufSize matches Redis' PROTO_REPLY_CHUNK_BYTES: a pipeline of
	// small replies leaves in one write.
	writerBufSize = 16 << 10
	// maxHeaderLen fits a type byte, a 20-digit int64 and CRLF.
	maxHeaderLen = 32
	// maxDoubleLen fits any AppendDouble output with its framing.
	maxDoubleLen = 64
)

// Writer buffers replies for one connection and encodes them for the
// protocol the client negotiated (RESP2 until SetProtocol(3), as after
// HELLO 3). Writes never fail individually: the first error from the
// underlying writer is kept, later writes are dropped, and Flush returns it.
// Payloads as large as the buffer or larger go to the underlying writer
// directly rather than being copied.
type Writer struct {
	w     io.Writer
	buf   []byte // pending output; cap(buf) is fixed
	err   error
	proto int
}

// NewWriter returns a RESP2 Writer with a 16 KiB buffer over w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, writerBufSize), proto: 2}
}

// SetProtocol selects RESP3 for v == 3 and RESP2 for anything else.
func (w *Writer) SetProtocol(v int) {
	if v == 3 {
		w.proto = 3
	} else {
		w.proto = 2
	}
}

// Protocol returns 2 or 3.
func (w *Writer) Protocol() int { return w.proto }

// SimpleString writes "+s". CR and LF in s become spaces: a simple string
// is one line, and letting a caller's data end it would let that data forge
// further replies.
func (w *Writer) SimpleString(s string) { w.line('+', s) }

// Error writes "-msg". msg starts with the error code, as in "ERR unknown
// command" or "WRONGTYPE Operation against a key…"; CR and LF become spaces
// as in Redis' error path.
func (w *Writer) Error(msg string) { w.line('-', msg) }

// Int writes ":n".
func (w *Writer) Int(n int64) { w.header(':', n) }

// Bulk writes b as a bulk string. A nil b is an empty string, not a null.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	if len(b) >= cap(w.buf) && w.flush() {
		_, w.err = writeFull(w.w, b)
	} else {
		appendChunked(w, b, false)
	}
	w.crlf()
}

// BulkString writes s as a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	appendChunked(w, s, false)
	w.crlf()
}

// Null writes the null bulk string: "$-1" in RESP2, "_" in RESP3.
func (w *Writer) Null() {
	if w.proto == 3 {
		w.null()
	} else {
		w.header('$', -1)
	}
}

// NullArray writes the null array: "*-1" in RESP2, "_" in RESP3.
func (w *Writer) NullArray() {
	if w.proto == 3 {
		w.null()
	} else {
		w.header('*', -1)
	}
}

// ArrayHeader starts an array of n elements, which the caller writes next.
func (w *Writer) ArrayHeader(n int) { w.header('*', int64(n)) }

// MapHeader starts a map of n key/value pairs: "%n" in RESP3, an array of
// 2n alternating keys and values in RESP2.
func (w *Writer) MapHeader(n int) {
	if w.proto == 3 {
		w.header('%', int64(n))
	} else {
		w.header('*', 2*int64(n))
	}
}

// SetHeader starts a set of n elements: "~n" in RESP3, an array in RESP2.
func (w *Writer) SetHeader(n int) { w.aggregate('~', n) }

// PushHeader starts an out-of-band push of n elements (pub/sub messages,
// invalidations): ">n" in RESP3, an array in RESP2.
func (w *Writer) PushHeader(n int) { w.aggregate('>', n) }

// Double writes f: ",f" in RESP3, a bulk string in RESP2, formatted as
// Redis formats doubles ("1.5", "3", "inf", "1e+300").
func (w *Writer) Double(f float64) {
	if !w.reserve(maxDoubleLen) {
		return
	}
	if w.proto == 3 {
		w.buf = append(w.buf, ',')
		w.buf = AppendDouble(w.buf, f)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	var tmp [maxDoubleLen]byte
	d := AppendDouble(tmp[:0], f)
	w.buf = appendHeader(w.buf, '$', int64(len(d)))
	w.buf = append(w.buf, d...)
	w.buf = append(w.buf, '\r', '\n')
}

// DoubleText writes s, a double the caller has formatted: ",s" in RESP3,
// a bulk string in RESP2 (Redis' addReplyHumanLongDouble).
func (w *Writer) DoubleText(s string) {
	if w.proto == 3 {
		w.line(',', s)
		return
	}
	w.BulkString(s)
}

// BigNumber writes the decimal digits s as "(s" in RESP3 and as a bulk
// string in RESP2.
func (w *Writer) BigNumber(s string) {
	if w.proto == 3 {
		w.line('(', s)
		return
	}
	w.BulkString(s)
}

// Bool writes "#t"/"#f" in RESP3 and the integers 1/0 in RESP2.
func (w *Writer) Bool(b bool) {
	switch {
	case w.proto == 3 && b:
		w.literal("#t\r\n")
	case w.proto == 3:
		w.literal("#f\r\n")
	case b:
		w.literal(":1\r\n")
	default:
		w.literal(":0\r\n")
	}
}

// Verbatim writes s as a verbatim string with a three-character format such
// as "txt" or "mkd" in RESP3 (padded with spaces or cut to three, as Redis
// does), and as a plain bulk string in RESP2.
func (w *Writer) Verbatim(format string, s string) {
	if w.proto != 3 {
		w.BulkString(s)
		return
	}
	w.header('=', int64(len(s))+4)
	if !w.reserve(4) {
		return
	}
	for i := range 3 {
		c := byte(' ')
		if i < len(format) {
			c = format[i]
		}
		w.buf = append(w.buf, c)
	}
	w.buf = append(w.buf, ':')
	appendChunked(w, s, false)
	w.crlf()
}

// Raw writes p, replies another Writer encoded, as they are: a server
// collects the replies of a transaction's commands before it knows
// whether the transaction commits.
func (w *Writer) Raw(p []byte) { appendChunked(w, p, false) }

// Flush writes the buffered replies and returns the first error the
// Writer has met, if any.
func (w *Writer) Flush() error {
	w.flush()
	return w.err
}

// Buffered returns the number of bytes written but not yet flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

// Size returns the capacity of the buffer.
func (w *Writer) Size() int { return cap(w.buf) }

func (w *Writer) aggregate(resp3 byte, n int) {
	if w.proto == 3 {
		w.header(resp3, int64(n))
	} else {
		w.header('*', int64(n))
	}
}

func (w *Writer) null() { w.literal("_\r\n") }

func (w *Writer) crlf() { w.literal("\r\n") }

func (w *Writer) literal(s string) {
	if w.reserve(len(s)) {
		w.buf = append(w.buf, s...)
	}
}

func (w *Writer) header(prefix byte, n int64) {
	if w.reserve(maxHeaderLen) {
		w.buf = appendHeader(w.buf, prefix, n)
	}
}

func (w *Writer) line(prefix byte, s string) {
	if w.reserve(1) {
		w.buf = append(w.buf, prefix)
	}
	appendChunked(w, s, true)
	w.crlf()
}

// reserve makes room for n ≤ cap(w.buf) bytes and reports whether writing
// may go on.
func (w *Writer) reserve(n int) bool {
	if cap(w.buf)-len(w.buf) < n {
		w.flush()
	}
	return w.err == nil
}

// flush empties the buffer into the underlying writer and reports success.
// Output is dropped after an error: the connection is broken and the
// error is what the caller will see.
func (w *Writer) flush() bool {
	if w.err == nil && len(w.buf) > 0 {
		_, w.err = writeFull(w.w, w.buf)
	}
	w.buf = w.buf[:0]
	return w.err == nil
}

// appendChunked copies p into the buffer, flushing as it fills; with
// oneLine, CR and LF are replaced by spaces on the way.
func appendChunked[T string | []byte](w *Writer, p T, oneLine bool) {
	for w.err == nil {
		free := w.buf[len(w.buf):cap(w.buf)]
		n := copy(free, p)
		if oneLine {
			for i, c := range free[:n] {
				if c == '\r' || c == '\n' {
					free[i] = ' '
				}
			}
		}
		w.buf = w.buf[:len(w.buf)+n]
		p = p[n:]
		if len(p) == 0 {
			return
		}
		w.flush()
	}
}

// writeFull writes all of p, turning a short write without an error into
// io.ErrShortWrite as io.Writer's contract demands.
func writeFull(dst io.Writer, p []byte) (int, error) {
	n, err := dst.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}
