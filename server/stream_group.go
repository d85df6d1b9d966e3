package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lsmgo-dev/lsmgo"
)

// Consumer groups (stream.go has the key layout). Each group, each of its
// consumers and each of its pending entries is an element of its own:
//
//	'G' + group                       last delivered id (16), entries read (8,
//	                                  -1 when unknown), pending (8), consumers (8)
//	'C' + len(group) + group + name   seen time (8, ms), active time (8, ms;
//	                                  -1: never), pending (8)
//	'P' + len(group) + group + id     delivery time (8, ms), delivery count
//	                                  (8), consumer name
//	'Q' + len(group) + group
//	    + len(name) + name + id       empty: id is pending for the consumer
//
// so an XACK is a few point writes whatever the PEL's size, XPENDING and
// XAUTOCLAIM walk the group's PEL in id order from where they start, and
// a consumer's history is a walk over its own 'Q' range. The counts in
// the group and consumer records answer XPENDING's summary and XINFO
// without walking.

// invalidEntriesRead is Redis' SCG_INVALID_ENTRIES_READ.
const invalidEntriesRead = -1

type streamGroup struct {
	name        []byte
	lastID      streamID
	entriesRead int64
	pending     uint64
	consumers   uint64
	dirty       bool
	gone        bool // destroyed by this command
}

type streamConsumer struct {
	name    []byte
	seen    int64
	active  int64
	pending uint64
	dirty   bool
	gone    bool
}

// streamNack is a pending entry: delivered and not yet acknowledged.
type streamNack struct {
	deliveryTime  int64
	deliveryCount uint64
	consumer      []byte
}

// streamOp is one command's work on one stream: the metadata and the
// groups, consumers and pending entries it has read or changed, so that
// its reads see its own writes (the batch is not readable) and each
// record is written once, by flush.
type streamOp struct {
	ks        *keyspace
	r         lsmgo.Reader
	b         *lsmgo.Batch
	key       []byte
	m         streamMeta
	exists    bool
	metaDirty bool
	groups    map[string]*streamGroup
	consumers map[string]*streamConsumer // by consumerKey
	nacks     map[string]*streamNack     // by pendingKey; nil: acknowledged
	// created and events are the keyspace events of the work, in Redis'
	// order: "new" when it created the key, then the stream events,
	// which the command fires once its write commits (notifyOp).
	created bool
	events  []string
	// dead is the range of entries a trim left dead, when big enough to
	// hand to the reclaimer once the write commits (notifyOp).
	dead [2][]byte
}

// trim trims op's stream as t asks (keyspace.trim). A trim that leaves
// reclaimMinElems dead entries or more has their range compacted soon
// after, as DEL has a big collection's.
func (op *streamOp) trim(r lsmgo.Reader, t streamTrim, added *streamEntry) (int64, error) {
	first := op.m.first
	deleted, err := op.ks.trim(r, op.b, op.key, &op.m, t, added)
	if err != nil || deleted == 0 {
		return 0, err
	}
	op.metaDirty = true
	if deleted >= reclaimMinElems {
		end := prefixEnd(op.prefix(streamEntrySub))
		if op.m.length > 0 {
			end = streamEntryKey(nil, op.key, &op.m, op.m.first)
		}
		op.dead = [2][]byte{streamEntryKey(nil, op.key, &op.m, first), end}
	}
	return deleted, nil
}

// fire records a stream event of the work, for notifyOp.
func (op *streamOp) fire(event string) { op.events = append(op.events, event) }

// openStream reads the stream at key for a command; exists is false when
// the key is absent.
func (ks *keyspace) openStream(r lsmgo.Reader, b *lsmgo.Batch, kb *keyBuf, key []byte) (*streamOp, error) {
	m, exists, err := ks.getStream(r, kb, key)
	if err != nil {
		return nil, err
	}
	m.ns = kb.ns // for create when the key is absent
	return &streamOp{ks: ks, r: r, b: b, key: key, m: m, exists: exists}, nil
}

func (op *streamOp) prefix(sub byte) []byte {
	return append(elemsKey(nil, op.key, op.m.coll()), sub)
}

func (op *streamOp) groupKey(group []byte) []byte {
	return append(op.prefix(streamGroupSub), group...)
}

