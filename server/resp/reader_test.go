package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const eof = "EOF"

var commandCases = []struct {
	name string
	in   string
	want [][]string
	err  string // what follows the commands: eof, io.ErrUnexpectedEOF's text or a protocol error
}{
	{"set", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n", [][]string{{"SET", "k", "value"}}, eof},
	{"pipeline", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n",
		[][]string{{"PING"}, {"GET", "k"}, {"PING"}}, eof},
	{"binary payload", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00\"b\r\n", [][]string{{"ECHO", "a\r\n\x00\"b"}}, eof},
	{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}, eof},
	{"empty multibulks skipped", "*0\r\n*-1\r\n*-100\r\n*1\r\n$1\r\nx\r\n", [][]string{{"x"}}, eof},
	// Redis skips the two bytes after a CR and after a payload unchecked.
	{"lenient terminators", "*1\rX$4\rYPINGzz*1\r\n$1\r\nq\r\n", [][]string{{"PING"}, {"q"}}, eof},
	{"inline", "PING\r\n", [][]string{{"PING"}}, eof},
	{"inline lf only", "SET a b\n", [][]string{{"SET", "a", "b"}}, eof},
	{"inline spacing", "  set\t a  \v b \r\n", [][]string{{"set", "a", "b"}}, eof},
	{"inline quoted", "SET \"a b\" 'c d'\r\n", [][]string{{"SET", "a b", "c d"}}, eof},
	{"inline empty arg", "SET k \"\"\r\n", [][]string{{"SET", "k", ""}}, eof},
	{"blank lines skipped", "\r\n\n   \r\nPING\r\n", [][]string{{"PING"}}, eof},
	{"inline then multibulk", "GET a\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"GET", "a"}, {"PING"}}, eof},
	{"dollar line is inline", "$3\r\n", [][]string{{"$3"}}, eof},
	{"max negative count", "*-9223372036854775808\r\nPING\r\n", [][]string{{"PING"}}, eof},

	{"empty stream", "", nil, eof},
	{"eof in count", "*1", nil, io.ErrUnexpectedEOF.Error()},
	{"eof after cr", "*1\r", nil, io.ErrUnexpectedEOF.Error()},
	{"eof in payload", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval", nil, io.ErrUnexpectedEOF.Error()},
	{"eof before payload crlf", "*1\r\n$4\r\nPING", nil, io.ErrUnexpectedEOF.Error()},
	{"eof in inline", "PING", nil, io.ErrUnexpectedEOF.Error()},

	{"count not a number", "*abc\r\n", nil, msgInvalidMultibulkLen},
	{"count empty", "*\r\n", nil, msgInvalidMultibulkLen},
	{"count leading zero", "*01\r\n", nil, msgInvalidMultibulkLen},
	{"count plus sign", "*+1\r\n", nil, msgInvalidMultibulkLen},
	{"count minus zero", "*-0\r\n", nil, msgInvalidMultibulkLen},
	{"count space", "*1 \r\n", nil, msgInvalidMultibulkLen},
	{"count overflow", "*9223372036854775808\r\n", nil, msgInvalidMultibulkLen},
	{"count over limit", "*1048577\r\n", nil, msgInvalidMultibulkLen},
	{"count at limit waits", "*1048576\r\n", nil, io.ErrUnexpectedEOF.Error()},
	{"bulk negative", "*1\r\n$-1\r\n", nil, msgInvalidBulkLen},
	{"bulk not a number", "*1\r\n$abc\r\n", nil, msgInvalidBulkLen},
	{"bulk leading zero", "*1\r\n$01\r\nx\r\n", nil, msgInvalidBulkLen},
	{"bulk over limit", "*1\r\n$536870913\r\n", nil, msgInvalidBulkLen},
	{"bulk huge", "*1\r\n$99999999999999999999\r\n", nil, msgInvalidBulkLen},
	{"bulk at limit waits", "*1\r\n$536870912\r\nabc", nil, io.ErrUnexpectedEOF.Error()},
	{"expected dollar", "*1\r\n+OK\r\n", nil, "Protocol error: expected '$', got '+'"},
	{"expected dollar after arg", "*2\r\n$1\r\na\r\n:1\r\n", nil, "Protocol error: expected '$', got ':'"},
	{"expected dollar got cr", "*1\r\n\r\n", nil, "Protocol error: expected '$', got ' '"},
	{"expected dollar got lf", "*1\r\n\n\r\n", nil, "Protocol error: expected '$', got ' '"},
	{"commands before error", "PING\r\n*1\r\nX\r\n", [][]string{{"PING"}}, "Protocol error: expected '$', got 'X'"},
	{"unbalanced double", "SET \"a b\r\n", nil, msgUnbalancedQuotes},
	{"unbalanced single", "SET 'a b\r\n", nil, msgUnbalancedQuotes},
	{"escaped closing quote", "SET \"a\\\"\r\n", nil, msgUnbalancedQuotes},
	{"text after closing quote", "SET \"a\"b\r\n", nil, msgUnbalancedQuotes},
	{"too big inline", strings.Repeat("a", 64<<10+1), nil, msgTooBigInline},
	{"too big inline with newline", strings.Repeat("a", 64<<10+1) + "\n", nil, msgTooBigInline},
	{"inline at limit", strings.Repeat("a", 64<<10) + "\n", [][]string{{strings.Repeat("a", 64<<10)}}, eof},
	{"too big count line", "*" + strings.Repeat("1", 64<<10), nil, msgTooBigMbulkCount},
	{"too big bulk line", "*1\r\n$" + strings.Repeat("1", 64<<10), nil, msgTooBigBulkCount},
	{"too big bulk line no dollar", "*1\r\n" + strings.Repeat("X", 70000), nil, msgTooBigBulkCount},
}

func TestReadCommand(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	for _, tc := range commandCases {
		t.Run(tc.name, func(t *testing.T) {
			for how, src := range deliveries([]byte(tc.in), rng) {
				r := NewReader(src, Limits{})
				got, err := readCommands(r)
				if !reflect.DeepEqual(got, tc.want) || err != tc.err {
					t.Fatalf("%s: got %q then %q, want %q then %q", how, got, err, tc.want, tc.err)
				}
			}
		})
	}
}

func TestProtocolErrorIsTypedAndSticky(t *testing.T) {
	r := NewReader(strings.NewReader("*x\r\n*1\r\n$4\r\nPING\r\n"), Limits{})
	for range 2 {
		_, err := r.ReadCommand()
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Msg != msgInvalidMultibulkLen {
			t.Fatalf("got %v, want *ProtocolError %q", err, msgInvalidMultibulkLen)
		}
	}
	if _, err := r.ReadValue(); !isProtocolError(err) {
		t.Fatalf("ReadValue after a protocol error: %v", err)
	}
}

func TestSplitInline(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // nil with ok false: unbalanced quotes
	}{
		{``, []string{}},
		{" \t\v\f\r ", []string{}},
		{`set "a b" c`, []string{"set", "a b", "c"}},
		{`"\x41\x4a\x4A\xff"`, []string{"AJJ\xff"}},
		{`"\x4"`, []string{"x4"}},
		{`"\xZZ"`, []string{"xZZ"}},
		{`"\n\r\t\b\a\\\"\z"`, []string{"\n\r\t\b\a\\\"z"}},
		{`'it\'s'`, []string{"it's"}},
		{`'a\nb\\c'`, []string{`a\nb\\c`}},
		{`'a\\'`, nil},
		{`'"'`, []string{`"`}},
		{`"'"`, []string{`'`}},
		{`ab"cd ef"`, []string{"abcd ef"}},
		{`ab'cd ef'`, []string{"abcd ef"}},
		{`a\nb`, []string{`a\nb`}},
		{`""`, []string{""}},
		{`'' x`, []string{"", "x"}},
		{"a\tb\vc", []string{"a", "b\vc"}},
		{"\"a\"\vb", []string{"a", "b"}},
		{"a\rb", []string{"a", "b"}},
		{"a\x00b", []string{"a\x00b"}},
		{`"abc`, nil},
		{`'abc`, nil},
		{`"abc\"`, nil},
		{`"abc\`, nil},
		{`'abc\'`, nil},
		{`"a"b`, nil},
		{`'a'b`, nil},
		{`"a"'b'`, nil},
		{`ab"cd"ef`, nil},
	} {
		line := []byte(tc.in)
		args, ok := splitInline(line, nil)
		if ok != (tc.want != nil) {
			t.Errorf("%q: ok=%v", tc.in, ok)
			continue
		}
		got := []string{}
		for _, a := range args {
			got = append(got, string(a))
		}
		if ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLimits(t *testing.T) {
	lim := Limits{MaxBulkLen: 5, MaxMultibulkLen: 3, MaxInlineLen: 10}
	for _, tc := range []struct {
		in, err string
	}{
		{"*3\r\n$5\r\nabcde\r\n$0\r\n\r\n$1\r\nx\r\n", eof},
		{"*4\r\n", msgInvalidMultibulkLen},
		{"*1\r\n$6\r\n", msgInvalidBulkLen},
		{"0123456789\n", eof},
		{"0123456789\r\n", msgTooBigInline},
		{"01234567890", msgTooBigInline},
		{"*" + strings.Repeat("0", 11), msgTooBigMbulkCount},
		{"*1\r\n$" + strings.Repeat("0", 9) + "\r\n", msgInvalidBulkLen},
		{"*1\r\n$" + strings.Repeat("0", 10) + "\r\n", msgTooBigBulkCount},
	} {
		_, err := readCommands(NewReader(strings.NewReader(tc.in), lim))
		if err != tc.err {
			t.Errorf("%q: got %q, want %q", tc.in, err, tc.err)
		}
	}
}

func TestAuthRequiredLimits(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{"*10\r\n", io.ErrUnexpectedEOF.Error()},
		{"*11\r\n", msgUnauthMultibulkLen},
		{"*1\r\n$16384\r\n", io.ErrUnexpectedEOF.Error()},
		{"*1\r\n$16385\r\n", msgUnauthBulkLen},
		{"*1\r\n$536870913\r\n", msgInvalidBulkLen},
		{strings.Repeat("a ", 100) + "\r\n", eof},
	} {
		r := NewReader(strings.NewReader(tc.in), Limits{})
		r.SetAuthRequired(true)
		if _, err := readCommands(r); err != tc.err {
			t.Errorf("%q: got %q, want %q", tc.in, err, tc.err)
		}
	}
	r := NewReader(strings.NewReader("*11\r\n"), Limits{})
	r.SetAuthRequired(true)
	r.SetAuthRequired(false)
	if _, err := readCommands(r); err != io.ErrUnexpectedEOF.Error() {
		t.Errorf("after auth: %q", err)
	}
}

func TestBuffered(t *testing.T) {
	for _, tc := range []struct {
		in    string
		after []int // Buffered after each command
	}{
		{"PING\r\nPING\r\n", []int{6, 0}},
		{"PING\r\n\r\n", []int{0}},
		{"PING\r\n \t\r\n*0\r\n*-1\r\n\n", []int{0}},
		{"PING\r\n\r\nPI", []int{2}},
		{"PING\r\n*0", []int{2}},
		{"PING\r\n*x\r\n", []int{4}},
		{"*1\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n", []int{11, 0}},
	} {
		r := NewReader(strings.NewReader(tc.in), Limits{})
		for i, want := range tc.after {
			if _, err := r.ReadCommand(); err != nil {
				t.Fatalf("%q: %v", tc.in, err)
			}
			if got := r.Buffered(); got != want {
				t.Errorf("%q: Buffered after command %d = %d, want %d", tc.in, i, got, want)
			}
		}
	}
}

// A claimed length costs nothing until its bytes arrive, and the buffer
// never exceeds twice what was received.
func TestClaimedLengthIsNotAllocated(t *testing.T) {
	head := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n"
	for _, sent := range []int{3, 10 << 10, 100 << 10, 1 << 20} {
		in := head + strings.Repeat("v", sent)
		r := NewReader(strings.NewReader(in), Limits{})
		if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
			t.Fatalf("got %v", err)
		}
		if limit := max(initialBufSize, 2*len(in)); len(r.buf) > limit {
			t.Errorf("sent %d bytes: buffer is %d, want <= %d", len(in), len(r.buf), limit)
		}
	}
}

// Big arguments arriving in pieces are assembled, and the buffer they
// needed is released once consumed, even when the next command arrived with
// them so the buffer never drains.
func TestBigArgumentsAndRelease(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	val := make([]byte, 3<<20)
	for i := range val {
		val[i] = byte(rng.Uint32())
	}
	// The small last argument makes the buffer double past the command,
	// so greedy reads bring the PING along with it.
	in := AppendCommand(nil, []byte("SET"), val[:1<<20], val, []byte("KEEPTTL"))
	in = append(in, "PING\r\n"...)
	for _, chunks := range []string{"random", "greedy"} {
		next := func() int { return 1 + rng.IntN(70000) }
		if chunks == "greedy" {
			next = func() int { return len(in) }
		}
		r := NewReader(&chunkReader{data: in, next: next}, Limits{})
		args, err := r.ReadCommand()
		if err != nil || len(args) != 4 || !bytes.Equal(args[1], val[:1<<20]) || !bytes.Equal(args[2], val) {
			t.Fatalf("%s: big SET: %v, %d args", chunks, err, len(args))
		}
		if len(r.buf) > 2*len(in) {
			t.Errorf("%s: buffer %d for a %d-byte stream", chunks, len(r.buf), len(in))
		}
		if chunks == "greedy" && r.Buffered() == 0 {
			t.Fatalf("greedy: the PING should have arrived with the SET")
		}
		if args, err = r.ReadCommand(); err != nil || string(args[0]) != "PING" {
			t.Fatalf("%s: PING: %q %v", chunks, args, err)
		}
		if len(r.buf) != initialBufSize {
			t.Errorf("%s: buffer of %d bytes retained after the big command", chunks, len(r.buf))
		}
		if _, err = r.ReadCommand(); err != io.EOF {
			t.Fatalf("%s: end: %v", chunks, err)
		}
	}
}

// A transient read error, such as a deadline, loses nothing: the next call
// finishes the command.
func TestRetryAfterReadError(t *testing.T) {
	in := []byte("*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n")
	for at := 1; at < len(in); at++ {
		src := &flakyReader{parts: [][]byte{in[:at], nil, in[at:]}}
		r := NewReader(src, Limits{})
		if _, err := r.ReadCommand(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cut at %d: first call %v", at, err)
		}
		args, err := r.ReadCommand()
		if err != nil || len(args) != 2 || string(args[1]) != "hello" {
			t.Fatalf("cut at %d: %q %v", at, args, err)
		}
	}
}

// flakyReader returns its parts in turn; a nil part is a deadline error.
type flakyReader struct{ parts [][]byte }

func (f *flakyReader) Read(p []byte) (int, error) {
	if len(f.parts) == 0 {
		return 0, io.EOF
	}
	part := f.parts[0]
	if part == nil {
		f.parts = f.parts[1:]
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, part)
	if f.parts[0] = part[n:]; len(f.parts[0]) == 0 {
		f.parts = f.parts[1:]
	}
	return n, nil
}

func TestReaderThatMakesNoProgress(t *testing.T) {
	r := NewReader(readerFunc(func([]byte) (int, error) { return 0, nil }), Limits{})
	if _, err := r.ReadCommand(); err != io.ErrNoProgress {
		t.Fatalf("got %v", err)
	}
}

func TestReaderReturningDataWithEOF(t *testing.T) {
	done := false
	r := NewReader(readerFunc(func(p []byte) (int, error) {
		if done {
			return 0, io.EOF
		}
		done = true
		return copy(p, "PING\r\nPI"), io.EOF
	}), Limits{})
	got, err := readCommands(r)
	if !reflect.DeepEqual(got, [][]string{{"PING"}}) || err != io.ErrUnexpectedEOF.Error() {
		t.Fatalf("got %q %q", got, err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// Arguments are capacity-limited, so a caller appending to one cannot
// overwrite the next.
func TestArgsAreCapacityLimited(t *testing.T) {
	r := NewReader(strings.NewReader("*2\r\n$1\r\na\r\n$1\r\nb\r\nSET x y\r\n"), Limits{})
	for range 2 {
		args, err := r.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			if cap(a) != len(a) {
				t.Fatalf("arg %d has cap %d > len %d", i, cap(a), len(a))
			}
		}
	}
}

// TestRandomStreams checks the Reader against a model: random commands,
// encoded as multibulk or as (possibly quoted) inline lines, mixed with
// no-op lines, delivered in random segments, must come back unchanged.
func TestRandomStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	deadline := time.Now().Add(2 * time.Second)
	for iter := 0; iter < 300 && time.Now().Before(deadline); iter++ {
		var stream []byte
		var want [][]string
		for range 1 + rng.IntN(40) {
			cmd := randomCommand(rng)
			switch rng.IntN(6) {
			case 0:
				if size(cmd) > 1000 {
					continue
				}
				stream = appendInline(stream, cmd, rng)
			case 1:
				stream = append(stream, []string{"\r\n", "\n", "*0\r\n", " \t\r\n", "*-1\r\n"}[rng.IntN(5)]...)
				continue
			default:
				args := make([][]byte, len(cmd))
				for i, a := range cmd {
					args[i] = []byte(a)
				}
				stream = AppendCommand(stream, args...)
			}
			want = append(want, cmd)
		}
		maxChunk := 1 + rng.IntN(64)
		if rng.IntN(4) == 0 {
			maxChunk = 1 << 16
		}
		src := &chunkReader{data: stream, next: func() int { return 1 + rng.IntN(maxChunk) }}
		got, err := readCommands(NewReader(src, Limits{}))
		if err != eof || !reflect.DeepEqual(got, want) {
			t.Fatalf("iteration %d: %s after %d commands, want %d", iter, err, len(got), len(want))
		}
	}
}

func size(cmd []string) (n int) {
	for _, a := range cmd {
		n += len(a)
	}
	return n
}

func randomCommand(rng *rand.Rand) []string {
	cmd := make([]string, 1+rng.IntN(5))
	for i := range cmd {
		n := rng.IntN(20)
		if rng.IntN(50) == 0 {
			n = rng.IntN(100000)
		}
		b := make([]byte, n)
		for j := range b {
			if rng.IntN(2) == 0 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = "ab \r\n\"'\\\tx"[rng.IntN(10)]
			}
		}
		cmd[i] = string(b)
	}
	return cmd
}

// appendInline writes cmd as an inline line, quoting every argument in a
// randomly chosen style that round-trips any byte string.
func appendInline(dst []byte, cmd []string, rng *rand.Rand) []byte {
	for i, a := range cmd {
		if i > 0 {
			dst = append(dst, " \t"[rng.IntN(2)])
		}
		dst = append(dst, '"')
		for _, c := range []byte(a) {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			case c < ' ' || c >= 0x7f || rng.IntN(10) == 0:
				dst = append(dst, '\\', 'x', "0123456789abcdef"[c>>4], "0123456789ABCDEF"[c&15])
			default:
				dst = append(dst, c)
			}
		}
		dst = append(dst, '"')
	}
	if rng.IntN(2) == 0 {
		return append(dst, '\n')
	}
	return append(dst, '\r', '\n')
}
