package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// Collections (hashes, sets, lists and sorted sets) are stored
// element by element, so that one key may hold more than fits in memory
// and a command touches only the elements it needs (doc/server.md,
// "Keyspace encoding"):
//
//	engine key                                   engine value
//	'k' + user key                               header byte + version (8, BE) + count (8, BE)
//	'e' + len(user key) (4, BE) + user key
//	    + version (8, BE) + element              the element's value (a hash field's value)
//
// The metadata under 'k' is the collection: when it is absent (deleted,
// expired, flushed, or overwritten by another type) the collection is
// gone, whatever elements remain. Each new collection takes a version that
// no earlier collection at the same key has had, so elements left behind
// by a deleted one are invisible to its successor, and DEL, EXPIRE and
// FLUSHALL of a collection write only its metadata, whatever its size.
// Those stale elements stay on disk until the engine's compaction filter
// drops them (reclaim.go); for that, every command writes a collection's
// metadata in the batch of the elements it writes, and every element of
// every type lives in the 'e' range under its collection's version.
//
// A list's metadata carries 8 more bytes, the slot of its first element
// (list.go); like every type's, it starts with the version.
const (
	elemPrefix  = keylayout.Elem
	metaLen     = 16
	listMetaLen = metaLen + 8
)

// collMeta is the decoded metadata of a collection.
type collMeta struct {
	ns       nsID // the namespace of the collection and its elements
	typ      byte
	version  uint64
	count    int64
	expireAt time.Time
	head     int64 // a list's first slot
}

// versionClock hands out collection versions. A version must never repeat
// for a key, across restarts too: a deleted collection's elements stay on
// disk until reclaimed, and a new collection with the old version would
// see them. So versions start at the wall clock in nanoseconds, or past
// every version handed out before if the clock was stepped back, and the
// clock reserves them in blocks recorded (synced) in the engine under
// versionsKey before handing any out: a restart starts past the last
// reserved block, whatever the wall clock says.
type versionClock struct {
	db    *lsmgo.DB
	mu    sync.Mutex
	next  uint64 // the next version to hand out
	limit uint64 // the first version not reserved
}

const (
	versionsKey = string(keylayout.Meta) + "versions"
	// versionBlock is how many versions one synced write reserves.
	versionBlock = 1 << 20
)

func newVersionClock(db *lsmgo.DB) (*versionClock, error) {
	vc := &versionClock{db: db, next: uint64(time.Now().UnixNano())}
	v, err := db.Get([]byte(versionsKey))
	switch {
	case errors.Is(err, lsmgo.ErrNotFound):
	case err != nil:
		return nil, err
	case len(v) != 8:
		return nil, &lsmgo.CorruptionError{File: "key " + versionsKey, Offset: -1, Reason: fmt.Sprintf("%d bytes, want 8", len(v))}
	default:
		vc.next = max(vc.next, binary.BigEndian.Uint64(v))
	}
	vc.limit = vc.next
	return vc, nil
}

// nextVersion returns a version never handed out before in this
// directory.
func (vc *versionClock) nextVersion() (uint64, error) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.next >= vc.limit {
		limit := vc.next + versionBlock
		if err := vc.db.Set([]byte(versionsKey), binary.BigEndian.AppendUint64(nil, limit), lsmgo.Sync); err != nil {
			return 0, err
		}
		vc.limit = limit
	}
	v := vc.next
	vc.next++
	return v, nil
}

