package server

import (
	"encoding/binary"
	"fmt"
)

// Streams written before node records (lsmgo up to 1c20104) have 96
// bytes of metadata: the 128-byte layout less the head node, the tail
// node's live count and its last id, and no "N" records. That layout
// deleted every entry it trimmed, as XDEL does, so its stored entries
// are exactly the live ones, each with its node: reads serve such a
// stream as it is, and the first write upgrades it (doc/server.md,
// "Streams").

// upgrade rebuilds a stream read in the 96-byte layout into the
// 128-byte one, in op's batch, so that it commits with the command's
// own write, under the key's lock; the upgrade changes nothing a reply
// shows, so a command that writes nothing else still commits it, once.
// One walk over the entries gives each node's live count and last id.
// What the old layout did not keep is estimated: the last id put in a
// node (deleted or not) is taken as its last live one, as the old trim
// judged MINID by; a node before the tail was closed full, so its fill
// is nodeMax (its live count if more); and the nodes whose entries XDEL
// all deleted get a record of no live entries. When XDEL emptied the
// tail node, the tail falls back to the newest node with live entries,
// as streamDelete does.
func (op *streamOp) upgrade(nodeMax uint64) error {
	m := &op.m
	if !m.v1 {
		return nil
	}
	tailFill := m.tail.fill
	m.v1, m.tail, m.headNode = false, streamNode{}, 0
	op.metaDirty = true
	if m.length == 0 {
		return nil // the next XADD opens a new node, as the old layout's did
	}
	recs := map[uint64]streamNode{}
	var cur streamNode // the record of node n, being built
	var n, count uint64
	var bad error
	err := op.ks.streamWalk(op.r, op.key, m, m.first, maxStreamID, false, func(id streamID, v []byte) bool {
		node, k := binary.Uvarint(v)
		switch {
		case k <= 0:
			_, bad = decodeStreamEntry(op.key, id, v)
			return false
		case count > 0 && node < n || node > m.tailNode:
			bad = op.corrupt(fmt.Sprintf("stream entry %s's node", id))
			return false
		case count == 0:
			m.headNode, n = node, node
		}
		for ; n < node; n++ {
			recs[n] = cur
			cur = streamNode{last: cur.last}
		}
		cur.live++
		cur.last = id
		count++
		return true
	})
	if err == nil {
		err = bad
	}
	if err == nil && count != m.length {
		err = countMismatch(op.key, typeStream, int64(count), int64(m.length))
	}
	if err != nil {
		return err
	}
	full := func(node streamNode) streamNode {
		node.fill = max(node.live, nodeMax)
		return node
	}
	if n == m.tailNode {
		cur.fill = tailFill
	} else { // XDEL emptied the tail node: Redis freed it
		m.tailNode, cur = n, full(cur)
	}
	m.tail = cur
	m.upgraded = make(map[uint64]streamNode, len(recs))
	var buf []byte
	for i, rec := range recs {
		rec = full(rec)
		m.upgraded[i] = rec
		buf = streamNodeKey(buf, op.key, m, i)
		op.b.Set(buf, rec.encode())
	}
	return nil
}
