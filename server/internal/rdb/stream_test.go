package rdb

import (
	"bytes"
	"fmt"
	"testing"
)

func decodeNode(t *testing.T, node []byte) (StreamNode, error) {
	t.Helper()
	r := NewReader(node, 0)
	key, err := r.String()
	if err != nil {
		t.Fatal(err)
	}
	lp, err := r.String()
	if err != nil {
		t.Fatal(err)
	}
	return DecodeStreamNode(key, lp)
}

// TestStreamNodeRoundTrip writes nodes whose entries share the master's
// fields or not, with ids below and above the master's seq, and reads
// them back.
func TestStreamNodeRoundTrip(t *testing.T) {
	f := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i := range s {
			out[i] = []byte(s[i])
		}
		return out
	}
	entries := []StreamEntry{
		{ID: StreamID{5, 9}, Fields: f("a", "1", "b", "x")},
		{ID: StreamID{5, 10}, Fields: f("a", "-70000", "b", "")},
		{ID: StreamID{7, 0}, Fields: f("b", "1", "a", "2")},
		{ID: StreamID{1 << 40, 3}, Fields: f("a", "9223372036854775807")},
		{ID: StreamID{1<<40 + 1, 0}, Fields: f("a", "y", "b", "z")},
	}
	got, err := decodeNode(t, AppendStreamNode(nil, entries))
	if err != nil {
		t.Fatal(err)
	}
	if got.Live != len(entries) || fmt.Sprint(got.Entries) != fmt.Sprint(entries) {
		t.Fatalf("read back %v\nwant %v", got.Entries, entries)
	}
}

// TestStreamNodeRefuses damages one element of a node at a time: a count
// that disagrees, an lp-count that does not match, unknown flags, an
// element left over.
func TestStreamNodeRefuses(t *testing.T) {
	build := func(edit func(w *ListpackWriter, i int, v int64) bool) []byte {
		// count 1, deleted 0, 1 field "f", 0, then flags 2, 0, 0, "v", 4.
		var w ListpackWriter
		for i, v := range []int64{1, 0, 1, -1, 0, 2, 0, 0, -2, 4} {
			if edit != nil && edit(&w, i, v) {
				continue
			}
			switch v {
			case -1:
				w.Append([]byte("f"))
			case -2:
				w.Append([]byte("v"))
			default:
				w.AppendInt(v)
			}
		}
		return w.Finish()
	}
	key := StreamID{1, 1}.AppendRaw(nil)
	if n, err := DecodeStreamNode(key, build(nil)); err != nil || n.Live != 1 || string(n.Entries[0].Fields[1]) != "v" {
		t.Fatalf("the undamaged node: %+v, %v", n, err)
	}
	set := func(at int, to int64) func(w *ListpackWriter, i int, v int64) bool {
		return func(w *ListpackWriter, i int, v int64) bool {
			if i == at {
				w.AppendInt(to)
			}
			return i == at
		}
	}
	for name, edit := range map[string]func(w *ListpackWriter, i int, v int64) bool{
		"live count 2":        set(0, 2),
		"deleted count 1":     set(1, 1),
		"no terminator":       set(4, 1),
		"unknown flag":        set(5, 6),
		"lp-count 5":          set(9, 5),
		"field count too big": set(2, 3),
		"element left over": func(w *ListpackWriter, i int, v int64) bool {
			if i == 9 {
				w.AppendInt(v)
				w.AppendInt(0)
			}
			return i == 9
		},
	} {
		if _, err := DecodeStreamNode(key, build(edit)); err != ErrFormat {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeStreamNode(key[:15], build(nil)); err != ErrFormat {
		t.Errorf("a 15-byte node key: %v", err)
	}
	if !bytes.Equal(StreamID{1, 2}.AppendRaw(nil), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}) {
		t.Error("node keys are not big-endian")
	}
}