// groupPrefix returns sub + len(group) + group.
func (op *streamOp) groupPrefix(sub byte, group []byte) []byte {
	k := binary.BigEndian.AppendUint32(op.prefix(sub), uint32(len(group)))
	return append(k, group...)
}

func (op *streamOp) pendingKey(group []byte, id streamID) []byte {
	return id.append(op.groupPrefix(streamPendingSub, group))
}

func (op *streamOp) consumerKey(group, name []byte) []byte {
	return append(op.groupPrefix(streamConsumerSub, group), name...)
}

func (op *streamOp) ownedPrefix(group, name []byte) []byte {
	k := binary.BigEndian.AppendUint32(op.groupPrefix(streamOwnedSub, group), uint32(len(name)))
	return append(k, name...)
}

func (op *streamOp) corrupt(what string) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", op.key), Offset: -1, Reason: what + " is damaged"}
}

// get reads one engine key; ok is false when it is absent.
func (op *streamOp) get(k []byte) (v []byte, ok bool, err error) {
	v, err = op.r.Get(k)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// group returns the group named name, or nil when there is none.
func (op *streamOp) group(name []byte) (*streamGroup, error) {
	if g, ok := op.groups[string(name)]; ok {
		if g.gone {
			return nil, nil
		}
		return g, nil
	}
	if !op.exists {
		return nil, nil
	}
	v, ok, err := op.get(op.groupKey(name))
	if err != nil || !ok {
		return nil, err
	}
	if len(v) != 40 {
		return nil, op.corrupt(fmt.Sprintf("consumer group %q", name))
	}
	g := &streamGroup{name: bytes.Clone(name), lastID: decodeStreamID(v),
		entriesRead: int64(binary.BigEndian.Uint64(v[16:])), pending: binary.BigEndian.Uint64(v[24:]),
		consumers: binary.BigEndian.Uint64(v[32:])}
	op.remember(g)
	return g, nil
}

func (op *streamOp) remember(g *streamGroup) {
	if op.groups == nil {
		op.groups = map[string]*streamGroup{}
	}
	op.groups[string(g.name)] = g
}

// createGroup adds a group; it returns nil when one of that name exists.
func (op *streamOp) createGroup(name []byte, last streamID, entriesRead int64) (*streamGroup, error) {
	if g, err := op.group(name); err != nil || g != nil {
		return nil, err
	}
	g := &streamGroup{name: bytes.Clone(name), lastID: last, entriesRead: entriesRead, dirty: true}
	op.remember(g)
	op.m.groups++
	op.metaDirty = true
	return g, nil
}

// destroyGroup deletes g with its consumers and pending entries.
func (op *streamOp) destroyGroup(g *streamGroup) error {
	for _, sub := range []byte{streamPendingSub, streamConsumerSub, streamOwnedSub} {
		if err := op.deleteRange(op.groupPrefix(sub, g.name)); err != nil {
			return err
		}
	}
	op.b.Delete(op.groupKey(g.name))
	g.gone, g.dirty = true, false
	for k, c := range op.consumers {
		if bytes.HasPrefix([]byte(k), op.groupPrefix(streamConsumerSub, g.name)) {
			c.gone, c.dirty = true, false
		}
	}
	for k := range op.nacks {
		if bytes.HasPrefix([]byte(k), op.groupPrefix(streamPendingSub, g.name)) {
			delete(op.nacks, k)
		}
	}
	op.m.groups--
	op.metaDirty = true
	return nil
}

// deleteRange adds to the batch the deletion of every key with prefix.
func (op *streamOp) deleteRange(prefix []byte) error {
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		op.b.Delete(bytes.Clone(it.Key()))
	}
	return closeIter(it, nil)
}

