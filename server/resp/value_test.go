package resp

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func str(t byte, s string) Value { return Value{Type: t, Str: []byte(s)} }

var valueCases = []struct {
	name string
	in   string
	want Value
	err  string // non-empty: ReadValue fails with this text
}{
	{"simple", "+OK\r\n", str('+', "OK"), ""},
	{"simple empty", "+\r\n", str('+', ""), ""},
	{"error", "-ERR bad thing\r\n", Value{Type: '-', Err: "ERR bad thing"}, ""},
	{"int", ":-123\r\n", Value{Type: ':', Int: -123}, ""},
	{"int zero", ":0\r\n", Value{Type: ':'}, ""},
	{"bulk", "$5\r\nhe\r\no\r\n", str('$', "he\r\no"), ""},
	{"bulk empty", "$0\r\n\r\n", str('$', ""), ""},
	{"null bulk", "$-1\r\n", Value{Type: '$', Null: true}, ""},
	{"null array", "*-1\r\n", Value{Type: '*', Null: true}, ""},
	{"null", "_\r\n", Value{Type: '_', Null: true}, ""},
	{"array", "*3\r\n:1\r\n$1\r\na\r\n*0\r\n", Value{Type: '*', Array: []Value{{Type: ':', Int: 1}, str('$', "a"), {Type: '*', Array: []Value{}}}}, ""},
	{"nested", "*1\r\n*1\r\n*1\r\n+x\r\n", Value{Type: '*', Array: []Value{{Type: '*', Array: []Value{{Type: '*', Array: []Value{str('+', "x")}}}}}}, ""},
	{"double", ",3.25\r\n", Value{Type: ',', Float: 3.25}, ""},
	{"double exp", ",1.5e+300\r\n", Value{Type: ',', Float: 1.5e300}, ""},
	{"double inf", ",inf\r\n", Value{Type: ',', Float: math.Inf(1)}, ""},
	{"double -inf", ",-inf\r\n", Value{Type: ',', Float: math.Inf(-1)}, ""},
	{"double overflow", ",1e400\r\n", Value{Type: ',', Float: math.Inf(1)}, ""},
	{"true", "#t\r\n", Value{Type: '#', Int: 1}, ""},
	{"false", "#f\r\n", Value{Type: '#'}, ""},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", str('(', "3492890328409238509324850943850943825024385"), ""},
	{"verbatim", "=15\r\ntxt:Some string\r\n", str('=', "Some string"), ""},
	{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", Value{Type: '!', Err: "SYNTAX invalid syntax"}, ""},
	{"map", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", Value{Type: '%', Array: []Value{str('+', "a"), {Type: ':', Int: 1}, str('+', "b"), {Type: ':', Int: 2}}}, ""},
	{"set", "~2\r\n+a\r\n+b\r\n", Value{Type: '~', Array: []Value{str('+', "a"), str('+', "b")}}, ""},
	{"push", ">2\r\n+message\r\n$2\r\nhi\r\n", Value{Type: '>', Array: []Value{str('+', "message"), str('$', "hi")}}, ""},
	{"attribute dropped", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n",
		Value{Type: '*', Array: []Value{{Type: ':', Int: 2}}}, ""},
	{"attribute in array", "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n", Value{Type: '*', Array: []Value{{Type: ':', Int: 1}, {Type: ':', Int: 2}}}, ""},

	{"unknown type", "?x\r\n", Value{}, "Protocol error: unknown reply type '?'"},
	{"empty line", "\r\n", Value{}, "Protocol error: unknown reply type ' '"},
	{"bare lf", "+OK\rX", Value{}, msgInvalidReplyLine},
	{"bad int", ":1x\r\n", Value{}, msgInvalidInteger},
	{"bad double", ",abc\r\n", Value{}, msgInvalidDouble},
	{"bad bool", "#x\r\n", Value{}, msgInvalidBoolean},
	{"bad null", "_x\r\n", Value{}, msgInvalidReplyLine},
	{"bad bulk len", "$-2\r\n", Value{}, msgInvalidBulkLen},
	{"null blob error", "!-1\r\n", Value{}, msgInvalidBulkLen},
	{"bad payload end", "$2\r\nabcd\r\n", Value{}, msgInvalidBulkTerm},
	{"bad verbatim", "=3\r\ntxt\r\n", Value{}, msgInvalidVerbatim},
	{"bad count", "*x\r\n", Value{}, msgInvalidMultibulkLen},
	{"null set", "~-1\r\n", Value{}, msgInvalidMultibulkLen},
	{"streamed string", "$?\r\n;4\r\nabcd\r\n;0\r\n", Value{}, msgInvalidBulkLen},
	{"too deep", strings.Repeat("*1\r\n", maxReplyDepth+1) + ":1\r\n", Value{}, msgReplyNestingTooDeep},
	{"truncated", "*2\r\n:1\r\n", Value{}, io.ErrUnexpectedEOF.Error()},
	{"nothing", "", Value{}, "EOF"},
}

// equalValues is reflect.DeepEqual except that NaN equals NaN.
func equalValues(a, b Value) bool {
	if math.IsNaN(a.Float) && math.IsNaN(b.Float) {
		a.Float, b.Float = 0, 0
	}
	if len(a.Array) != len(b.Array) || (a.Array == nil) != (b.Array == nil) {
		return false
	}
	for i := range a.Array {
		if !equalValues(a.Array[i], b.Array[i]) {
			return false
		}
	}
	a.Array, b.Array = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestReadValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 4))
	for _, tc := range valueCases {
		t.Run(tc.name, func(t *testing.T) {
			for how, src := range deliveries([]byte(tc.in), rng) {
				r := NewReader(src, Limits{})
				v, err := r.ReadValue()
				if tc.err != "" {
					if err == nil || err.Error() != tc.err {
						t.Fatalf("%s: got %v, %+v; want error %q", how, err, v, tc.err)
					}
					continue
				}
				if err != nil || !equalValues(v, tc.want) {
					t.Fatalf("%s: got %+v, %v; want %+v", how, v, err, tc.want)
				}
				if _, err := r.ReadValue(); err != io.EOF {
					t.Fatalf("%s: after the value: %v", how, err)
				}
			}
		})
	}
}

