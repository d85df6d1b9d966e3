package server

import (
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// legacyStreamPayload is the DUMP of a stream by Redis 5 (RDB version 9,
// rdb.TypeStreamListpacks), from Redis' own suite (stream-cgroups,
// "Loading from legacy"): entries 1-0 to 6-0 added, 3-0 deleted, groups
// g1 and g2, four entries read by c11 in g1, then XTRIM MAXLEN = 2, which
// Redis 5 did by marking entries deleted in their node. Its node is
// LZF-compressed.
const legacyStreamPayload = "\x0F\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xC3\x40\x4A\x40\x57\x16\x57\x00\x00\x00\x23\x00\x02\x01\x04\x01\x01\x01\x84\x64\x61\x74\x61\x05\x00\x01\x03\x01\x00\x20\x01\x03\x81\x61\x02\x04\x20\x0A\x00\x01\x40\x0A\x00\x62\x60\x0A\x00\x02\x40\x0A\x00\x63\x60\x0A\x40\x22\x01\x81\x64\x20\x0A\x40\x39\x20\x0A\x00\x65\x60\x0A\x00\x05\x40\x0A\x00\x66\x20\x0A\x00\xFF\x02\x06\x00\x02\x02\x67\x31\x05\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x01\x03\x63\x31\x31\x3E\xF7\x83\x43\x7A\x01\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x02\x67\x32\x00\x00\x00\x00\x09\x00\x3D\x52\xEF\x68\x67\x52\x1D\xFA"

// TestRestoreLegacyStreamRedis restores legacyStreamPayload on both
// servers: the counters the old encoding lacks (entries added, each
// group's entries read) must come out as Redis derives them.
func TestRestoreLegacyStreamRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	var states []string
	for _, c := range []*testutil.Client{testutil.Dial(t, "unix", sock), testutil.Dial(t, "tcp", s.Addr().String())} {
		mustDo(t, c, "RESTORE", "x", "0", legacyStreamPayload)
		states = append(states, streamState(t, c, "x"))
	}
	if states[0] != states[1] {
		t.Fatalf("restored legacy stream differs\nredis %s\nlsmgo %s", states[0], states[1])
	}
	if !strings.Contains(states[1], `"entries-read" 1 "lag" 1`) {
		t.Fatalf("g1's entries read are not Redis' estimate: %s", states[1])
	}
}

// streamPayload is a type-19 body (no trailer) with one node of entries
// 1-1 and 1-2, built from parts that a case may replace.
type streamPayload struct {
	length, last, entriesAdded uint64
	nodes                      []byte // count and nodes
	groups                     []byte // count and groups
}

func goodStreamPayload() streamPayload {
	node := rdb.AppendStreamNode([]byte{1}, []rdb.StreamEntry{
		{ID: rdb.StreamID{Ms: 1, Seq: 1}, Fields: [][]byte{[]byte("f"), []byte("a")}},
		{ID: rdb.StreamID{Ms: 1, Seq: 2}, Fields: [][]byte{[]byte("f"), []byte("-5"), []byte("g"), []byte("")}},
	})
	return streamPayload{length: 2, last: 1, entriesAdded: 2, nodes: node, groups: streamGroupBody("g", []uint64{1, 2}, [][]uint64{{1}, {2}})}
}

// streamGroupBody is a group count of one, and group name with the
// pending ids 1-seq in pel, owned by one consumer per slice of owned.
func streamGroupBody(name string, pel []uint64, owned [][]uint64) []byte {
	b := rdb.AppendString([]byte{1}, []byte(name))
	b = rdb.AppendLen(rdb.AppendID(b, rdb.StreamID{Ms: 1, Seq: 2}), 2)
	b = rdb.AppendLen(b, uint64(len(pel)))
	for _, seq := range pel {
		b = rdb.AppendLen(rdb.AppendMillis(rdb.StreamID{Ms: 1, Seq: seq}.AppendRaw(b), 1700000000000), 3)
	}
	b = rdb.AppendLen(b, uint64(len(owned)))
	for i, ids := range owned {
		b = rdb.AppendMillis(rdb.AppendString(b, []byte{'c', byte('0' + i%2)}), 1700000000000)
		b = rdb.AppendLen(b, uint64(len(ids)))
		for _, seq := range ids {
			b = rdb.StreamID{Ms: 1, Seq: seq}.AppendRaw(b)
		}
	}
	return b
}

