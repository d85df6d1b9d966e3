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
//	prefix + 'N' + node (8, BE)                     a closed node: its last id
//	                                                (16) and live entries (8)
//	prefix + 'G' + group                            a consumer group (stream_group.go)
//	prefix + 'P' + len(group) (4, BE) + group + id  a pending entry of the group
//	prefix + 'C' + len(group) (4, BE) + group
//	    + consumer                                  a consumer of the group
//	prefix + 'Q' + len(group) (4, BE) + group
//	    + len(consumer) (4, BE) + consumer + id     an id pending for the consumer
//
// Entries sit in id order, so XADD is one write at the end and XRANGE one
// seek and a walk over what it returns. The metadata keeps what Redis
// keeps in its stream header (length, first and last ids, the largest
// deleted id, the entries ever added, the group count), so XLEN and
// XINFO's counters are one read.
//
// Redis keeps entries in radix tree nodes of up to stream-node-max-entries,
// and "~" trimming removes whole nodes only. Each entry here records the
// node Redis would have put it in (a number that grows by one each time
// the tail node fills), and each node but the newest has a record of its
// last id and live entry count, so trimming goes node by node as Redis
// does, without reading the entries. Trimming writes no deletions: the
// entries below the first id (all of them in an empty stream) are dead,
// no read returns them, and the compaction filter drops them
// (streamMeta.deadElem), as it drops a deleted collection's elements.
const (
	streamEntrySub    = 'E'
	streamNodeSub     = 'N'
	streamGroupSub    = 'G'
	streamPendingSub  = 'P'
	streamConsumerSub = 'C'
	streamOwnedSub    = 'Q'

	typeStream = 'x'

	// streamMetaLen is the metadata's size: version, length, last id,
	// first id, max deleted id, entries added, groups, tail node, the
	// tail node's fill, the head node, the tail node's live entries and
	// its last id.
	streamMetaLen = 8 + 8 + 16 + 16 + 16 + 8 + 8 + 8 + 8 + 8 + 8 + 16

	// streamMetaLenV1 is the size of the metadata lsmgo wrote before
	// node records: up to the tail node's fill (streamOp.upgrade).
	streamMetaLenV1 = 96

	// streamNodeLen is a node record's size: last id, live entries and
	// entries ever put in it.
	streamNodeLen = 16 + 8 + 8
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
	tailNode     uint64     // the node of the newest entry
	headNode     uint64     // the node of the first entry (when length > 0)
	tail         streamNode // the tail node's record
	expireAt     time.Time
	ns           nsID // the namespace it was read from or is written to

	// closed is the node an append closed in the batch being built,
	// whose record the reader does not show yet (closedOK).
	closed   streamNode
	closedN  uint64
	closedOK bool

	// v1 marks metadata read in the 96-byte layout, whose head node and
	// tail counts are unknown and which has no node records: reads serve
	// it as it is, a write upgrades it first (streamOp.upgrade).
	v1 bool
	// upgraded holds the node records the upgrade put in the batch being
	// built, which the reader does not show yet.
	upgraded map[uint64]streamNode
}

// streamNode is what trimming and appending need of a node: the id of
// the last entry put in it (deleted or not, as the last entry of Redis'
// listpack), how many of its entries are live, and how many were ever
// put in it (Redis counts deleted entries towards a full node).
type streamNode struct {
	last       streamID
	live, fill uint64
}

func (n streamNode) encode() []byte {
	v := n.last.append(make([]byte, 0, streamNodeLen))
	v = binary.BigEndian.AppendUint64(v, n.live)
	return binary.BigEndian.AppendUint64(v, n.fill)
}

func decodeStreamMeta(userKey []byte, e entry) (streamMeta, error) {
	p := e.payload
	if len(p) != streamMetaLen && len(p) != streamMetaLenV1 {
		return streamMeta{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1,
			Reason: fmt.Sprintf("stream metadata is %d bytes, want %d", len(p), streamMetaLen)}
	}
	u := func(at int) uint64 { return binary.BigEndian.Uint64(p[at:]) }
	m := streamMeta{version: u(0), length: u(8), last: decodeStreamID(p[16:]), first: decodeStreamID(p[32:]),
		maxDeleted: decodeStreamID(p[48:]), entriesAdded: u(64), groups: u(72), tailNode: u(80),
		tail: streamNode{fill: u(88)}, expireAt: e.expireAt, ns: e.ns}
	if len(p) == streamMetaLenV1 {
		// Every stored entry of this layout at or after the first id is
		// live (it deleted what it trimmed), as liveID and deadElem
		// assume, and it has no "N" records, so reads need nothing more.
		m.v1 = true
		return m, nil
	}
	m.headNode, m.tail.live, m.tail.last = u(96), u(104), decodeStreamID(p[112:])
	return m, nil
}

func (m *streamMeta) encode() []byte {
	p := make([]byte, 0, streamMetaLen)
	p = binary.BigEndian.AppendUint64(p, m.version)
	p = binary.BigEndian.AppendUint64(p, m.length)
	p = m.last.append(p)
	p = m.first.append(p)
	p = m.maxDeleted.append(p)
	for _, v := range []uint64{m.entriesAdded, m.groups, m.tailNode, m.tail.fill, m.headNode, m.tail.live} {
		p = binary.BigEndian.AppendUint64(p, v)
	}
	return m.tail.last.append(p)
}