// consumer returns g's consumer name, created when create is set; nil
// when there is none.
func (op *streamOp) consumer(g *streamGroup, name []byte, create bool, now int64) (*streamConsumer, bool, error) {
	k := string(op.consumerKey(g.name, name))
	c, ok := op.consumers[k]
	if !ok {
		v, found, err := op.get([]byte(k))
		if err != nil {
			return nil, false, err
		}
		if found {
			if len(v) != 24 {
				return nil, false, op.corrupt(fmt.Sprintf("consumer %q", name))
			}
			c = &streamConsumer{name: bytes.Clone(name), seen: int64(binary.BigEndian.Uint64(v)),
				active: int64(binary.BigEndian.Uint64(v[8:])), pending: binary.BigEndian.Uint64(v[16:])}
			if op.consumers == nil {
				op.consumers = map[string]*streamConsumer{}
			}
			op.consumers[k] = c
		}
	}
	if c != nil && !c.gone {
		return c, false, nil
	}
	if !create {
		return nil, false, nil
	}
	c = &streamConsumer{name: bytes.Clone(name), seen: now, active: -1, dirty: true}
	if op.consumers == nil {
		op.consumers = map[string]*streamConsumer{}
	}
	op.consumers[k] = c
	g.consumers++
	g.dirty = true
	// Redis announces every consumer it creates, implicit ones included.
	op.fire("xgroup-createconsumer")
	return c, true, nil
}

// deleteConsumer removes c from g with its pending entries.
func (op *streamOp) deleteConsumer(g *streamGroup, c *streamConsumer) error {
	var ids []streamID
	if err := op.scanOwned(g, c, streamID{}, func(id streamID) bool {
		ids = append(ids, id)
		return true
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := op.ack(g, id); err != nil {
			return err
		}
	}
	op.b.Delete(op.consumerKey(g.name, c.name))
	c.gone, c.dirty = true, false
	g.consumers--
	g.dirty = true
	return nil
}

// nack returns g's pending entry for id, or nil.
func (op *streamOp) nack(g *streamGroup, id streamID) (*streamNack, error) {
	k := op.pendingKey(g.name, id)
	if n, ok := op.nacks[string(k)]; ok {
		return n, nil
	}
	v, ok, err := op.get(k)
	if err != nil || !ok {
		return nil, err
	}
	n, err := op.decodeNack(v)
	if err != nil {
		return nil, err
	}
	op.keepNack(k, n)
	return n, nil
}

func (n *streamNack) encode() []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(n.deliveryTime))
	v = binary.BigEndian.AppendUint64(v, n.deliveryCount)
	return append(v, n.consumer...)
}

func (op *streamOp) decodeNack(v []byte) (*streamNack, error) {
	if len(v) < 16 {
		return nil, op.corrupt("pending entry")
	}
	return &streamNack{deliveryTime: int64(binary.BigEndian.Uint64(v)), deliveryCount: binary.BigEndian.Uint64(v[8:]),
		consumer: bytes.Clone(v[16:])}, nil
}

func (op *streamOp) keepNack(k []byte, n *streamNack) {
	if op.nacks == nil {
		op.nacks = map[string]*streamNack{}
	}
	op.nacks[string(k)] = n
}

// putNack writes g's pending entry for id as n, owned by c; old is the
// entry it replaces (nil: a new one). It moves the ownership record and
// the counts when the owner changes.
func (op *streamOp) putNack(g *streamGroup, c *streamConsumer, id streamID, n, old *streamNack) error {
	k := op.pendingKey(g.name, id)
	if old == nil {
		g.pending++
		g.dirty = true
	}
	if old == nil || !bytes.Equal(old.consumer, c.name) {
		if old != nil {
			if err := op.disown(g, old.consumer, id); err != nil {
				return err
			}
		}
		op.b.Set(id.append(op.ownedPrefix(g.name, c.name)), nil)
		c.pending++
		c.dirty = true
	}
	n.consumer = c.name
	op.b.Set(k, n.encode())
	op.keepNack(k, n)
	return nil
}

// disown removes id from the pending entries of g's consumer owner.
func (op *streamOp) disown(g *streamGroup, owner []byte, id streamID) error {
	oc, _, err := op.consumer(g, owner, false, 0)
	if err != nil {
		return err
	}
	if oc == nil {
		return op.corrupt(fmt.Sprintf("consumer %q of a pending entry", owner))
	}
	op.b.Delete(id.append(op.ownedPrefix(g.name, owner)))
	oc.pending--
	oc.dirty = true
	return nil
}

// ack removes g's pending entry for id, if any; it returns whether there
// was one through acked.
func (op *streamOp) ack(g *streamGroup, id streamID) error {
	_, err := op.ackOne(g, id)
	return err
}

func (op *streamOp) ackOne(g *streamGroup, id streamID) (bool, error) {
	n, err := op.nack(g, id)
	if err != nil || n == nil {
		return false, err
	}
	if err := op.disown(g, n.consumer, id); err != nil {
		return false, err
	}
	k := op.pendingKey(g.name, id)
	op.b.Delete(k)
	op.keepNack(k, nil)
	g.pending--
	g.dirty = true
	return true, nil
}

