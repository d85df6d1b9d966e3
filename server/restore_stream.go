package server

import (
	"bytes"
	"sort"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

// restoreStream decodes a stream of encoding t (any of Redis' three: 6.2's
// and older, 7.0's, 7.2's; layout in package rdb) from r into b as the
// value at key. Each listpack node becomes one of this server's nodes, so
// that "~" trims what the sending Redis would have trimmed; entries
// marked deleted are dropped. Where an older encoding lacks a counter,
// it is derived as Redis derives it on load: the entries added are the
// length, a group's entries read are estimated from its last id.
//
// Beyond what Redis checks, the payload must agree with itself, since
// this server's records rely on it: entry ids rise strictly, the length
// counts the live entries, the last id is at least every entry's, a
// group's pending entries rise strictly by id and each is owned by
// exactly one consumer.
func (ks *keyspace) restoreStream(b *lsmgo.Batch, kb *keyBuf, key []byte, r *rdb.Reader, t byte, expireAt time.Time) error {
	m, err := ks.newStream(kb.ns)
	if err != nil {
		return err
	}
	m.expireAt = expireAt
	top, some, err := ks.restoreStreamEntries(b, key, r, &m)
	if err != nil {
		return err
	}
	length, err := r.Len()
	if err != nil {
		return err
	}
	last, err := r.ID()
	if err != nil {
		return err
	}
	m.last = streamID{last.Ms, last.Seq}
	if length != m.length || some && m.last.compare(top) < 0 {
		return rdb.ErrFormat
	}
	m.entriesAdded = m.length
	if t != rdb.TypeStreamListpacks {
		var ids [2]rdb.StreamID // the first id, which the entries tell, and the largest deleted one
		for i := range ids {
			if ids[i], err = r.ID(); err != nil {
				return err
			}
		}
		m.maxDeleted = streamID{ids[1].Ms, ids[1].Seq}
		if m.entriesAdded, err = r.Len(); err != nil {
			return err
		}
		if m.entriesAdded < m.length {
			return rdb.ErrFormat
		}
	}
	op := &streamOp{ks: ks, b: b, key: key, m: m, exists: true}
	groups, err := r.Len()
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for range groups {
		if err := op.restoreGroup(r, t, names); err != nil {
			return err
		}
	}
	ks.putStream(b, kb, key, &op.m)
	return nil
}

// restoreStreamEntries adds the nodes' live entries to b and m; top is
// the largest id of any entry, deleted ones included, when some is set.
func (ks *keyspace) restoreStreamEntries(b *lsmgo.Batch, key []byte, r *rdb.Reader, m *streamMeta) (top streamID, some bool, err error) {
	nodes, err := r.Len()
	if err != nil {
		return top, false, err
	}
	var buf []byte
	for range nodes {
		nodeKey, err := r.String()
		if err != nil {
			return top, some, err
		}
		lp, err := r.String()
		if err != nil {
			return top, some, err
		}
		node, err := rdb.DecodeStreamNode(nodeKey, lp)
		if err != nil {
			return top, some, err
		}
		if m.tailNode > 0 { // close the node before
			buf = streamNodeKey(buf, key, m, m.tailNode)
			b.Set(buf, m.tail.encode())
		}
		m.tailNode++
		m.tail = streamNode{fill: uint64(len(node.Entries))} // Redis counts deleted entries towards a full node
		for _, e := range node.Entries {
			id := streamID{e.ID.Ms, e.ID.Seq}
			if some && id.compare(top) <= 0 {
				return top, some, rdb.ErrFormat
			}
			top, some = id, true
			m.tail.last = id
			if e.Deleted {
				continue
			}
			size := int64(len(key)) + 64
			for _, f := range e.Fields {
				size += int64(len(f)) + 10
			}
			if size > maxElem(key) {
				return top, some, errElemTooBig
			}
			buf = streamEntryKey(buf, key, m, id)
			b.Set(buf, encodeStreamEntry(m.tailNode, e.Fields))
			if m.length == 0 {
				m.first, m.headNode = id, m.tailNode
			}
			m.length++
			m.tail.live++
		}
	}
	return top, some, nil
}

// restoredNack is a pending entry read from a payload, before the
// consumer that owns it is known.
type restoredNack struct {
	id            streamID
	deliveryTime  int64
	deliveryCount uint64
	owner         int // index into the group's consumers; -1 until one claims it
}

// restoreGroup reads one consumer group into op's batch; names holds the
// names of the groups read before it.
func (op *streamOp) restoreGroup(r *rdb.Reader, t byte, names map[string]bool) error {
	name, err := r.String()
	if err != nil {
		return err
	}
	if names[string(name)] {
		return rdb.ErrFormat
	}
	names[string(name)] = true
	last, err := r.ID()
	if err != nil {
		return err
	}
	g := &streamGroup{name: bytes.Clone(name), lastID: streamID{last.Ms, last.Seq}}
	if t == rdb.TypeStreamListpacks {
		g.entriesRead = op.m.entriesBefore(g.lastID)
	} else {
		read, err := r.Len()
		if err != nil {
			return err
		}
		g.entriesRead = int64(read)
	}
	pel, err := restorePEL(r)
	if err != nil {
		return err
	}
	consumers, err := r.Len()
	if err != nil {
		return err
	}
	var owners [][]byte
	seen := map[string]bool{}
	for range consumers {
		c, err := op.restoreConsumer(r, t, g, pel, len(owners))
		if err != nil {
			return err
		}
		if seen[string(c.name)] {
			return rdb.ErrFormat
		}
		seen[string(c.name)] = true
		owners = append(owners, c.name)
		op.b.Set(op.consumerKey(g.name, c.name), c.encode())
	}
	for _, n := range pel {
		if n.owner < 0 {
			return rdb.ErrFormat // Redis' deep sanitization refuses an unowned entry too
		}
		nack := streamNack{deliveryTime: n.deliveryTime, deliveryCount: n.deliveryCount, consumer: owners[n.owner]}
		op.b.Set(op.pendingKey(g.name, n.id), nack.encode())
	}
	g.pending, g.consumers = uint64(len(pel)), consumers
	op.b.Set(op.groupKey(g.name), g.encode())
	op.m.groups++
	return nil
}

// restorePEL reads a group's pending entries, which must rise by id.
func restorePEL(r *rdb.Reader) ([]restoredNack, error) {
	n, err := r.Len()
	if err != nil {
		return nil, err
	}
	var pel []restoredNack
	for range n {
		id, err := r.RawID()
		if err != nil {
			return nil, err
		}
		when, err := r.Millis()
		if err != nil {
			return nil, err
		}
		count, err := r.Len()
		if err != nil {
			return nil, err
		}
		nack := restoredNack{id: streamID{id.Ms, id.Seq}, deliveryTime: when, deliveryCount: count, owner: -1}
		if len(pel) > 0 && nack.id.compare(pel[len(pel)-1].id) <= 0 {
			return nil, rdb.ErrFormat
		}
		pel = append(pel, nack)
	}
	return pel, nil
}

// restoreConsumer reads consumer number index of g, marks the pending
// entries it owns in pel and adds its ownership records to op's batch.
func (op *streamOp) restoreConsumer(r *rdb.Reader, t byte, g *streamGroup, pel []restoredNack, index int) (*streamConsumer, error) {
	name, err := r.String()
	if err != nil {
		return nil, err
	}
	c := &streamConsumer{name: bytes.Clone(name)}
	if c.seen, err = r.Millis(); err != nil {
		return nil, err
	}
	c.active = c.seen // what Redis 7.2 assumes for a payload without active times
	if t == rdb.TypeStreamListpacks3 {
		if c.active, err = r.Millis(); err != nil {
			return nil, err
		}
	}
	if c.pending, err = r.Len(); err != nil {
		return nil, err
	}
	owned := op.ownedPrefix(g.name, c.name)
	for range c.pending {
		id, err := r.RawID()
		if err != nil {
			return nil, err
		}
		sid := streamID{id.Ms, id.Seq}
		at := sort.Search(len(pel), func(i int) bool { return pel[i].id.compare(sid) >= 0 })
		if at == len(pel) || pel[at].id != sid || pel[at].owner >= 0 {
			return nil, rdb.ErrFormat
		}
		pel[at].owner = index
		op.b.Set(sid.append(owned[:len(owned):len(owned)]), nil)
	}
	return c, nil
}
