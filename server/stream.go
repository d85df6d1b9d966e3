package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

// A stream is a collection (collection.go) whose metadata holds more than
// a count, and whose elements come in several kinds, each under a
// sub-prefix of its own after the collection's element prefix
// (doc/server.md, "Streams"):
//
//	prefix + 'E' + ms (8, BE) + seq (8, BE)         an entry: node (uvarint),
//	                                                field count (uvarint), then
//	                                                each field and value as
//	                                                uvarint length + bytes
//	prefix + 'G' + group                            a consumer group (stream_group.go)
//	prefix + 'P' + len(group) (4, BE) + group + id  a pending entry of the group
//	prefix + 'C' + len(group) (4, BE) + group
//	    + consumer                                  a consumer of the group
//	prefix + 'Q' + len(group) (4, BE) + group
//	    + len(consumer) (4, BE) + consumer + id     an id pending for the consumer
//
// Entries sit in id order, so XADD is one write at the end, XRANGE one
// seek and a walk over what it returns, and trimming walks only the
// entries it deletes. The metadata keeps what Redis keeps in its stream
// header (length, first and last ids, the largest deleted id, the entries
// ever added, the group count), so XLEN and XINFO's counters are one read.
//
// Redis keeps entries in radix tree nodes of up to stream-node-max-entries,
// and "~" trimming removes whole nodes only. Each entry here records the
// node Redis would have put it in (a number that grows by one each time
// the tail node fills), so "~" trims what Redis trims.
const (
	streamEntrySub    = 'E'
	streamGroupSub    = 'G'
	streamPendingSub  = 'P'
	streamConsumerSub = 'C'
	streamOwnedSub    = 'Q'

	typeStream = 'x'

	// streamMetaLen is the metadata's size: version, length, last id,
	// first id, max deleted id, entries added, groups, tail node and the
	// tail node's fill.
	streamMetaLen = 8 + 8 + 16 + 16 + 16 + 8 + 8 + 8 + 8
)

// streamID is a stream entry id, ms-seq.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (id streamID) compare(o streamID) int {
	switch {
	case id.ms < o.ms:
		return -1
	case id.ms > o.ms:
		return 1
	case id.seq < o.seq:
		return -1
	case id.seq > o.seq:
		return 1
	}
	return 0
}

func (id streamID) isZero() bool { return id == streamID{} }

// next returns the id after id; ok is false for the largest.
func (id streamID) next() (streamID, bool) {
	switch {
	case id.seq < math.MaxUint64:
		return streamID{id.ms, id.seq + 1}, true
	case id.ms < math.MaxUint64:
		return streamID{id.ms + 1, 0}, true
	}
	return id, false
}

// prev returns the id before id; ok is false for 0-0.
func (id streamID) prev() (streamID, bool) {
	switch {
	case id.seq > 0:
		return streamID{id.ms, id.seq - 1}, true
	case id.ms > 0:
		return streamID{id.ms - 1, math.MaxUint64}, true
	}
	return id, false
}

func (id streamID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

func (id streamID) append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.ms)
	return binary.BigEndian.AppendUint64(dst, id.seq)
}

