package resp

import (
	"bytes"
	"io"
	"testing"
)

// loopReader replays data forever, as a client pipelining the same request.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func setCommand() []byte {
	return AppendCommand(nil, []byte("SET"), []byte("key:000000000042"), bytes.Repeat([]byte("v"), 128))
}

// newSetReader returns a Reader over an endless stream of the 128-byte SET,
// n commands per round so that reads end at command boundaries.
func newSetReader(n int) *Reader {
	return NewReader(&loopReader{data: bytes.Repeat(setCommand(), n)}, Limits{})
}

func BenchmarkReadCommandSET128(b *testing.B) {
	for _, bc := range []struct {
		name     string
		pipeline int
	}{{"single", 1}, {"pipeline16", 16}} {
		b.Run(bc.name, func(b *testing.B) {
			r := newSetReader(bc.pipeline)
			b.SetBytes(int64(len(setCommand())))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ReadCommand(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadCommandInline(b *testing.B) {
	r := NewReader(&loopReader{data: []byte("SET key:000000000042 \"some quoted value\"\r\n")}, Limits{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

// writeReplies writes the replies a GET/SET/MGET-heavy workload produces.
func writeReplies(w *Writer, val []byte) {
	w.SimpleString("OK")
	w.Bulk(val)
	w.Null()
	w.Int(42)
	w.ArrayHeader(2)
	w.Bulk(val)
	w.Null()
	w.Double(3.25)
}

func BenchmarkWriter(b *testing.B) {
	val := bytes.Repeat([]byte("v"), 128)
	for _, proto := range []int{2, 3} {
		b.Run("RESP"+itoa(proto), func(b *testing.B) {
			w := NewWriter(io.Discard)
			w.SetProtocol(proto)
			b.ReportAllocs()
			for b.Loop() {
				writeReplies(w, val)
				if w.Buffered() > writerBufSize/2 {
					w.Flush()
				}
			}
		})
	}
}

func BenchmarkReadValue(b *testing.B) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Bulk(bytes.Repeat([]byte("v"), 128))
	w.Flush()
	r := NewReader(&loopReader{data: out.Bytes()}, Limits{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadValue(); err != nil {
			b.Fatal(err)
		}
	}
}

// The steady state of a connection allocates nothing per command: reading
// a SET (single or pipelined, multibulk or inline), writing its replies,
// reading a scalar reply, and encoding a request.
func TestZeroAllocsSteadyState(t *testing.T) {
	check := func(name string, f func()) {
		f() // warm up buffers
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
	for _, n := range []int{1, 16} {
		r := newSetReader(n)
		check("ReadCommand pipeline "+itoa(n), func() {
			if _, err := r.ReadCommand(); err != nil {
				t.Fatal(err)
			}
		})
	}
	inline := NewReader(&loopReader{data: []byte("SET k \"v\\x41\"\r\n")}, Limits{})
	check("ReadCommand inline", func() { inline.ReadCommand() })
	val := bytes.Repeat([]byte("v"), 128)
	for _, proto := range []int{2, 3} {
		w := NewWriter(io.Discard)
		w.SetProtocol(proto)
		check("Writer RESP"+itoa(proto), func() {
			writeReplies(w, val)
			w.Verbatim("txt", "x")
			w.Bool(true)
			w.MapHeader(0)
			w.Flush()
		})
	}
	rv := NewReader(&loopReader{data: []byte("$3\r\nabc\r\n:1\r\n+OK\r\n")}, Limits{})
	check("ReadValue", func() { rv.ReadValue() })
	buf := make([]byte, 0, 1024)
	args := [][]byte{[]byte("GET"), []byte("key")}
	check("AppendCommand", func() { buf = AppendCommand(buf[:0], args...) })
}