func (p streamPayload) body() []byte {
	b := append([]byte{rdb.TypeStreamListpacks2}, p.nodes...)
	b = rdb.AppendLen(b, p.length)
	b = rdb.AppendID(b, rdb.StreamID{Ms: p.last, Seq: 2})
	b = rdb.AppendID(b, rdb.StreamID{Ms: 1, Seq: 1})
	b = rdb.AppendID(b, rdb.StreamID{})
	b = rdb.AppendLen(b, p.entriesAdded)
	return append(b, p.groups...)
}

// TestRestoreStreamRefuses sends stream payloads whose parts disagree
// with each other: each must be refused with Redis' "Bad data format"
// and leave no key, and the good payload they derive from must restore.
func TestRestoreStreamRefuses(t *testing.T) {
	s := startServer(t, nil)
	c := testutil.Dial(t, "tcp", s.Addr().String())
	good := goodStreamPayload()
	if v := doStrings(t, c, []string{"RESTORE", "ok", "0", string(rdb.Seal(good.body()))}); v.Type != '+' {
		t.Fatalf("RESTORE of the good payload = %s", v.Err)
	}
	if v := mustDo(t, c, "XPENDING", "ok", "g", "-", "+", "10"); len(v.Array) != 2 || string(v.Array[1].Array[1].Str) != "c1" {
		t.Fatalf("pending entries of the good payload: %+v", v)
	}
	bad := map[string]func(p *streamPayload){
		"length not the entries'": func(p *streamPayload) { p.length = 3 },
		"last id below an entry":  func(p *streamPayload) { p.last = 0 },
		"fewer entries added":     func(p *streamPayload) { p.entriesAdded = 1 },
		"ids out of order": func(p *streamPayload) {
			p.nodes = rdb.AppendStreamNode([]byte{1}, []rdb.StreamEntry{
				{ID: rdb.StreamID{Ms: 1, Seq: 2}, Fields: [][]byte{[]byte("f"), []byte("a")}},
				{ID: rdb.StreamID{Ms: 1, Seq: 1}, Fields: [][]byte{[]byte("f"), []byte("b")}},
			})
		},
		"node count past the nodes": func(p *streamPayload) { p.nodes[0] = 2 },
		"pending entry unowned":     func(p *streamPayload) { p.groups = streamGroupBody("g", []uint64{1, 2}, [][]uint64{{1}}) },
		"pending entry owned twice": func(p *streamPayload) { p.groups = streamGroupBody("g", []uint64{1, 2}, [][]uint64{{1, 2}, {2}}) },
		"owned id not pending":      func(p *streamPayload) { p.groups = streamGroupBody("g", []uint64{1}, [][]uint64{{1, 2}}) },
		"pending ids out of order":  func(p *streamPayload) { p.groups = streamGroupBody("g", []uint64{2, 1}, [][]uint64{{1, 2}}) },
		"consumer twice":            func(p *streamPayload) { p.groups = streamGroupBody("g", nil, [][]uint64{{}, {}, {}}) },
		"group twice": func(p *streamPayload) {
			one := streamGroupBody("g", nil, nil)
			p.groups = append([]byte{2}, append(one[1:], one[1:]...)...)
		},
		"truncated": func(p *streamPayload) { p.groups = p.groups[:len(p.groups)-3] },
	}
	for name, spoil := range bad {
		p := goodStreamPayload()
		spoil(&p)
		v := doStrings(t, c, []string{"RESTORE", "bad", "0", string(rdb.Seal(p.body()))})
		if v.Type != '-' || v.Err != "ERR Bad data format" {
			t.Errorf("%s: RESTORE = %q %q", name, v.Err, v.Str)
		}
		if n := mustDo(t, c, "EXISTS", "bad").Int; n != 0 {
			t.Errorf("%s: the refused RESTORE left a key", name)
		}
	}
}