// decodeMeta checks a collection's metadata entry.
func decodeMeta(userKey []byte, e entry) (collMeta, error) {
	if e.typ == typeStream {
		m, err := decodeStreamMeta(userKey, e)
		return m.coll(), err
	}
	want := metaLen
	if e.typ == typeList {
		want = listMetaLen
	}
	if len(e.payload) != want {
		return collMeta{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1,
			Reason: fmt.Sprintf("%s metadata is %d bytes, want %d", typeNames[e.typ], len(e.payload), want)}
	}
	m := collMeta{ns: e.ns, typ: e.typ, expireAt: e.expireAt,
		version: binary.BigEndian.Uint64(e.payload), count: int64(binary.BigEndian.Uint64(e.payload[8:]))}
	if e.typ == typeList {
		m.head = int64(binary.BigEndian.Uint64(e.payload[16:]))
	}
	if m.count <= 0 {
		return collMeta{}, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1,
			Reason: fmt.Sprintf("%s has %d elements", typeNames[e.typ], m.count)}
	}
	return m, nil
}

// getColl reads the metadata of the collection of type typ at userKey
// through r; ok is false when the key is absent, and err is errWrongType
// when it holds another type.
func (ks *keyspace) getColl(r lsmgo.Reader, kb *keyBuf, userKey []byte, typ byte) (m collMeta, ok bool, err error) {
	e, ok, err := ks.getEntry(r, kb, userKey)
	return collOf(userKey, typ, e, ok, err)
}

// collOf decodes the metadata of the collection of type typ at userKey
// from what a read of its entry returned (getEntry).
func collOf(userKey []byte, typ byte, e entry, ok bool, err error) (m collMeta, _ bool, _ error) {
	if !ok || err != nil {
		return m, false, err
	}
	if e.typ != typ {
		return m, false, errWrongType
	}
	m, err = decodeMeta(userKey, e)
	return m, err == nil, err
}

// newColl returns the metadata of a new, still empty collection of type
// typ in namespace ns, with a version of its own.
func (ks *keyspace) newColl(ns nsID, typ byte) (collMeta, error) {
	v, err := ks.versions.nextVersion()
	return collMeta{ns: ns, typ: typ, version: v}, err
}

// putColl adds to b the write of m, or the deletion of the key when m has
// no elements left (Redis deletes an emptied collection).
func (ks *keyspace) putColl(b *lsmgo.Batch, kb *keyBuf, userKey []byte, m collMeta) {
	if m.count == 0 {
		ks.deleteKey(b, kb, userKey)
		return
	}
	var payload [listMetaLen]byte
	binary.BigEndian.PutUint64(payload[:], m.version)
	binary.BigEndian.PutUint64(payload[8:], uint64(m.count))
	n := metaLen
	if m.typ == typeList {
		binary.BigEndian.PutUint64(payload[16:], uint64(m.head))
		n = listMetaLen
	}
	ks.putEntry(b, kb, userKey, entry{typ: m.typ, payload: payload[:n], expireAt: m.expireAt})
}

// elemsKey appends to dst the prefix shared by the element keys of the
// collection m at userKey: its namespace's, then its key's and version's.
func elemsKey(dst, userKey []byte, m collMeta) []byte {
	// One allocation, with room for a sub-prefix and a score or a short
	// element, when dst has too little room.
	dst = slices.Grow(dst[:0], 1+4+4+len(userKey)+8+16)
	dst = appendNS(dst, elemPrefix, keylayout.NSElem, m.ns)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(userKey)))
	dst = append(dst, userKey...)
	return binary.BigEndian.AppendUint64(dst, m.version)
}

// elemKey appends to dst the engine key of element elem of the collection
// m at userKey.
func elemKey(dst, userKey []byte, m collMeta, elem []byte) []byte {
	return append(elemsKey(dst, userKey, m), elem...)
}

// maxElem is the most bytes an element and its value may hold together in
// the collection at userKey: the engine's limit on one entry less the
// element key's fixed part.
func maxElem(userKey []byte) int64 {
	return lsmgo.MaxEntrySize - int64(len(userKey)) - 13
}

// getElem reads element elem of m at userKey through r; ok is false when
// it is absent.
func (ks *keyspace) getElem(r lsmgo.Reader, buf *[]byte, userKey []byte, m collMeta, elem []byte) (val []byte, ok bool, err error) {
	*buf = elemKey(*buf, userKey, m, elem)
	val, err = r.Get(*buf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, false, nil
	}
	return val, err == nil, err
}

