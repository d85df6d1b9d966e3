package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name         string
		write        func(w *Writer)
		resp2, resp3 string
	}{
		{"simple", func(w *Writer) { w.SimpleString("OK") }, "+OK\r\n", "+OK\r\n"},
		{"simple one line", func(w *Writer) { w.SimpleString("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
		{"error", func(w *Writer) { w.Error("ERR unknown command 'x'") }, "-ERR unknown command 'x'\r\n", "-ERR unknown command 'x'\r\n"},
		{"error one line", func(w *Writer) { w.Error("ERR a\nb\r") }, "-ERR a b \r\n", "-ERR a b \r\n"},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"int min", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"bulk nil is empty", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk string", func(w *Writer) { w.BulkString("hello") }, "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.ArrayHeader(2); w.Int(1); w.BulkString("x") }, "*2\r\n:1\r\n$1\r\nx\r\n", "*2\r\n:1\r\n$1\r\nx\r\n"},
		{"empty array", func(w *Writer) { w.ArrayHeader(0) }, "*0\r\n", "*0\r\n"},
		{"map", func(w *Writer) { w.MapHeader(1); w.BulkString("k"); w.Int(7) }, "*2\r\n$1\r\nk\r\n:7\r\n", "%1\r\n$1\r\nk\r\n:7\r\n"},
		{"set", func(w *Writer) { w.SetHeader(1); w.BulkString("m") }, "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n"},
		{"push", func(w *Writer) { w.PushHeader(2); w.BulkString("message"); w.BulkString("c") }, "*2\r\n$7\r\nmessage\r\n$1\r\nc\r\n", ">2\r\n$7\r\nmessage\r\n$1\r\nc\r\n"},
		{"double", func(w *Writer) { w.Double(3.14) }, "$4\r\n3.14\r\n", ",3.14\r\n"},
		{"double integral", func(w *Writer) { w.Double(10) }, "$2\r\n10\r\n", ",10\r\n"},
		{"double inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double nan", func(w *Writer) { w.Double(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{"true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", "Some string") }, "$11\r\nSome string\r\n", "=15\r\ntxt:Some string\r\n"},
		{"verbatim short format", func(w *Writer) { w.Verbatim("md", "x") }, "$1\r\nx\r\n", "=5\r\nmd :x\r\n"},
		{"verbatim long format", func(w *Writer) { w.Verbatim("markdown", "") }, "$0\r\n\r\n", "=4\r\nmar:\r\n"},
	} {
		for _, proto := range []int{2, 3} {
			var out bytes.Buffer
			w := NewWriter(&out)
			w.SetProtocol(proto)
			if w.Protocol() != proto {
				t.Fatalf("Protocol() = %d after SetProtocol(%d)", w.Protocol(), proto)
			}
			tc.write(w)
			if w.Buffered() != out.Len()+w.Buffered() || out.Len() != 0 {
				t.Fatalf("%s: wrote through before Flush", tc.name)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			want := map[int]string{2: tc.resp2, 3: tc.resp3}[proto]
			if out.String() != want {
				t.Errorf("%s RESP%d: got %q, want %q", tc.name, proto, out.String(), want)
			}
		}
	}
}

func TestWriterProtocolDefaultsAndUnknown(t *testing.T) {
	w := NewWriter(&bytes.Buffer{})
	if w.Protocol() != 2 {
		t.Fatalf("default protocol %d", w.Protocol())
	}
	w.SetProtocol(3)
	w.SetProtocol(7)
	if w.Protocol() != 2 {
		t.Fatalf("SetProtocol(7) gave %d", w.Protocol())
	}
}

// Payloads larger than the buffer, and many small replies, come out intact
// and in order.
func TestWriterLargeAndMany(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	big := bytes.Repeat([]byte("0123456789"), 5000)
	var want bytes.Buffer
	for i := range 3000 {
		switch i % 4 {
		case 0:
			w.Bulk(big)
			want.WriteString("$50000\r\n" + string(big) + "\r\n")
		case 1:
			w.BulkString(string(big[:i]))
			want.WriteString("$" + itoa(i) + "\r\n" + string(big[:i]) + "\r\n")
		case 2:
			w.SimpleString(strings.Repeat("s", 20000))
			want.WriteString("+" + strings.Repeat("s", 20000) + "\r\n")
		default:
			w.Int(int64(i))
			want.WriteString(":" + itoa(i) + "\r\n")
		}
		if w.Buffered() > writerBufSize {
			t.Fatalf("buffered %d > %d", w.Buffered(), writerBufSize)
		}
		// Compare what has reached out so far and drop it, so that the
		// test holds a few replies instead of 100 MB: growing buffers
		// that large took seconds of page faults on a loaded machine.
		if !bytes.HasPrefix(want.Bytes(), out.Bytes()) {
			t.Fatalf("output differs after reply %d", i)
		}
		want.Next(out.Len())
		out.Reset()
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatal("output differs")
	}
}

type failWriter struct{ calls int }

var errBroken = errors.New("broken pipe")

func (f *failWriter) Write(p []byte) (int, error) {
	f.calls++
	return 0, errBroken
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriterErrorsAreSticky(t *testing.T) {
	f := &failWriter{}
	w := NewWriter(f)
	w.SimpleString("OK")
	if err := w.Flush(); err != errBroken {
		t.Fatalf("got %v", err)
	}
	w.Bulk(make([]byte, 1<<20))
	w.Double(1)
	w.Verbatim("txt", "x")
	if err := w.Flush(); err != errBroken || f.calls != 1 || w.Buffered() != 0 {
		t.Fatalf("after error: %v, %d writes, %d buffered", err, f.calls, w.Buffered())
	}
	w = NewWriter(shortWriter{})
	w.Int(1)
	if err := w.Flush(); err != io.ErrShortWrite {
		t.Fatalf("short write: %v", err)
	}
}

func TestAppendDouble(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{-1, "-1"},
		{1.5, "1.5"},
		{-2.25, "-2.25"},
		{3.14, "3.14"},
		{0.1, "0.1"},
		{0.3, "0.3"},
		{1.0 / 3, "0.3333333333333333"},
		{123456.789, "123456.789"},
		{0.000001, "0.000001"},
		{0.0000012, "1.2e-6"},
		{1e-7, "1e-7"},
		{1.2345e-5, "1.2345e-5"},
		{0.00012345, "1.2345e-4"},
		{0.0012345, "0.0012345"},
		{1 << 62, "4611686018427387904"},
		{-(1 << 62), "-4611686018427387904"},
		{5e18, "5e+18"},
		{1e20, "1e+20"},
		{1.5e300, "1.5e+300"},
		{12345678.5, "12345678.5"},
		{1234567890123.25, "1234567890123.25"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	} {
		if got := string(AppendDouble(nil, tc.f)); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}
