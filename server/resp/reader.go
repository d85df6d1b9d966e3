package resp

import (
	"bytes"
	"io"
	"math"
)

// Defaults for a zero Limits field; they are Redis 7's.
const (
	// DefaultMaxBulkLen is Redis' proto-max-bulk-len: the longest single
	// argument (or reply bulk string) accepted.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxMultibulkLen is the most arguments (or aggregate elements)
	// one frame may declare.
	DefaultMaxMultibulkLen = 1024 * 1024
	// DefaultMaxInlineLen is Redis' PROTO_INLINE_MAX_SIZE: the longest
	// inline command line, and the longest '*'/'$' header line.
	DefaultMaxInlineLen = 64 << 10
)

const (
	// Redis caps what a client may send before AUTH so that an
	// unauthenticated peer cannot make the server buffer large requests.
	unauthMaxMultibulkLen = 10
	unauthMaxBulkLen      = 16384

	// initialBufSize matches Redis' PROTO_IOBUF_LEN: one read of a typical
	// pipeline fits, and a thousand idle connections cost 16 MiB.
	initialBufSize = 16 << 10
	// maxRetainedBufSize bounds what an idle connection keeps after a big
	// request; larger buffers are dropped once fully consumed.
	maxRetainedBufSize = 256 << 10
	// maxRetainedArgs bounds the argument bookkeeping kept between commands.
	maxRetainedArgs = 4096
	// maxEmptyReads is how many (0, nil) reads in a row count as a broken
	// io.Reader, the same bound bufio uses.
	maxEmptyReads = 100
	// maxLimit keeps every length computation far from int overflow.
	maxLimit = math.MaxInt >> 2
)