// putElem adds to b the write of element elem of m at userKey.
func (ks *keyspace) putElem(b *lsmgo.Batch, buf *[]byte, userKey []byte, m collMeta, elem, val []byte) {
	*buf = elemKey(*buf, userKey, m, elem)
	b.Set(*buf, val)
}

// deleteElem adds to b the deletion of element elem of m at userKey.
func (ks *keyspace) deleteElem(b *lsmgo.Batch, buf *[]byte, userKey []byte, m collMeta, elem []byte) {
	*buf = elemKey(*buf, userKey, m, elem)
	b.Delete(*buf)
}

// scanElems calls fn with each element of m at userKey and its value, in
// element order, read through r, starting at from, until fn returns false.
// Both slices are valid only during the call.
func (ks *keyspace) scanElems(r lsmgo.Reader, userKey []byte, m collMeta, from []byte, fn func(elem, val []byte) bool) error {
	return ks.scanElemsIn(r, userKey, m, nil, from, fn)
}

// scanElemsIn is scanElems over the elements whose names start with sub,
// passed to fn without it: a collection that keeps more than one kind of
// entry (a sorted set's members and its score index) keeps each kind
// under a sub-prefix of its own.
func (ks *keyspace) scanElemsIn(r lsmgo.Reader, userKey []byte, m collMeta, sub, from []byte, fn func(elem, val []byte) bool) error {
	_, err := ks.walkElems(r, userKey, m, sub, from, fn)
	return err
}

// walkElems is scanElemsIn, also returning how many dead elements the
// walk passed over (lsmgo.Iterator.Skipped).
func (ks *keyspace) walkElems(r lsmgo.Reader, userKey []byte, m collMeta, sub, from []byte, fn func(elem, val []byte) bool) (dead int64, err error) {
	prefix := append(elemsKey(nil, userKey, m), sub...)
	lower := append(bytes.Clone(prefix), from...)
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key()[len(prefix):], it.Value()) {
			break
		}
	}
	dead = it.Skipped()
	if err := it.Error(); err != nil {
		it.Close()
		return dead, err
	}
	return dead, it.Close()
}

// copyColl adds to b a copy of the collection in e at src as a new
// collection at dst, with a version of its own and e's expiry; it reads
// the elements through r. It knows no type: every collection's metadata
// starts with its version, which the copy replaces, and every element
// lives in the collection's 'e' range, which the copy walks whole, so a
// new collection type copies (COPY, RENAME) without code of its own
// (a stream's dead entries are left out). The batch grows with the
// collection.
func (ks *keyspace) copyColl(r lsmgo.Reader, b *lsmgo.Batch, kb *keyBuf, src, dst []byte, e entry) error {
	if len(e.payload) < 8 {
		return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", src), Offset: -1,
			Reason: fmt.Sprintf("%s metadata is %d bytes, too short for a version", typeNames[e.typ], len(e.payload))}
	}
	from := collMeta{ns: e.ns, version: binary.BigEndian.Uint64(e.payload)}
	to, err := ks.newColl(kb.ns, e.typ)
	if err != nil {
		return err
	}
	live := func([]byte) bool { return true }
	if e.typ == typeStream { // trimmed entries stay behind, dead
		m, err := decodeStreamMeta(src, e)
		if err != nil {
			return err
		}
		live = func(elem []byte) bool { return !m.deadElem(elem) }
	}
	var buf []byte
	err = ks.scanElems(r, src, from, nil, func(elem, val []byte) bool {
		if live(elem) {
			ks.putElem(b, &buf, dst, to, elem, val)
		}
		return true
	})
	if err != nil {
		return err
	}
	payload := bytes.Clone(e.payload)
	binary.BigEndian.PutUint64(payload, to.version)
	ks.putEntry(b, kb, dst, entry{typ: e.typ, payload: payload, expireAt: e.expireAt})
	return nil
}