// liveID reports whether an entry id may be live: trimming leaves the
// entries below the first id in place, dead.
func (m *streamMeta) liveID(id streamID) bool {
	return m.length > 0 && id.compare(m.first) >= 0
}

// deadElem reports whether the element elem (the engine key's part after
// the version) is an entry or node record that trimming left dead. Every
// change of the first id or the head node only raises them while the
// stream holds entries, and an emptied stream's next entry is newer than
// every dead one (XSETID, which may lower the last id of an empty stream,
// deletes the dead entries above it), so what is dead stays dead, as the
// compaction filter requires.
func (m *streamMeta) deadElem(elem []byte) bool {
	switch {
	case len(elem) == 17 && elem[0] == streamEntrySub:
		return !m.liveID(decodeStreamID(elem[1:]))
	case len(elem) == 9 && elem[0] == streamNodeSub:
		return m.length == 0 || binary.BigEndian.Uint64(elem[1:]) < m.headNode
	}
	return false
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

// streamNodeKey appends to dst the engine key of the record of node n of
// m at key.
func streamNodeKey(dst, key []byte, m *streamMeta, n uint64) []byte {
	dst = append(elemsKey(dst, key, m.coll()), streamNodeSub)
	return binary.BigEndian.AppendUint64(dst, n)
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
// Walks start at the first live entry at the earliest: the entries
// before it are dead (trimmed) until compaction drops them.
func (ks *keyspace) streamWalk(r lsmgo.Reader, key []byte, m *streamMeta, from, to streamID, reverse bool, fn func(id streamID, v []byte) bool) error {
	if m.length == 0 {
		return nil
	}
	if from.compare(m.first) < 0 {
		from = m.first
	}
	return ks.streamRawWalk(r, key, m, from, to, reverse, fn)
}

// streamRawWalk is streamWalk over every stored entry, dead ones
// included.
func (ks *keyspace) streamRawWalk(r lsmgo.Reader, key []byte, m *streamMeta, from, to streamID, reverse bool, fn func(id streamID, v []byte) bool) error {
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
	if !m.liveID(id) {
		return e, false, nil
	}
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
// nodeMax entries already (0: no limit), closing the tail node (its
// record written to b). It returns the entry's node.
func (ks *keyspace) streamAppend(b *lsmgo.Batch, buf *[]byte, key []byte, m *streamMeta, id streamID, fields [][]byte, nodeMax uint64) uint64 {
	switch {
	case m.length == 0 && m.tail.fill == 0: // Redis has no node left
		m.tailNode++
		m.tail = streamNode{}
	case nodeMax > 0 && m.tail.fill >= nodeMax:
		*buf = streamNodeKey(*buf, key, m, m.tailNode)
		b.Set(*buf, m.tail.encode())
		m.closed, m.closedN, m.closedOK = m.tail, m.tailNode, true
		m.tailNode++
		m.tail = streamNode{}
	}
	if m.length == 0 {
		m.headNode = m.tailNode
	}
	m.tail.fill++
	m.tail.live++
	m.tail.last = id
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

// streamNodes reads the node records of a stream in order, for trimming:
// the tail's and the one the batch closed come from the metadata, the
// others from the engine, by point reads and, for a long run, one
// iterator.
type streamNodes struct {
	r       lsmgo.Reader
	key     []byte
	m       *streamMeta
	buf     []byte
	scan    bool // nodes are asked for in rising order
	reads   int
	it      *lsmgo.Iterator
	written map[uint64]streamNode // records put in the batch, which r does not show
}

// streamNodeGets is how many node records trimming reads with point
// reads before it opens an iterator: XADD … MAXLEN ~ reads one or two.
const streamNodeGets = 4

// get returns the record of node n.
func (ns *streamNodes) get(n uint64) (streamNode, error) {
	m := ns.m
	switch {
	case n == m.tailNode:
		return m.tail, nil
	case m.closedOK && n == m.closedN:
		return m.closed, nil
	}
	if node, ok := ns.written[n]; ok {
		return node, nil
	}
	if node, ok := m.upgraded[n]; ok {
		return node, nil
	}
	var v []byte
	if ns.reads++; !ns.scan || ns.reads <= streamNodeGets {
		ns.buf = streamNodeKey(ns.buf, ns.key, m, n)
		var err error
		if v, err = ns.r.Get(ns.buf); err != nil && !errors.Is(err, lsmgo.ErrNotFound) {
			return streamNode{}, err
		}
	} else {
		if ns.it == nil {
			lower := streamNodeKey(nil, ns.key, m, n)
			it, err := ns.r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: streamNodeKey(nil, ns.key, m, m.tailNode)})
			if err != nil {
				return streamNode{}, err
			}
			ns.it = it
			it.First()
		} else {
			ns.it.Next()
		}
		if ns.it.Valid() && bytes.HasSuffix(ns.it.Key(), binary.BigEndian.AppendUint64(ns.buf[:0], n)) {
			v = ns.it.Value()
		} else if err := ns.it.Error(); err != nil {
			return streamNode{}, err
		}
	}
	if len(v) != streamNodeLen {
		return streamNode{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", ns.key), Offset: -1,
			Reason: fmt.Sprintf("stream node %d's record is missing or damaged", n)}
	}
	return streamNode{last: decodeStreamID(v), live: binary.BigEndian.Uint64(v[16:]), fill: binary.BigEndian.Uint64(v[24:])}, nil
}

func (ns *streamNodes) close() error {
	if ns.it == nil {
		return nil
	}
	return closeIter(ns.it, nil)
}

// put adds to b the record of node n (the tail's goes to the metadata).
func (ns *streamNodes) put(b *lsmgo.Batch, n uint64, node streamNode) {
	m := ns.m
	switch {
	case n == m.tailNode:
		m.tail = node
		return
	case m.closedOK && n == m.closedN:
		m.closed = node
	}
	if _, ok := m.upgraded[n]; ok {
		m.upgraded[n] = node
	}
	if ns.written == nil {
		ns.written = map[uint64]streamNode{}
	}
	ns.written[n] = node
	ns.buf = streamNodeKey(ns.buf, ns.key, m, n)
	b.Set(ns.buf, node.encode())
}

// trim trims m as t asks and returns how many entries it removed. As
// Redis does, it goes node by node from the head: a node goes whole when
// t allows (nothing of it is read or written: its entries fall below the
// new first id, dead), "~" stops at the first node that stays, and an
// exact trim then steps over the entries of that node it removes,
// rewriting the node's live count. added, when not nil, is an entry the
// batch appends, which r does not show.
func (ks *keyspace) trim(r lsmgo.Reader, b *lsmgo.Batch, key []byte, m *streamMeta, t streamTrim, added *streamEntry) (deleted int64, err error) {
	if m.length == 0 || t.maxLen >= 0 && m.length <= uint64(t.maxLen) {
		return 0, nil
	}
	nodes := &streamNodes{r: r, key: key, m: m, scan: true}
	from := m.first // the first entry that may be live
	n := m.headNode
	for ; n <= m.tailNode; n++ {
		if t.maxLen >= 0 && m.length <= uint64(t.maxLen) {
			break
		}
		node, err := nodes.get(n)
		if err != nil {
			nodes.close()
			return 0, err
		}
		if t.limit > 0 && deleted+int64(node.live) > t.limit {
			break
		}
		if t.maxLen >= 0 && m.length-node.live >= uint64(t.maxLen) || t.maxLen < 0 && node.last.compare(t.minID) < 0 {
			m.length -= node.live
			deleted += int64(node.live)
			from, _ = node.last.next()
			continue
		}
		if !t.approx {
			var gone uint64
			err = ks.streamRawWalk(r, key, m, from, node.last, false, func(id streamID, _ []byte) bool {
				if t.maxLen >= 0 && m.length <= uint64(t.maxLen) || t.maxLen < 0 && id.compare(t.minID) >= 0 {
					return false
				}
				from, _ = id.next()
				gone++
				m.length--
				return true
			})
			if err == nil && gone > node.live {
				err = &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1,
					Reason: fmt.Sprintf("stream node %d holds more entries than its record counts", n)}
			}
			if err != nil {
				nodes.close()
				return 0, err
			}
			node.live -= gone
			deleted += int64(gone)
			nodes.put(b, n, node)
		}
		break
	}
	if err := nodes.close(); err != nil || deleted == 0 {
		return 0, err
	}
	if m.length == 0 {
		// Redis' last node stays when the trim marked its entries
		// deleted one by one, and the next XADD goes to it if it has
		// room; a trim that removed every node leaves none.
		m.first = streamID{}
		if n > m.tailNode {
			m.tail = streamNode{}
		}
		return deleted, nil
	}
	return deleted, ks.streamFirstFrom(r, key, m, from, added)
}

// streamFirstFrom sets m's first id (and head node) to its first entry
// at or after from, which is live: the batch's added entry when r shows
// none.
func (ks *keyspace) streamFirstFrom(r lsmgo.Reader, key []byte, m *streamMeta, from streamID, added *streamEntry) error {
	found := false
	var bad error
	err := ks.streamRawWalk(r, key, m, from, maxStreamID, false, func(id streamID, v []byte) bool {
		node, n := binary.Uvarint(v)
		if n <= 0 {
			_, bad = decodeStreamEntry(key, id, v)
			return false
		}
		m.first, m.headNode, found = id, node, true
		return false
	})
	if err == nil {
		err = bad
	}
	if err == nil && !found {
		if added == nil {
			return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1, Reason: "stream metadata counts entries that are not there"}
		}
		m.first, m.headNode = added.id, added.node
	}
	return err
}

// rdb returns id as package rdb spells it.
func (id streamID) rdb() rdb.StreamID { return rdb.StreamID{Ms: id.ms, Seq: id.seq} }