// scanPending calls fn with g's pending entries from id from on, in id
// order, until fn returns false. Entries this command changed are seen
// as changed.
func (op *streamOp) scanPending(g *streamGroup, from streamID, fn func(id streamID, n *streamNack) bool) error {
	prefix := op.groupPrefix(streamPendingSub, g.name)
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: from.append(bytes.Clone(prefix)), UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+16 {
			continue
		}
		n, cached := op.nacks[string(k)]
		if !cached {
			if n, err = op.decodeNack(it.Value()); err != nil {
				return closeIter(it, err)
			}
		}
		if n != nil && !fn(decodeStreamID(k[len(prefix):]), n) {
			break
		}
	}
	return closeIter(it, nil)
}

// scanOwned calls fn with the ids pending for consumer c of g from from
// on, in order, until fn returns false.
func (op *streamOp) scanOwned(g *streamGroup, c *streamConsumer, from streamID, fn func(id streamID) bool) error {
	prefix := op.ownedPrefix(g.name, c.name)
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: from.append(bytes.Clone(prefix)), UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); len(k) == len(prefix)+16 && !fn(decodeStreamID(k[len(prefix):])) {
			break
		}
	}
	return closeIter(it, nil)
}

// scanGroups calls fn with each group, in name order.
func (op *streamOp) scanGroups(fn func(g *streamGroup) bool) error {
	if !op.exists {
		return nil
	}
	var names [][]byte
	prefix := op.prefix(streamGroupSub)
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		names = append(names, bytes.Clone(it.Key()[len(prefix):]))
	}
	if err := closeIter(it, nil); err != nil {
		return err
	}
	for _, name := range names {
		g, err := op.group(name)
		if err != nil {
			return err
		}
		if g != nil && !fn(g) {
			break
		}
	}
	return nil
}

// scanConsumers calls fn with each consumer of g, in name order.
func (op *streamOp) scanConsumers(g *streamGroup, fn func(c *streamConsumer) bool) error {
	var names [][]byte
	prefix := op.groupPrefix(streamConsumerSub, g.name)
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		names = append(names, bytes.Clone(it.Key()[len(prefix):]))
	}
	if err := closeIter(it, nil); err != nil {
		return err
	}
	for _, name := range names {
		c, _, err := op.consumer(g, name, false, 0)
		if err != nil {
			return err
		}
		if c != nil && !fn(c) {
			break
		}
	}
	return nil
}

// allGroups returns every group, in name order.
func (op *streamOp) allGroups() ([]*streamGroup, error) {
	var list []*streamGroup
	err := op.scanGroups(func(g *streamGroup) bool {
		list = append(list, g)
		return true
	})
	return list, err
}

// allConsumers returns every consumer of g, in name order.
func (op *streamOp) allConsumers(g *streamGroup) ([]*streamConsumer, error) {
	var list []*streamConsumer
	err := op.scanConsumers(g, func(cons *streamConsumer) bool {
		list = append(list, cons)
		return true
	})
	return list, err
}

// flush adds to the batch the records this command changed, the
// metadata last.
func (op *streamOp) flush(kb *keyBuf) {
	for _, g := range op.groups {
		if g.dirty && !g.gone {
			op.b.Set(op.groupKey(g.name), g.encode())
			g.dirty = false
		}
	}
	for k, c := range op.consumers {
		if c.dirty && !c.gone {
			op.b.Set([]byte(k), c.encode())
			c.dirty = false
		}
	}
	if op.metaDirty || op.b.Count() > 0 {
		op.ks.putStream(op.b, kb, op.key, &op.m)
		op.metaDirty = false
	}
}

func (g *streamGroup) encode() []byte {
	v := g.lastID.append(nil)
	v = binary.BigEndian.AppendUint64(v, uint64(g.entriesRead))
	v = binary.BigEndian.AppendUint64(v, g.pending)
	return binary.BigEndian.AppendUint64(v, g.consumers)
}

func (c *streamConsumer) encode() []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(c.seen))
	v = binary.BigEndian.AppendUint64(v, uint64(c.active))
	return binary.BigEndian.AppendUint64(v, c.pending)
}