// randomElem picks one element under sub of the collection m at userKey, and its
// value, with a few seeks instead of a walk over the elements: it descends
// the byte-wise trie of the elements, choosing at each depth a byte
// uniformly between the smallest and the largest element below the
// current prefix, and seeks to it. Elements that share every byte with
// their neighbours but the last few (numbers, ids) come out about
// uniformly; a byte value that no element has sends its share to the
// next element, so sparse element names are picked with some bias (Redis'
// own pick is biased by its hash table too). It costs about two seeks per
// distinct byte position, less the nodes of the trie that nodes, when not
// nil, holds from earlier picks (picknodes.go), to which it adds those it
// seeks; cost counts the positions it stopped at as live.
func (ks *keyspace) randomElem(r lsmgo.Reader, userKey []byte, m collMeta, sub []byte, nodes *pickNodes) (elem, val []byte, cost walkCost, err error) {
	prefix := append(elemsKey(nil, userKey, m), sub...)
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, cost, err
	}
	defer func() {
		cost.dead += it.Skipped()
		it.Close()
	}()
	// at is the element the iterator is at, when atOK: the pick takes
	// its value without seeking back to it when it is the pick.
	var at []byte
	atOK := false
	suffix := func(ok bool) []byte {
		cost.live++
		if !ok {
			atOK = false
			return nil
		}
		at, atOK = bytes.Clone(it.Key()[len(prefix):]), true
		return at
	}
	var lo, hi []byte
	var keptOf, kept []byte // kept is the value of element keptOf
	if n, ok := nodes.node(nil); ok {
		lo, hi = n.lo, n.hi
	} else {
		lo, hi = suffix(it.First()), suffix(it.Last())
		if lo == nil || hi == nil {
			if err := it.Error(); err != nil {
				return nil, nil, cost, err
			}
			return nil, nil, cost, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1, Reason: "collection metadata counts elements that are not there"}
		}
		nodes.add(nil, lo, hi)
	}
	// Invariant: lo and hi are elements, lo ≤ hi, and the pick is between
	// them. Each round either ends or lengthens their common prefix.
	seek := make([]byte, 0, len(prefix)+len(hi)+1)
	for !bytes.Equal(lo, hi) {
		d := commonPrefixLen(lo, hi)
		low := -1 // lo ends at d: it is the branch "no more bytes"
		if d < len(lo) {
			low = int(lo[d])
		}
		c := low + rand.IntN(int(hi[d])-low+1)
		if c < 0 {
			break // lo itself
		}
		seek = append(append(append(seek[:0], prefix...), hi[:d]...), byte(c))
		under := seek[len(prefix):]
		if n, ok := nodes.node(under); ok {
			lo, hi = n.lo, n.hi
			continue
		}
		next := suffix(it.SeekGE(seek))
		if next == nil {
			break
		}
		if !bytes.HasPrefix(next, under) {
			// No element has byte c here: the next one takes its share.
			lo, hi = next, next
			break
		}
		lo = next
		if c < int(hi[d]) {
			// The last element under the prefix seek: lo itself when
			// the element after it is past the prefix (a step forward,
			// much cheaper than a seek back, which the memtable makes
			// by a search from its top), or the one before the first
			// element past the prefix. lo's value is kept for when lo
			// is the pick, unless it is big.
			if v := it.Value(); len(v) <= maxKeptValue {
				keptOf, kept = lo, bytes.Clone(v)
			}
			if after := suffix(it.Next()); after == nil || !bytes.HasPrefix(after, under) {
				hi = lo
			} else if hi = suffix(it.SeekLT(prefixEnd(seek))); hi == nil {
				break
			}
		}
		if !bytes.Equal(lo, hi) {
			// A node of one element is no cheaper to find from
			// the memo than by the seek that found it, and is
			// popped next.
			nodes.add(under, lo, hi)
		}
	}
	if err := it.Error(); err != nil {
		return nil, nil, cost, err
	}
	switch {
	case keptOf != nil && bytes.Equal(keptOf, lo):
		return bytes.Clone(lo), kept, cost, nil
	case atOK && bytes.Equal(at, lo):
		return bytes.Clone(lo), bytes.Clone(it.Value()), cost, nil
	}
	seek = append(append(seek[:0], prefix...), lo...)
	if !it.SeekGE(seek) || !bytes.Equal(it.Key()[len(prefix):], lo) {
		if err := it.Error(); err != nil {
			return nil, nil, cost, err
		}
		if nodes != nil {
			// Not what the memo promises; pick without it.
			nodes.reset()
			elem, val, again, err := ks.randomElem(r, userKey, m, sub, nil)
			cost.add(again)
			return elem, val, cost, err
		}
		return nil, nil, cost, fmt.Errorf("random element of %q vanished", userKey)
	}
	cost.live++
	return bytes.Clone(lo), bytes.Clone(it.Value()), cost, nil
}