// Limits bounds what a Reader accepts. A zero or negative field means the
// corresponding Default… value, so Limits{} is Redis' configuration.
type Limits struct {
	// MaxBulkLen is the longest bulk string; longer ones fail with
	// "Protocol error: invalid bulk length".
	MaxBulkLen int64
	// MaxMultibulkLen is the largest argument count (aggregate length for
	// ReadValue); larger ones fail with "Protocol error: invalid multibulk
	// length".
	MaxMultibulkLen int64
	// MaxInlineLen is the longest inline command line and the longest
	// header line; see the "too big" protocol errors.
	MaxInlineLen int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxMultibulkLen <= 0 {
		l.MaxMultibulkLen = DefaultMaxMultibulkLen
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	l.MaxBulkLen = min(l.MaxBulkLen, maxLimit)
	l.MaxMultibulkLen = min(l.MaxMultibulkLen, maxLimit)
	l.MaxInlineLen = min(l.MaxInlineLen, maxLimit)
	return l
}

// span locates one argument relative to the start of its frame, so it stays
// valid when the buffer is compacted or grown under a partial frame.
type span struct{ start, end int }

// Reader parses RESP frames from an io.Reader through its own buffer. It
// keeps the state of a partly received frame, so a read error such as a
// deadline loses nothing: the next call resumes where the last stopped.
//
// A Reader reads either requests (ReadCommand, server side) or replies
// (ReadValue, client side); interleaving the two on one stream is
// unsupported.
type Reader struct {
	rd      io.Reader
	buf     []byte // buf[r:w] is input read but not yet consumed
	r, w    int
	lim     Limits
	unauth  bool
	readErr error // returned by rd together with data; reported by the next fill
	fatal   error // a *ProtocolError; the stream cannot be framed past it

	// The frame in progress. Offsets are relative to r.
	mode      byte  // 0 between frames, 'i' inline, '*' multibulk, 'v' reply
	pos       int   // parse cursor
	scan      int   // the current line holds no terminator before this offset
	remaining int64 // multibulk arguments still to come; -1 before the count
	bulkLen   int64 // payload length being awaited; -1 when none
	need      int   // bytes the frame needs in all, when known (0: unknown)
	spans     []span
	args      [][]byte
	last      int     // length of the frame last returned
	stack     []int64 // ReadValue: elements still owed by each open aggregate

	budget MemoryBudget // nil: unaccounted
}

// A MemoryBudget is told every time a Reader's buffer changes size, so that
// a server can bound what all its clients' buffers hold together (Redis'
// maxmemory-clients). The buffer only grows as bytes arrive, so the
// accounted size is what the client really made the server hold.
type MemoryBudget interface {
	// Grow asks for n more bytes. An error refuses them: the read that
	// needed them fails with that error, and the Reader stays usable only
	// for Close.
	Grow(n int) error
	// Shrink gives n bytes back.
	Shrink(n int)
}

// SetBudget accounts the Reader's buffer, now and on every change, to b.
// Call it once, before the first read. If b refuses even the initial
// buffer, every read returns b's error.
func (r *Reader) SetBudget(b MemoryBudget) {
	if err := b.Grow(len(r.buf)); err != nil {
		r.fatal = err
		return
	}
	r.budget = b
}

// Close drops the Reader's buffer and gives its bytes back to the budget.
// The Reader must not be used afterwards.
func (r *Reader) Close() {
	if r.budget != nil {
		r.budget.Shrink(len(r.buf))
		r.budget = nil
	}
	r.buf, r.r, r.w = nil, 0, 0
	r.fatal = errClosed
}

// resize replaces the buffer with one of size bytes holding the unread
// input, after the budget allowed the difference.
func (r *Reader) resize(size int) error {
	live := r.w - r.r
	if r.budget != nil {
		if d := size - len(r.buf); d > 0 {
			if err := r.budget.Grow(d); err != nil {
				return err
			}
		} else {
			r.budget.Shrink(-d)
		}
	}
	nb := make([]byte, size)
	copy(nb, r.buf[r.r:r.w])
	r.buf = nb
	r.r, r.w = 0, live
	return nil
}

// NewReader returns a Reader that reads from rd within limits. Its buffer
// starts at 16 KiB and grows only as bytes actually arrive.
func NewReader(rd io.Reader, limits Limits) *Reader {
	return &Reader{
		rd:        rd,
		buf:       make([]byte, initialBufSize),
		lim:       limits.withDefaults(),
		remaining: -1,
		bulkLen:   -1,
	}
}

// SetAuthRequired makes the Reader apply Redis' limits for clients that
// have not authenticated yet: at most 10 arguments ("Protocol error:
// unauthenticated multibulk length") of at most 16384 bytes each ("Protocol
// error: unauthenticated bulk length"). Like Redis, inline commands are not
// limited beyond MaxInlineLen. The server turns it off after a successful
// AUTH or HELLO.
func (r *Reader) SetAuthRequired(required bool) { r.unauth = required }

// Buffered returns the number of bytes read from the connection but not yet
// returned as a command, including a partly received one. Empty commands
// (blank inline lines, "*0") that are already complete are skipped eagerly,
// so a server that flushes its replies when Buffered is 0 does not stall on
// a client that trails its request with an extra newline.
func (r *Reader) Buffered() int { return r.w - r.r }

// Held returns the bytes of the command ReadBuffered last returned plus
// those buffered after it: Redis 7's qbuf while that command runs.
func (r *Reader) Held() int { return r.last + r.w - r.r }

// Free returns the room left in the buffer for input: Redis' qbuf-free.
func (r *Reader) Free() int { return len(r.buf) - r.w }

// PartialArgs returns the bytes of the arguments of a partly received
// command that have arrived whole (0 between commands): the arguments
// Redis has already parsed into argv while it waits for the rest.
func (r *Reader) PartialArgs() int {
	if r.mode != '*' || r.remaining < 0 {
		return 0 // the spans are a finished frame's
	}
	n := 0
	for _, s := range r.spans {
		n += s.end - s.start
	}
	return n
}

// ReadCommand reads the next command: a RESP array of bulk strings or an
// inline command line split like redis-server splits it. Empty commands are
// skipped. The returned slices alias the Reader's buffer and are valid only
// until the next call (see the package documentation).
//
// Errors: a *ProtocolError for malformed input (the Reader then keeps
// returning it; the connection must be closed), io.EOF when the stream ends
// between commands, io.ErrUnexpectedEOF when it ends inside one, and any
// other error from the underlying reader, after which the call may be
// retried.
func (r *Reader) ReadCommand() (args [][]byte, err error) {
	for {
		args, ok, err := r.ReadBuffered()
		if ok || err != nil {
			return args, err
		}
		if err := r.Fill(); err != nil {
			return nil, err
		}
	}
}

// ReadBuffered is ReadCommand without reading: it returns the next command
// when the input already buffered completes it, and ok false when it does
// not (a partly received command stays buffered; Fill reads more). A
// server calls it until ok is false to run every command a client has sent
// so far, and then knows that a batch of requests has ended: the moment
// to commit, flush replies and block on the network. Its errors are
// ReadCommand's protocol errors; the arguments' lifetime is ReadCommand's.
func (r *Reader) ReadBuffered() (args [][]byte, ok bool, err error) {
	if r.fatal != nil {
		return nil, false, r.fatal
	}
	r.release()
	for {
		done, need, err := r.parseCommand()
		if err != nil {
			r.fatal = err
			return nil, false, err
		}
		if !done {
			r.need = need
			return nil, false, nil
		}
		if len(r.args) > 0 {
			r.skipEmptyCommands()
			return r.args, true, nil
		}
	}
}

// Fill reads from the underlying reader once (until it returns bytes or
// an error), growing the buffer first when it is full. Its errors are
// ReadCommand's other than protocol errors; io.EOF between commands
// means the stream ended. It may move the buffer: the slices
// ReadBuffered returned are invalid after it.
func (r *Reader) Fill() error {
	if r.fatal != nil {
		return r.fatal
	}
	return r.fill(r.need)
}

// release recycles the buffer between frames: it rewinds the offsets when
// everything was consumed, and replaces storage that a past big frame left
// with a small buffer as soon as what remains fits in one, even while a
// busy pipeline never lets the buffer drain. Only here may memory move,
// since the previous results alias it until this call.
func (r *Reader) release() {
	if r.mode != 0 {
		return
	}
	live := r.w - r.r
	switch {
	case len(r.buf) > maxRetainedBufSize && live <= initialBufSize/2:
		r.resize(initialBufSize) // shrinking: the budget cannot refuse
	case live == 0:
		r.r, r.w = 0, 0
	}
	if cap(r.spans) > maxRetainedArgs {
		r.spans, r.args = nil, nil
	}
	if cap(r.stack) > maxRetainedArgs {
		r.stack = nil
	}
}

// consume ends the current frame after n bytes.
func (r *Reader) consume(n int) {
	r.r += n
	r.last = n
	r.mode, r.pos, r.scan = 0, 0, 0
	r.remaining, r.bulkLen = -1, -1
}

// parseCommand advances the frame in progress with the bytes buffered. It
// reports done with r.args set when a frame is complete (possibly with no
// arguments), or the total bytes the frame needs when that is known (0
// otherwise) so that fill can size the buffer.
func (r *Reader) parseCommand() (done bool, need int, err error) {
	data := r.buf[r.r:r.w]
	if r.mode == 0 {
		if len(data) == 0 {
			return false, 0, nil
		}
		// Redis decides the request type by the first byte alone.
		if data[0] == '*' {
			r.mode = '*'
		} else {
			r.mode = 'i'
		}
	}
	if r.mode == 'i' {
		return r.parseInline(data)
	}
	return r.parseMultibulk(data)
}

func (r *Reader) parseInline(data []byte) (bool, int, error) {
	nl, err := r.seek(data, 0, '\n', msgTooBigInline)
	if nl < 0 {
		return false, 0, err
	}
	line := data[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := splitInline(line, r.args[:0])
	if !ok {
		return false, 0, &ProtocolError{Msg: msgUnbalancedQuotes}
	}
	r.args = args
	r.consume(nl + 1)
	return true, 0, nil
}

func (r *Reader) parseMultibulk(data []byte) (bool, int, error) {
	if r.remaining < 0 {
		cr, err := r.headerLine(data, 0, msgTooBigMbulkCount)
		if cr < 0 {
			return false, 0, err
		}
		n, ok := parseInt(data[1:cr])
		if !ok || n > r.lim.MaxMultibulkLen {
			return false, 0, &ProtocolError{Msg: msgInvalidMultibulkLen}
		}
		if r.unauth && n > unauthMaxMultibulkLen {
			return false, 0, &ProtocolError{Msg: msgUnauthMultibulkLen}
		}
		if n <= 0 {
			// "*0" and "*-1" are valid requests that do nothing.
			r.args = r.args[:0]
			r.consume(cr + 2)
			return true, 0, nil
		}
		r.pos = cr + 2
		r.remaining = n
		r.spans = r.spans[:0]
	}
	for r.remaining > 0 {
		if r.bulkLen < 0 {
			cr, err := r.headerLine(data, r.pos, msgTooBigBulkCount)
			if cr < 0 {
				return false, 0, err
			}
			if data[r.pos] != '$' {
				return false, 0, expectedDollar(data[r.pos])
			}
			n, ok := parseInt(data[r.pos+1 : cr])
			if !ok || n < 0 || n > r.lim.MaxBulkLen {
				return false, 0, &ProtocolError{Msg: msgInvalidBulkLen}
			}
			if r.unauth && n > unauthMaxBulkLen {
				return false, 0, &ProtocolError{Msg: msgUnauthBulkLen}
			}
			r.pos = cr + 2
			r.bulkLen = n
		}
		// Like Redis, the two bytes after the payload are skipped
		// unchecked: the length alone frames the argument.
		if int64(len(data)-r.pos)-2 < r.bulkLen {
			return false, r.pos + int(r.bulkLen) + 2, nil
		}
		end := r.pos + int(r.bulkLen)
		r.spans = append(r.spans, span{r.pos, end})
		r.pos = end + 2
		r.bulkLen = -1
		r.remaining--
	}
	args := r.args[:0]
	for _, s := range r.spans {
		args = append(args, data[s.start:s.end:s.end])
	}
	r.args = args
	r.consume(r.pos)
	return true, 0, nil
}

// headerLine finds the CR ending the header line that starts at from and
// returns its offset, or -1 with a nil error when more input is needed.
// Like Redis it requires one byte after the CR but does not check that it
// is LF.
func (r *Reader) headerLine(data []byte, from int, tooBig string) (int, error) {
	cr, err := r.seek(data, from, '\r', tooBig)
	if cr < 0 {
		return -1, err
	}
	if cr+1 >= len(data) {
		return -1, nil
	}
	return cr, nil
}

// seek returns the offset of the first c in data[from:], or -1 when there
// is none yet. It fails with tooBig once the line exceeds MaxInlineLen; the
// limit applies to the line's length whether or not its terminator has
// arrived, so the outcome never depends on how the input was split. Bytes
// already searched are not searched again, which keeps a line trickling in
// one byte per read linear rather than quadratic.
func (r *Reader) seek(data []byte, from int, c byte, tooBig string) (int, error) {
	start := max(from, r.scan)
	i := bytes.IndexByte(data[start:], c)
	if i < 0 {
		r.scan = len(data)
		if len(data)-from > r.lim.MaxInlineLen {
			return -1, &ProtocolError{Msg: tooBig}
		}
		return -1, nil
	}
	if start+i-from > r.lim.MaxInlineLen {
		return -1, &ProtocolError{Msg: tooBig}
	}
	return start + i, nil
}

// skipEmptyCommands consumes complete no-op commands (blank inline lines,
// "*0", "*-1") that follow the command just parsed, so that Buffered
// reports 0 when nothing but them remains. Anything else, including a
// malformed frame, is left for the next ReadCommand to report.
func (r *Reader) skipEmptyCommands() {
	for r.r < r.w {
		data := r.buf[r.r:r.w]
		data = data[:min(len(data), r.lim.MaxInlineLen+1)]
		if data[0] == '*' {
			cr := bytes.IndexByte(data, '\r')
			if cr < 0 || cr+1 >= len(data) {
				return
			}
			if n, ok := parseInt(data[1:cr]); !ok || n > 0 {
				return
			}
			r.r += cr + 2
			continue
		}
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return
		}
		for _, c := range data[:nl] {
			if !isSpace(c) {
				return
			}
		}
		r.r += nl + 1
	}
}

// fill reads more input, making room first when the buffer is full. need is
// the total length the frame in progress requires (0 when unknown); growth
// never exceeds it, and is otherwise a doubling of a buffer that is full of
// bytes that really arrived, so a length a peer merely claims costs nothing.
func (r *Reader) fill(need int) error {
	if err := r.readErr; err != nil {
		r.readErr = nil
		return r.endErr(err)
	}
	if r.w == len(r.buf) {
		if err := r.makeRoom(need); err != nil {
			r.fatal = err
			return err
		}
	}
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return errBadRead
		}
		r.w += n
		if err != nil {
			if n > 0 {
				r.readErr = err
				return nil
			}
			return r.endErr(err)
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// endErr turns an end of stream inside a frame into io.ErrUnexpectedEOF.
func (r *Reader) endErr(err error) error {
	if err == io.EOF && r.w > r.r {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *Reader) makeRoom(need int) error {
	live := r.w - r.r
	if r.r > 0 && live <= len(r.buf)/2 {
		copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, live
		return nil
	}
	size := 2 * len(r.buf)
	if need > live && need < size {
		size = need
	}
	return r.resize(size)
}

// parseInt parses a decimal int64 exactly as Redis' string2ll does: no
// sign other than a leading '-', no leading zeros, no "-0", at most 20
// bytes, no overflow. Redis uses it for every length it reads, so the same
// strings are accepted and rejected here.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' || v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), true
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}