func decodeStreamID(b []byte) streamID {
	return streamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

const msgInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"

// parseStreamID parses an id as Redis does: "-" and "+" (unless strict),
// "ms" (seq is missingSeq) or "ms-seq", each part as string2ull reads it;
// with allowAutoSeq, "ms-*" too, which sets autoSeq.
func parseStreamID(arg []byte, strict, allowAutoSeq bool, missingSeq uint64) (id streamID, autoSeq bool, err error) {
	bad := redisError(msgInvalidStreamID)
	if len(arg) > 127 {
		return id, false, bad
	}
	if len(arg) == 1 && (arg[0] == '-' || arg[0] == '+') {
		if strict {
			return id, false, bad
		}
		if arg[0] == '+' {
			return maxStreamID, false, nil
		}
		return streamID{}, false, nil
	}
	msPart, seqPart, dash := bytes.Cut(arg, []byte{'-'})
	ms, ok := parseUll(msPart)
	if !ok {
		return id, false, bad
	}
	id.ms, id.seq = ms, missingSeq
	if dash {
		if allowAutoSeq && len(seqPart) == 1 && seqPart[0] == '*' {
			return streamID{ms, 0}, true, nil
		}
		if id.seq, ok = parseUll(seqPart); !ok {
			return id, false, bad
		}
	}
	return id, false, nil
}

// parseUll reads an unsigned 64-bit number as Redis' string2ull does: a
// string2ll number that is not negative, or else what strtoull accepts
// whole (leading spaces, a sign, digits; "-" wraps around).
func parseUll(b []byte) (uint64, bool) {
	if n, ok := parseInt(b); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(b) && isSpaceByte(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:]), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// streamMeta is a stream's decoded metadata.
type streamMeta struct {
	version      uint64
	length       uint64
	last         streamID
	first        streamID
	maxDeleted   streamID
	entriesAdded uint64
	groups       uint64
	tailNode     uint64 // the node of the newest entry
	tailFill     uint64 // entries ever put in the tail node
	expireAt     time.Time
	ns           nsID // the namespace it was read from or is written to
}

func decodeStreamMeta(userKey []byte, e entry) (streamMeta, error) {
	p := e.payload
	if len(p) != streamMetaLen {
		return streamMeta{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1,
			Reason: fmt.Sprintf("stream metadata is %d bytes, want %d", len(p), streamMetaLen)}
	}
	u := func(at int) uint64 { return binary.BigEndian.Uint64(p[at:]) }
	return streamMeta{version: u(0), length: u(8), last: decodeStreamID(p[16:]), first: decodeStreamID(p[32:]),
		maxDeleted: decodeStreamID(p[48:]), entriesAdded: u(64), groups: u(72), tailNode: u(80), tailFill: u(88),
		expireAt: e.expireAt, ns: e.ns}, nil
}

func (m *streamMeta) encode() []byte {
	p := make([]byte, 0, streamMetaLen)
	p = binary.BigEndian.AppendUint64(p, m.version)
	p = binary.BigEndian.AppendUint64(p, m.length)
	p = m.last.append(p)
	p = m.first.append(p)
	p = m.maxDeleted.append(p)
	for _, v := range []uint64{m.entriesAdded, m.groups, m.tailNode, m.tailFill} {
		p = binary.BigEndian.AppendUint64(p, v)
	}
	return p
}

// coll is the stream as a collection, for the code that knows only
// versions and counts.
func (m *streamMeta) coll() collMeta {
	return collMeta{ns: m.ns, typ: typeStream, version: m.version, count: int64(m.length)}
}

// getStream reads the stream at key through r; ok is false when the key
// is absent, and err is errWrongType when it holds another type.
func (ks *keyspace) getStream(r lsmgo.Reader, kb *keyBuf, key []byte) (m streamMeta, ok bool, err error) {
	e, ok, err := ks.getEntry(r, kb, key)
	if !ok || err != nil {
		return m, false, err
	}
	if e.typ != typeStream {
		return m, false, errWrongType
	}
	m, err = decodeStreamMeta(key, e)
	return m, err == nil, err
}

// newStream returns the metadata of a new, empty stream.
func (ks *keyspace) newStream(ns nsID) (streamMeta, error) {
	v, err := ks.versions.nextVersion()
	return streamMeta{ns: ns, version: v}, err
}

// putStream adds to b the write of m at key. An empty stream stays: Redis
// keeps a stream that XDEL or XTRIM emptied.
func (ks *keyspace) putStream(b *lsmgo.Batch, kb *keyBuf, key []byte, m *streamMeta) {
	ks.putEntry(b, kb, key, entry{typ: typeStream, payload: m.encode(), expireAt: m.expireAt})
}

// streamEntry is one decoded stream entry.
type streamEntry struct {
	id     streamID
	node   uint64
	fields [][]byte // field, value, field, value …
}

// streamEntryKey appends to dst the engine key of entry id of m at key.
func streamEntryKey(dst, key []byte, m *streamMeta, id streamID) []byte {
	dst = append(elemsKey(dst, key, m.coll()), streamEntrySub)
	return id.append(dst)
}

func encodeStreamEntry(node uint64, fields [][]byte) []byte {
	n := 2 * binary.MaxVarintLen64
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	v := make([]byte, 0, n)
	v = binary.AppendUvarint(v, node)
	v = binary.AppendUvarint(v, uint64(len(fields)/2))
	for _, f := range fields {
		v = binary.AppendUvarint(v, uint64(len(f)))
		v = append(v, f...)
	}
	return v
}

// decodeStreamEntry decodes an entry's value; the fields alias v.
func decodeStreamEntry(key []byte, id streamID, v []byte) (streamEntry, error) {
	bad := func() (streamEntry, error) {
		return streamEntry{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1,
			Reason: fmt.Sprintf("stream entry %s is damaged", id)}
	}
	e := streamEntry{id: id}
	node, n := binary.Uvarint(v)
	if n <= 0 {
		return bad()
	}
	e.node, v = node, v[n:]
	pairs, n := binary.Uvarint(v)
	if n <= 0 || pairs > uint64(len(v)) {
		return bad()
	}
	v = v[n:]
	e.fields = make([][]byte, 0, 2*pairs)
	for range 2 * pairs {
		l, n := binary.Uvarint(v)
		if n <= 0 || l > uint64(len(v)-n) {
			return bad()
		}
		e.fields = append(e.fields, v[n:n+int(l)])
		v = v[n+int(l):]
	}
	if len(v) != 0 {
		return bad()
	}
	return e, nil
}

// streamScan calls fn with the entries of m at key whose ids are within
// [from, to], in id order or in reverse, until fn returns false. The
// entry's fields are valid only during the call.
func (ks *keyspace) streamScan(r lsmgo.Reader, key []byte, m *streamMeta, from, to streamID, reverse bool, fn func(e streamEntry) bool) error {
	var bad error
	err := ks.streamWalk(r, key, m, from, to, reverse, func(id streamID, v []byte) bool {
		e, err := decodeStreamEntry(key, id, v)
		if err != nil {
			bad = err
			return false
		}
		return fn(e)
	})
	if bad != nil {
		return bad
	}
	return err
}

// streamWalk is streamScan over the entries' encoded values, for a caller
// that needs less than the whole entry.
//
// Walks start at the first live entry at the earliest: trimming leaves
// tombstones before it until compaction drops them, and a stream capped
// by XADD … MAXLEN would otherwise step over all of them at every add.
func (ks *keyspace) streamWalk(r lsmgo.Reader, key []byte, m *streamMeta, from, to streamID, reverse bool, fn func(id streamID, v []byte) bool) error {
	if m.length > 0 && from.compare(m.first) < 0 {
		from = m.first
	}
	if from.compare(to) > 0 {
		return nil
	}
	lower := streamEntryKey(nil, key, m, from)
	upper := streamEntryKey(nil, key, m, to)
	if next := prefixEnd(upper); next != nil {
		upper = next
	} else {
		upper = prefixEnd(lower[:len(lower)-16])
	}
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	valid, advance := it.First(), it.Next
	if reverse {
		valid, advance = it.Last(), it.Prev
	}
	at := len(lower) - 16
	for ; valid; valid = advance() {
		k := it.Key()
		if len(k) != at+16 {
			continue
		}
		if !fn(decodeStreamID(k[at:]), it.Value()) {
			break
		}
	}
	return closeIter(it, nil)
}

// streamGet reads the entry id of m at key; ok is false when it is absent.
func (ks *keyspace) streamGet(r lsmgo.Reader, buf *[]byte, key []byte, m *streamMeta, id streamID) (e streamEntry, ok bool, err error) {
	*buf = streamEntryKey(*buf, key, m, id)
	v, err := r.Get(*buf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	e, err = decodeStreamEntry(key, id, v)
	return e, err == nil, err
}

// streamEdge returns the first (or last) entry id of m at key; ok is
// false when the stream is empty.
func (ks *keyspace) streamEdge(r lsmgo.Reader, key []byte, m *streamMeta, last bool) (id streamID, ok bool, err error) {
	err = ks.streamScan(r, key, m, streamID{}, maxStreamID, last, func(e streamEntry) bool {
		id, ok = e.id, true
		return false
	})
	return id, ok, err
}

// streamAppend adds to b the entry id with fields at the end of m,
// placing it in Redis' node: a new one when the tail node holds
// nodeMax entries already (0: no limit). It returns the entry's node.
func (ks *keyspace) streamAppend(b *lsmgo.Batch, buf *[]byte, key []byte, m *streamMeta, id streamID, fields [][]byte, nodeMax uint64) uint64 {
	if m.length == 0 || nodeMax > 0 && m.tailFill >= nodeMax {
		m.tailNode++
		m.tailFill = 0
	}
	m.tailFill++
	*buf = streamEntryKey(*buf, key, m, id)
	b.Set(*buf, encodeStreamEntry(m.tailNode, fields))
	m.length++
	m.entriesAdded++
	m.last = id
	if m.length == 1 {
		m.first = id
	}
	return m.tailNode
}

// streamTrim is a trimming request: MAXLEN or MINID, exact or ("~") by
// whole nodes, deleting at most limit entries (0: no limit).
type streamTrim struct {
	maxLen int64 // -1: trim by minID
	minID  streamID
	approx bool
	limit  int64
}

// trim adds to b the deletion of the oldest entries of m that t asks to
// remove and returns how many. It reads the entries it deletes and the
// first one it keeps, and for "~" the rest of that one's node. added, when
// not nil, is an entry the batch appends, which r does not show.
func (ks *keyspace) trim(r lsmgo.Reader, b *lsmgo.Batch, buf *[]byte, key []byte, m *streamMeta, t streamTrim, added *streamEntry) (int64, error) {
	if t.maxLen >= 0 && m.length <= uint64(t.maxLen) {
		return 0, nil
	}
	var deleted int64
	var node []streamID // the ids of the node being judged ("~")
	var nodeID uint64
	kept, stopped := streamID{}, false
	drop := func(id streamID) {
		*buf = streamEntryKey(*buf, key, m, id)
		b.Delete(*buf)
		m.length--
		deleted++
	}
	// wholeNodeMayGo reports whether t asks for a node of n entries, the
	// last one last, to go whole: or, for the first n entries of a node
	// not read to its end, whether it still may.
	wholeNodeMayGo := func(n int, last streamID) bool {
		if t.limit > 0 && deleted+int64(n) > t.limit {
			return false
		}
		if t.maxLen >= 0 {
			return int64(m.length)-int64(n) >= t.maxLen
		}
		return last.compare(t.minID) < 0
	}
	// removeNode deletes the node in node when t asks for all of it.
	removeNode := func() bool {
		if !wholeNodeMayGo(len(node), node[len(node)-1]) {
			return false
		}
		for _, id := range node {
			drop(id)
		}
		node = node[:0]
		return true
	}
	visit := func(e streamEntry) bool {
		if !t.approx {
			if t.maxLen >= 0 && m.length <= uint64(t.maxLen) || t.maxLen < 0 && e.id.compare(t.minID) >= 0 {
				kept, stopped = e.id, true
				return false
			}
			drop(e.id)
			return true
		}
		if len(node) > 0 && e.node != nodeID && !removeNode() {
			kept, stopped = node[0], true
			return false
		}
		if !wholeNodeMayGo(len(node)+1, e.id) {
			// The node cannot go whole, whatever else it holds, and
			// trimming stops at the first node that stays: do not read
			// the rest of it (XADD … MAXLEN ~ would, at every add).
			kept, stopped = e.id, true
			if len(node) > 0 {
				kept = node[0]
			}
			return false
		}
		nodeID = e.node
		node = append(node, e.id)
		return true
	}
	// Only each entry's id and node matter here: its fields stay encoded
	// (decoding them took half of XADD … MAXLEN ~'s CPU).
	var bad error
	err := ks.streamWalk(r, key, m, streamID{}, maxStreamID, false, func(id streamID, v []byte) bool {
		node, n := binary.Uvarint(v)
		if n <= 0 {
			_, bad = decodeStreamEntry(key, id, v)
			return false
		}
		return visit(streamEntry{id: id, node: node})
	})
	if err == nil {
		err = bad
	}
	if err == nil && added != nil && !stopped {
		visit(*added)
	}
	if err != nil {
		b.Reset()
		return 0, err
	}
	if len(node) > 0 && !stopped && !removeNode() {
		kept = node[0]
	}
	if deleted > 0 {
		m.first = kept
		if m.length == 0 {
			m.first = streamID{}
		}
	}
	return deleted, nil
}

// rdb returns id as package rdb spells it.
func (id streamID) rdb() rdb.StreamID { return rdb.StreamID{Ms: id.ms, Seq: id.seq} }