// maxKeptValue is the largest value randomElem copies on its way down in
// case its element is the pick, saving a seek back to it.
const maxKeptValue = 256

func commonPrefixLen(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// firstColl runs pop, under the locks of all keys, on the first of keys
// that holds a collection of type typ (only on ready when it is not nil),
// for the pops of LMPOP, ZMPOP and the blocking commands; pop replies. It
// returns false, having replied nothing, when no key holds one, or, with
// ready, when that key holds another type: a blocked client's try
// (blocking.go). Otherwise a key of another type before the first
// collection is WRONGTYPE.
func (c *conn) firstColl(keys [][]byte, ready []byte, typ byte, pop func(key []byte, m collMeta)) bool {
	if ready != nil {
		keys = [][]byte{ready}
	}
	held := c.lock(keys, 1)
	defer c.unlock(held)
	for _, key := range keys {
		m, exists, err := c.s.ks.getColl(c.reader(), &c.scratch, key, typ)
		switch {
		case ready != nil && errors.Is(err, errWrongType):
			return false
		case err != nil:
			c.replyErr(err)
			return true
		case !exists:
			continue
		}
		pop(key, m)
		return true
	}
	return false
}

// storeColl replaces whatever dst holds with a new collection of type
// typ holding n elements, which put adds to the batch under the new
// collection's version, commits, and replies with n: the STORE commands
// (SINTERSTORE, ZUNIONSTORE, ZRANGESTORE …), whose keyspace event, of
// typ's class, is event ("del" when an empty result deleted dst). The
// caller holds dst's lock. An empty result deletes dst only when dst
// holds a value: as in Redis, deleting nothing is no write, which WATCH
// must not see.
func (c *conn) storeColl(dst []byte, typ byte, event string, n int, put func(m collMeta)) error {
	var existed, created bool
	if n == 0 {
		exists, err := c.s.ks.exists(c.reader(), &c.scratch, dst)
		if err != nil {
			c.batch.Reset()
			return err
		}
		if exists {
			c.s.ks.deleteKey(c.batch, &c.scratch, dst)
		}
		existed = exists
	} else {
		var err error
		if created, err = c.creates(dst); err != nil {
			c.batch.Reset()
			return err
		}
		m, err := c.s.ks.newColl(c.scratch.ns, typ)
		if err != nil {
			c.batch.Reset()
			return err
		}
		put(m)
		m.count = int64(n)
		c.s.ks.putColl(c.batch, &c.scratch, dst, m)
		c.signalReady(dst) // a client may be blocked on dst (blocking.go)
	}
	if err := c.commit(); err != nil {
		return err
	}
	switch {
	case n > 0:
		c.notifyEdit(typ, event, dst, created, false)
	case existed:
		c.notify(notifyGeneric, "del", dst)
	}
	c.wr.Int(int64(n))
	return nil
}

// getColl reads the metadata of the collection of type typ at key
// through the command's reader; err is errWrongType when key holds
// another type.
func (c *conn) getColl(key []byte, typ byte) (m collMeta, exists bool, err error) {
	return c.s.ks.getColl(c.reader(), &c.scratch, key, typ)
}

// getElem reads one element of m at key through the command's reader.
// The value is valid until the command's next collection read
// (pointread.go).
func (c *conn) getElem(key []byte, m collMeta, elem []byte) (val []byte, exists bool, err error) {
	c.vals = c.vals[:0]
	return c.appendElem(key, m, nil, elem)
}

// editColl runs a write of the collection of type typ at key under the
// key's lock: fn gets the metadata (a new collection's when the key is
// absent), adds its element writes to c.batch and adjusts m.count, or
// returns an error. editColl then writes the metadata (deleting an
// emptied collection) and commits everything as one batch. It replies
// nothing: the caller replies with the error, or with its result.
func (c *conn) editColl(key []byte, typ byte, fn func(m *collMeta, existed bool) error) error {
	return c.editCollEvent(key, typ, "", fn)
}

// editCollEvent is editColl for a command whose write fires the keyspace
// event named event, of typ's class, when it wrote anything (notifyEdit).
func (c *conn) editCollEvent(key []byte, typ byte, event string, fn func(m *collMeta, existed bool) error) error {
	held := c.lock([][]byte{key}, 1)
	defer c.unlock(held)
	m, exists, err := c.s.ks.getColl(c.reader(), &c.scratch, key, typ)
	if err != nil {
		return err
	}
	if !exists {
		if m, err = c.s.ks.newColl(c.scratch.ns, typ); err != nil {
			return err
		}
	}
	if typ == typeSet && exists && event != "spop" {
		c.s.ks.dropNodes(&c.elemBuf, key, m) // picknodes.go
	}
	before := m.count
	if err := fn(&m, exists); err != nil {
		c.batch.Reset()
		return err
	}
	if m.count == before && c.batch.Count() == 0 {
		return nil
	}
	c.s.ks.putColl(c.batch, &c.scratch, key, m)
	if err := c.commit(); err != nil {
		return err
	}
	if event != "" {
		c.notifyEdit(typ, event, key, !exists, m.count == 0)
	}
	return nil
}

// readElems returns every element under sub of m at key (scanElemsIn)
// and its value, read through r.
func (ks *keyspace) readElems(r lsmgo.Reader, key []byte, m collMeta, sub []byte) (elems, vals [][]byte, err error) {
	err = ks.scanElemsIn(r, key, m, sub, nil, func(elem, val []byte) bool {
		elems = append(elems, bytes.Clone(elem))
		vals = append(vals, bytes.Clone(val))
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return elems, vals, nil
}

// freshColl adds to c.batch a copy of the collection m at key, less the
// elements in drop, under a new version, and returns the new metadata
// for the caller to write: the old version's elements, dead with it, go
// to the compaction filter (reclaim.go). A writer calls it when walks of
// m pass over mostly deletions (walkCost.mostlyDead). Elements are
// copied by name, so the collection must keep all of them under one
// sub-prefix (a hash, a set).
func (c *conn) freshColl(key []byte, m collMeta, drop [][]byte) (collMeta, error) {
	to, err := c.s.ks.newColl(m.ns, m.typ)
	if err != nil {
		return to, err
	}
	to.expireAt = m.expireAt
	dropped := make(map[string]bool, len(drop))
	for _, d := range drop {
		dropped[string(d)] = true
	}
	err = c.s.ks.scanElems(c.reader(), key, m, nil, func(elem, val []byte) bool {
		if !dropped[string(elem)] {
			c.s.ks.putElem(c.batch, &c.elemBuf, key, to, elem, val)
			to.count++
		}
		return true
	})
	return to, err
}
