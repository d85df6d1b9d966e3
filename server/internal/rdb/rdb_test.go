package rdb

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestListpackRoundTrip appends values at every integer and string
// encoding boundary and walks them back.
func TestListpackRoundTrip(t *testing.T) {
	var in []string
	for _, v := range []int64{0, 127, 128, -1, -4096, 4095, 4096, -4097, -32768, 32767, 32768, -1 << 23, 1<<23 - 1, 1 << 23,
		-1 << 31, 1<<31 - 1, 1 << 31, -1 << 63, 1<<63 - 1} {
		in = append(in, strconv.FormatInt(v, 10))
	}
	for _, n := range []int{0, 1, 63, 64, 4095, 4096, 70000} {
		in = append(in, strings.Repeat("s", n))
	}
	in = append(in, "007", "-0", "+5", "1.0")
	var w ListpackWriter
	for _, s := range in {
		w.Append([]byte(s))
	}
	var out []string
	if err := WalkListpack(w.Finish(), func(e []byte) error { out = append(out, string(e)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out, "|") != strings.Join(in, "|") {
		t.Fatalf("walked %q\nwant %q", out, in)
	}
}

// TestListpackBytes pins the bytes Redis writes for small listpacks.
func TestListpackBytes(t *testing.T) {
	var w ListpackWriter
	w.Append([]byte("a"))
	w.Append([]byte("5"))
	w.Append([]byte("-2"))
	want := []byte{15, 0, 0, 0, 3, 0, 0x81, 'a', 2, 5, 1, 0xdf, 0xfe, 2, 0xff}
	if got := w.Finish(); !bytes.Equal(got, want) {
		t.Fatalf("listpack = % x, want % x", got, want)
	}
}

func TestIntsetRoundTrip(t *testing.T) {
	for _, vals := range [][]int64{{1, 2, 3}, {-40000, 5}, {-1 << 40, 0, 1 << 40}} {
		var out []string
		if err := WalkIntset(AppendIntset(nil, vals), func(m []byte) error { out = append(out, string(m)); return nil }); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if out[i] != strconv.FormatInt(v, 10) {
				t.Fatalf("intset %v walked %q", vals, out)
			}
		}
	}
	if err := WalkIntset([]byte{2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 5, 0}, func([]byte) error { return nil }); err != ErrFormat {
		t.Fatalf("intset with a repeated member: %v", err)
	}
}

func TestStringEncodings(t *testing.T) {
	for _, s := range []string{"", "0", "-128", "127", "128", "-32769", "2147483647", "2147483648", "01", "abc", strings.Repeat("z", 20000)} {
		body := AppendString(nil, []byte(s))
		got, err := NewReader(body, 0).String()
		if err != nil || string(got) != s {
			t.Fatalf("%q: read back %q, %v", s, got, err)
		}
	}
	if got := AppendString(nil, []byte("-128")); !bytes.Equal(got, []byte{encInt8, 0x80}) {
		t.Fatalf("-128 encoded as % x", got)
	}
}

func TestOpen(t *testing.T) {
	p := Seal([]byte{TypeString, 1, 'x'})
	if body, err := Open(p); err != nil || !bytes.Equal(body, []byte{TypeString, 1, 'x'}) {
		t.Fatalf("Open = %q, %v", body, err)
	}
	p[0] ^= 1
	if _, err := Open(p); err != ErrPayload {
		t.Fatalf("Open of a damaged payload: %v", err)
	}
}
