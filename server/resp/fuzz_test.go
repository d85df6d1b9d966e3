package resp

import (
	"bytes"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzReader feeds arbitrary bytes to ReadCommand. Whatever the input, the
// Reader must not panic, must reach the same commands and the same final
// error whether the bytes arrive at once or one at a time, must end in EOF,
// an unexpected EOF or a *ProtocolError, must keep its buffer within twice
// the input, and must read back its commands unchanged once re-encoded.
func FuzzReader(f *testing.F) {
	for _, tc := range commandCases {
		if len(tc.in) < 512 {
			f.Add([]byte(tc.in))
		}
	}
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\nGET \"a\\x41\" 'b\\'c'\r\n"))
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$99999\r\nshort"))
	f.Add([]byte("\r\n*0\r\n*-1\r\n  \r\nPING\r\n*1\r\n$4\r\nPING\r\n"))
	lim := Limits{MaxBulkLen: 64, MaxMultibulkLen: 64, MaxInlineLen: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), lim)
		whole, werr := readCommands(r)
		if len(r.buf) > max(initialBufSize, 2*len(data)) {
			t.Fatalf("buffer %d for %d input bytes", len(r.buf), len(data))
		}
		one, oerr := readCommands(NewReader(iotestOneByte(data), lim))
		if !reflect.DeepEqual(whole, one) || werr != oerr {
			t.Fatalf("whole: %q then %q; one byte at a time: %q then %q", whole, werr, one, oerr)
		}
		if werr != io.EOF.Error() && werr != io.ErrUnexpectedEOF.Error() && !strings.HasPrefix(werr, "Protocol error: ") {
			t.Fatalf("unexpected final error %q", werr)
		}
		var enc []byte
		for _, cmd := range whole {
			if len(cmd) == 0 {
				t.Fatal("empty command returned")
			}
			args := make([][]byte, len(cmd))
			for i, a := range cmd {
				args[i] = []byte(a)
			}
			enc = AppendCommand(enc, args...)
		}
		again, err := readCommands(NewReader(bytes.NewReader(enc), lim))
		if err != io.EOF.Error() || !reflect.DeepEqual(again, whole) {
			t.Fatalf("re-encoded: %q then %q, want %q", again, err, whole)
		}
		readCommands(NewReader(bytes.NewReader(data), Limits{}))
	})
}

// FuzzReadValue feeds arbitrary bytes to ReadValue: no panic, the same
// values and final error however the input is split, and every value
// re-encoded reads back equal.
func FuzzReadValue(f *testing.F) {
	for _, tc := range valueCases {
		if len(tc.in) < 512 {
			f.Add([]byte(tc.in))
		}
	}
	f.Add([]byte("*2\r\n%1\r\n+k\r\n~2\r\n#t\r\n,1e-7\r\n>1\r\n=7\r\nmkd:abc\r\n"))
	lim := Limits{MaxBulkLen: 1 << 10, MaxMultibulkLen: 64, MaxInlineLen: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := readValues(NewReader(bytes.NewReader(data), lim))
		one, oerr := readValues(NewReader(iotestOneByte(data), lim))
		if len(whole) != len(one) || werr != oerr {
			t.Fatalf("whole: %d values then %q; one byte at a time: %d then %q", len(whole), werr, len(one), oerr)
		}
		var enc []byte
		for i := range whole {
			if !equalValues(whole[i], one[i]) {
				t.Fatalf("value %d: %+v vs %+v", i, whole[i], one[i])
			}
			enc = appendValue(enc, whole[i])
		}
		again, err := readValues(NewReader(bytes.NewReader(enc), lim))
		if err != io.EOF.Error() || len(again) != len(whole) {
			t.Fatalf("re-encoded %q: %d values then %q, want %d", enc, len(again), err, len(whole))
		}
		for i := range again {
			if !equalValues(again[i], whole[i]) {
				t.Fatalf("value %d re-encoded: %+v, want %+v", i, again[i], whole[i])
			}
		}
	})
}

// readValues reads until an error, copying each value out of the buffer.
func readValues(r *Reader) ([]Value, string) {
	var vs []Value
	for {
		v, err := r.ReadValue()
		if err != nil {
			return vs, err.Error()
		}
		vs = append(vs, cloneValue(v))
	}
}

func cloneValue(v Value) Value {
	if v.Str != nil {
		v.Str = bytes.Clone(v.Str)
	}
	if v.Array != nil {
		a := make([]Value, len(v.Array))
		for i := range a {
			a[i] = cloneValue(v.Array[i])
		}
		v.Array = a
	}
	return v
}

// appendValue is the test's own encoder of a Value, independent of Writer.
func appendValue(dst []byte, v Value) []byte {
	line := func(s string) []byte { return append(append(append(dst, v.Type), s...), '\r', '\n') }
	blob := func(s string) []byte {
		dst = appendHeader(dst, v.Type, int64(len(s)))
		return append(append(dst, s...), '\r', '\n')
	}
	switch v.Type {
	case '+', '(':
		return line(string(v.Str))
	case '-':
		return line(v.Err)
	case ':':
		return line(strconv.FormatInt(v.Int, 10))
	case ',':
		return line(string(AppendDouble(nil, v.Float)))
	case '#':
		return line(map[int64]string{0: "f", 1: "t"}[v.Int])
	case '_':
		return line("")
	case '!':
		return blob(v.Err)
	case '=':
		return blob("txt:" + string(v.Str))
	case '$':
		if v.Null {
			return line("-1")
		}
		return blob(string(v.Str))
	}
	n := len(v.Array)
	if v.Type == '%' {
		n /= 2
	}
	if v.Null {
		n = -1
	}
	dst = appendHeader(dst, v.Type, int64(n))
	for _, e := range v.Array {
		dst = appendValue(dst, e)
	}
	return dst
}
