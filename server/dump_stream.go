package server

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

// A stream dumps as Redis 7.0 writes one (rdb.TypeStreamListpacks2, the
// layout in package rdb), so that a Redis of 7.0 or later restores it:
// one listpack node per node this server recorded for its entries
// (stream.go), each holding its live entries as if added in order, then
// the stream's counters, then each group with its pending entries, in
// id order, and its consumers, in name order, each with the ids it owns.
// The times written are those stored: delivery times and each consumer's
// seen time (7.0 has no active time; a Redis 7.2 that loads the payload
// takes the seen time for it, and so does restoreStream).

// dumpNodeBytes caps the field bytes of one dumped node: with
// stream-node-max-entries 0 this server puts every entry in one node,
// and a listpack cannot outgrow Redis' stream listpack limit of 1 GiB.
const dumpNodeBytes = 1 << 29

func (ks *keyspace) dumpStream(r lsmgo.Reader, d *dumper, key []byte, e entry) error {
	m, err := decodeStreamMeta(key, e)
	if err != nil {
		return err
	}
	var nodes []byte
	nodeCount, length := uint64(0), uint64(0)
	var pending []rdb.StreamEntry
	var node uint64
	pendingBytes := 0
	flush := func() {
		nodes = rdb.AppendStreamNode(nodes, pending)
		nodeCount++
		pending, pendingBytes = pending[:0], 0
	}
	err = ks.streamScan(r, key, &m, streamID{}, maxStreamID, false, func(se streamEntry) bool {
		if len(pending) > 0 && (se.node != node || pendingBytes > dumpNodeBytes) {
			flush()
		}
		node = se.node
		fields := make([][]byte, len(se.fields)) // se's fields live only during the call
		for i, f := range se.fields {
			fields[i] = bytes.Clone(f)
			pendingBytes += len(f)
		}
		pending = append(pending, rdb.StreamEntry{ID: se.id.rdb(), Fields: fields})
		length++
		if int64(len(nodes)+pendingBytes) > d.limit {
			d.err = errDumpTooBig
			return false
		}
		return true
	})
	if err != nil || d.err != nil {
		return err
	}
	if len(pending) > 0 {
		flush()
	}
	if length != m.length {
		return countMismatch(key, typeStream, int64(length), int64(m.length))
	}
	d.out = rdb.AppendLen(append(d.out, rdb.TypeStreamListpacks2), nodeCount)
	d.out = append(d.out, nodes...)
	d.out = rdb.AppendLen(d.out, m.length)
	for _, id := range []streamID{m.last, m.first, m.maxDeleted} {
		d.out = rdb.AppendID(d.out, id.rdb())
	}
	d.out = rdb.AppendLen(d.out, m.entriesAdded)
	op := &streamOp{ks: ks, r: r, key: key, m: m, exists: true}
	groups, err := op.allGroups()
	if err != nil {
		return err
	}
	d.out = rdb.AppendLen(d.out, uint64(len(groups)))
	for _, g := range groups {
		if err := op.dumpGroup(d, g); err != nil || d.err != nil {
			return err
		}
	}
	return nil
}

// dumpGroup writes g: its name, last id, entries read, its pending
// entries (id, delivery time, delivery count) and its consumers (name,
// seen time, the ids they own).
func (op *streamOp) dumpGroup(d *dumper, g *streamGroup) error {
	d.out = rdb.AppendString(d.out, g.name)
	d.out = rdb.AppendID(d.out, g.lastID.rdb())
	d.out = rdb.AppendLen(d.out, uint64(g.entriesRead)) // -1 (unknown) as Redis writes it: 2^64-1
	d.out = rdb.AppendLen(d.out, g.pending)
	n := uint64(0)
	err := op.scanPending(g, streamID{}, func(id streamID, nack *streamNack) bool {
		d.out = rdb.AppendMillis(id.rdb().AppendRaw(d.out), nack.deliveryTime)
		d.out = rdb.AppendLen(d.out, nack.deliveryCount)
		n++
		return d.grow()
	})
	if err != nil || d.err != nil {
		return err
	}
	if n != g.pending {
		return op.corrupt("the pending count of consumer group " + string(g.name))
	}
	consumers, err := op.allConsumers(g)
	if err != nil {
		return err
	}
	d.out = rdb.AppendLen(d.out, uint64(len(consumers)))
	for _, c := range consumers {
		d.out = rdb.AppendMillis(rdb.AppendString(d.out, c.name), c.seen)
		d.out = rdb.AppendLen(d.out, c.pending)
		n = 0
		err := op.scanOwned(g, c, streamID{}, func(id streamID) bool {
			d.out = id.rdb().AppendRaw(d.out)
			n++
			return d.grow()
		})
		if err != nil || d.err != nil {
			return err
		}
		if n != c.pending {
			return op.corrupt("the pending count of consumer " + string(c.name))
		}
	}
	return nil
}
