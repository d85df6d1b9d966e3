package server

import (
	"errors"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Point reads of collections (HGET, HMGET, SISMEMBER, ZSCORE, LINDEX …)
// cost two engine point reads, the metadata's then each element's, and no
// View: outside pipelines, EXEC and scripts a command reads the DB
// itself. Nothing else is needed for a reply of one state: an element's
// key carries the version the metadata names (collection.go), no version
// repeats, and nothing writes a version's elements once it is gone. So
// if the collection is deleted or replaced between the two reads, the
// element read still sees the version the metadata read saw, as it was
// when that version was last live: the reply is that of a moment between
// the two reads (TestPointReadVersionRace).
//
// Read through the DB, both reads copy into the connection's buffer
// (DB.GetAppend) instead of into a fresh slice each, so a point read
// allocates nothing once the buffer has grown.

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
// metadata is read into c.vals, and m.expireAt is left zero, for the
// engine hides an expired entry and a read needs no more of its expiry.
func (c *conn) readColl(key []byte, typ byte) (m collMeta, exists bool, err error) {
	kb := &c.scratch
	r := c.reader() // before the key: it settles the namespace
	kb.b = dataKey(kb.b, kb.ns, key)
	c.vals, err = pointGet(r, c.vals[:0], kb.b)
	e, ok, err := decodeEntry(kb.ns, key, c.vals, time.Time{}, err)
	return collOf(key, typ, e, ok, err)
}

// appendElem reads element sub+name of m at key through the command's
// reader into c.vals, after the values read before it, which stay
// valid: the values of one command's reads (HMGET's) share one buffer.
func (c *conn) appendElem(key []byte, m collMeta, sub, name []byte) (val []byte, exists bool, err error) {
	c.elemBuf = append(append(elemsKey(c.elemBuf, key, m), sub...), name...)
	start := len(c.vals)
	c.vals, err = pointGet(c.reader(), c.vals, c.elemBuf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, false, nil
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