func TestReadValueLimits(t *testing.T) {
	lim := Limits{MaxBulkLen: 3, MaxMultibulkLen: 2, MaxInlineLen: 8}
	for _, tc := range []struct{ in, err string }{
		{"$3\r\nabc\r\n", ""},
		{"$4\r\nabcd\r\n", msgInvalidBulkLen},
		{"*2\r\n:1\r\n:2\r\n", ""},
		{"*3\r\n", msgInvalidMultibulkLen},
		{"%2\r\n", ""}, // two pairs are within the limit of two
		{"%3\r\n", msgInvalidMultibulkLen},
		{"+1234567\r\n", ""},
		{"+12345678\r\n", msgTooBigReplyLine},
		{"+123456789", msgTooBigReplyLine},
	} {
		_, err := NewReader(strings.NewReader(tc.in), lim).ReadValue()
		got := ""
		if isProtocolError(err) {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.err)
		}
	}
}

// Every reply the Writer produces, in either protocol, reads back as the
// value that was written.
func TestWriterReadValueRoundTrip(t *testing.T) {
	for _, proto := range []int{2, 3} {
		var out bytes.Buffer
		w := NewWriter(&out)
		w.SetProtocol(proto)
		w.SimpleString("OK")
		w.Error("WRONGTYPE Operation against a key holding the wrong kind of value")
		w.Int(math.MaxInt64)
		w.Bulk([]byte("bin\x00\r\n"))
		w.BulkString("")
		w.Null()
		w.NullArray()
		w.MapHeader(1)
		w.BulkString("k")
		w.Double(2.5)
		w.SetHeader(2)
		w.Bool(true)
		w.Bool(false)
		w.PushHeader(1)
		w.Verbatim("txt", "v")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		nullBulk, nullArray := Value{Type: '$', Null: true}, Value{Type: '*', Null: true}
		mapV := Value{Type: '*', Array: []Value{str('$', "k"), str('$', "2.5")}}
		setV := Value{Type: '*', Array: []Value{{Type: ':', Int: 1}, {Type: ':', Int: 0}}}
		pushV := Value{Type: '*', Array: []Value{str('$', "v")}}
		if proto == 3 {
			nullBulk, nullArray = Value{Type: '_', Null: true}, Value{Type: '_', Null: true}
			mapV = Value{Type: '%', Array: []Value{str('$', "k"), {Type: ',', Float: 2.5}}}
			setV = Value{Type: '~', Array: []Value{{Type: '#', Int: 1}, {Type: '#'}}}
			pushV = Value{Type: '>', Array: []Value{str('=', "v")}}
		}
		want := []Value{
			str('+', "OK"),
			{Type: '-', Err: "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{Type: ':', Int: math.MaxInt64},
			str('$', "bin\x00\r\n"),
			str('$', ""),
			nullBulk, nullArray, mapV, setV, pushV,
		}
		r := NewReader(iotestOneByte(out.Bytes()), Limits{})
		for i, wv := range want {
			v, err := r.ReadValue()
			if err != nil || !equalValues(v, wv) {
				t.Fatalf("RESP%d value %d: got %+v, %v; want %+v", proto, i, v, err, wv)
			}
		}
		if _, err := r.ReadValue(); err != io.EOF {
			t.Fatalf("RESP%d: trailing data: %v", proto, err)
		}
	}
}

func TestAppendCommandReadsBack(t *testing.T) {
	args := [][]byte{[]byte("SET"), []byte("key"), {}, []byte("v\r\n\x00")}
	enc := AppendCommand([]byte("prefix"), args...)
	if !bytes.HasPrefix(enc, []byte("prefix*4\r\n$3\r\nSET\r\n")) {
		t.Fatalf("got %q", enc)
	}
	got, err := NewReader(bytes.NewReader(enc[6:]), Limits{}).ReadCommand()
	if err != nil || !reflect.DeepEqual(got, [][]byte{[]byte("SET"), []byte("key"), {}, []byte("v\r\n\x00")}) {
		t.Fatalf("got %q, %v", got, err)
	}
	v, err := NewReader(bytes.NewReader(enc[6:]), Limits{}).ReadValue()
	if err != nil || len(v.Array) != 4 || string(v.Array[3].Str) != "v\r\n\x00" {
		t.Fatalf("as a reply: %+v, %v", v, err)
	}
}

// A long reply arriving in small pieces is framed incrementally, not
// re-parsed from its start on every read.
func TestLargeReplyInPieces(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	const n = 200000
	w.ArrayHeader(n)
	for i := range n {
		w.Int(int64(i))
	}
	w.Flush()
	r := NewReader(&chunkReader{data: out.Bytes(), next: func() int { return 16 }}, Limits{})
	v, err := r.ReadValue()
	if err != nil || len(v.Array) != n || v.Array[n-1].Int != n-1 {
		t.Fatalf("got %d elements, %v", len(v.Array), err)
	}
}
