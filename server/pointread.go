package server

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Point reads of collections (HGET, HMGET, SISMEMBER, ZSCORE, LINDEX …)
// cost two engine point reads, the metadata's then the element's, and no
// View: outside pipelines, EXEC and scripts a command that reads one
// element reads the DB itself. An element's key carries the version the
// metadata names (collection.go) and no version repeats, so if the
// collection is deleted or replaced between the two reads, a hit is still
// the element of the version the metadata read saw, as it was when that
// version was last live: a reply of a moment between the two reads. A
// miss is not: the compaction filter may have reclaimed the old version's
// elements meanwhile (reclaim.go). So a miss through the DB reads the
// metadata again, and if it names another version, the command's reads
// run again from one pinned state (pointRead), which is rare and costs
// what a View costs (TestPointReadReclaimedVersion). A read of several
// elements (HMGET) pins a state from the start, since the writes of one
// batch must not show in some of its elements only
// (TestPointReadVersionRace).
//
// Read through the DB, both reads copy into the connection's buffer
// (DB.GetAppend) instead of into a fresh slice each, so a point read
// allocates nothing once the buffer has grown.

// errReadRaced reports an element that a point read through the DB
// missed while its collection was replaced: pointRead runs the reads
// again from a pinned state. It reaches a client only if no state can be
// pinned (the DB closing).
var errReadRaced = errors.New("ERR collection replaced while being read, retry")

// pointRead runs read, a read-only command's point reads of one
// collection (its metadata, then elements) and the reply built from
// them; read must write no reply before its last read. If read fails
// with errReadRaced, it runs again from a pinned state.
func (c *conn) pointRead(read func() error) error {
	err := read()
	if err != errReadRaced {
		return err
	}
	defer c.pin()()
	return read()
}

// elemMissed is called when a point read of an element of m at key found
// nothing. It returns errReadRaced if the read went to the DB and the
// key's metadata no longer names m's version: the miss may be the
// reclaiming of the replaced version's elements.
func (c *conn) elemMissed(key []byte, m collMeta) error {
	if _, ok := c.reader().(*lsmgo.DB); !ok {
		return nil
	}
	now, exists, err := c.readColl(key, m.typ)
	if errors.Is(err, errWrongType) || err == nil && (!exists || now.version != m.version) {
		return errReadRaced
	}
	return err
}

// pointGet appends the value of key, read through r, to dst. Through the
// DB it allocates only when dst lacks room.
func pointGet(r lsmgo.Reader, dst, key []byte) ([]byte, error) {
	if db, ok := r.(*lsmgo.DB); ok {
		return db.GetAppend(dst, key)
	}
	v, err := r.Get(key)
	switch {
	case err != nil:
		return dst, err
	case dst == nil:
		return v, nil // the reader's copy is the caller's already
	}
	return append(dst, v...), nil
}

// readColl is getColl for a command that only reads the collection: its
// metadata is read into c.vals, after the values read before it, and
// dropped once decoded; m.expireAt is left zero, for the engine hides an
// expired entry and a read needs no more of its expiry.
func (c *conn) readColl(key []byte, typ byte) (m collMeta, exists bool, err error) {
	kb := &c.scratch
	r := c.reader() // before the key: it settles the namespace
	kb.b = dataKey(kb.b, kb.ns, key)
	start := len(c.vals)
	c.vals, err = pointGet(r, c.vals, kb.b)
	e, ok, err := decodeEntry(kb.ns, key, c.vals[start:], time.Time{}, err)
	if h := testHookMetaRead.Load(); h != nil {
		(*h)()
	}
	m, exists, err = collOf(key, typ, e, ok, err)
	c.vals = c.vals[:start]
	return m, exists, err
}

// testHookMetaRead, when set, runs after each point read's metadata read,
// and after a string read finds a fragmented string's metadata.
var testHookMetaRead atomic.Pointer[func()]

// appendElem reads element sub+name of m at key through the command's
// reader into c.vals, after the values read before it, which stay
// valid: the values of one command's reads (HMGET's) share one buffer.
func (c *conn) appendElem(key []byte, m collMeta, sub, name []byte) (val []byte, exists bool, err error) {
	c.elemBuf = append(append(elemsKey(c.elemBuf, key, m), sub...), name...)
	start := len(c.vals)
	c.vals, err = pointGet(c.reader(), c.vals, c.elemBuf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, false, c.elemMissed(key, m)
	}
	if err != nil {
		return nil, false, err
	}
	end := len(c.vals)
	return c.vals[start:end:end], true, nil
}

// releaseReads drops what the command's point reads left in the
// connection's buffers: the values, so that an idle connection keeps no
// large one, and getElems' slices, which point at them.
func (c *conn) releaseReads() {
	c.vals = trimScratch(c.vals)
	clear(c.hits)
	if cap(c.hits) > 1024 {
		c.hits, c.found = nil, nil
	}
}
