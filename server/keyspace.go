package server

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// The server's keyspace inside the engine (doc/server.md has the layout;
// internal/keylayout names every prefix and its owner):
//
//	engine key                     engine value
//	'k' + user key                 header byte + payload (namespace 0)
//	'n' + ns (4, BE) + user key    the same, in namespace ns >= 1
//	"m" + name                     server metadata, such as the format version
//
// Each database (SELECT) is a namespace (databases.go); a command builds
// its keys through a keyBuf, which carries the namespace of the database
// it runs in.
//
// The header's low 7 bits name the Redis type ('s' for string, payload =
// the string; 'h' for a hash, 'S' for a set, 'l' for a list and 'z' for
// a sorted set, 'x' for a stream, payload = collection metadata) and its high
// bit says the entry carries an engine expiry, so INFO can count expiring
// keys while iterating without decoding the engine's expiry. Every Redis
// type keeps its metadata under its 'k' key, so one iteration over the 'k'
// range visits each key exactly once whatever its type; collections keep
// their elements in the 'e' range (collection.go).
const (
	dataPrefix = keylayout.Data
	typeString = 's'
	typeHash   = 'h'
	typeSet    = 'S'
	typeList   = 'l'
	typeZSet   = 'z'
	// typeFragString is a string stored in fragments (fragstring.go):
	// to clients it is a string like any other.
	typeFragString = 'B'
	flagExpires    = 0x80

	// formatKey holds formatVersion; Start refuses a directory written
	// with another version.
	formatKey     = string(keylayout.Meta) + "format"
	formatVersion = "1"
)

// typeNames are the names TYPE replies with, by header type; decodeHeader
// refuses a header whose type is not here.
var typeNames = [128]string{typeString: "string", typeHash: "hash", typeSet: "set", typeList: "list", typeZSet: "zset",
	typeFragString: "string", typeStream: "stream"}

// dataKey appends the engine key of userKey in namespace ns to dst.
func dataKey(dst []byte, ns nsID, userKey []byte) []byte {
	dst = appendNS(dst[:0], dataPrefix, keylayout.NSData, ns)
	return append(dst, userKey...)
}

// dataBounds returns the bounds of namespace ns's data keys.
func dataBounds(ns nsID) (lower, upper []byte) {
	lower = appendNS(nil, dataPrefix, keylayout.NSData, ns)
	return lower, prefixEnd(lower)
}

// keyBuf builds the engine keys of one namespace: a command's are those
// of the database it runs in (conn.useDB), so that the keyspace's
// methods, given the buffer, need no namespace of their own.
type keyBuf struct {
	ns nsID
	b  []byte
}

// entry is a decoded 'k' entry of any type: its header type, the payload
// after the header, and the engine expiry.
type entry struct {
	ns       nsID // where it was read
	typ      byte
	payload  []byte
	expireAt time.Time // zero: no expiry
}

// decodeHeader checks an engine value's header and returns its type and
// payload. Damaged bytes from disk yield a corruption error, never a panic.
func decodeHeader(userKey, raw []byte) (byte, []byte, error) {
	if len(raw) == 0 {
		return 0, nil, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1, Reason: "value has no type header"}
	}
	t := raw[0] &^ flagExpires
	if typeNames[t] == "" {
		return 0, nil, &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1, Reason: fmt.Sprintf("unknown type header %#x", raw[0])}
	}
	return t, raw[1:], nil
}

// keyspace wraps the engine with the server's encoding and the locks that
// make read-modify-write commands atomic. Every engine read and write of a
// command goes through it, so that a new Redis type is a new encoding
// here and new handlers, and the connection loop does not change.
type keyspace struct {
	db       *lsmgo.DB
	locks    *keyLocks
	versions *versionClock
	reclaim  *reclaimer // nil in tests that build a bare keyspace
	watches  watchRegistry
	// zpops holds ZPOPMIN's windows of the sorted sets it pops
	// (zpopwindow.go).
	zpops windows[zsetWindow]
	// spops holds SPOP's memos of the sets it pops (picknodes.go).
	spops windows[pickNodes]
	// dbs maps databases to namespaces (databases.go).
	dbs atomic.Pointer[dbMap]
	// expiries announces expired keys (expiry_events.go); nil in tests
	// that build a bare keyspace.
	expiries *expiryWatch
}

// latest is the reader of the DB's newest state.
func (ks *keyspace) latest() lsmgo.Reader { return ks.db }

// newView pins the DB's current state for a run of pipelined reads; the
// caller closes it.
func (ks *keyspace) newView() (*lsmgo.View, error) { return ks.db.NewView() }

// newBatch returns an empty batch for putString and deleteKey.
func (ks *keyspace) newBatch() *lsmgo.Batch { return ks.db.NewBatch() }

// apply commits b atomically, after marking the clients that watch a key
// it writes (WATCH), and shows it to the expiry watch once committed:
// every write of the keyspace passes here. The batch is visible when apply
// returns; the returned Pending says when it is durable (durable.go).
func (ks *keyspace) apply(b *lsmgo.Batch) (lsmgo.Pending, error) {
	ks.watches.touch(b, ks.dbs.Load())
	var committing time.Time // read only while expiry events are on
	if ks.expiries != nil && ks.expiries.on.Load() {
		committing = time.Now()
	}
	p, err := ks.db.CommitAsync(b, nil)
	if err != nil {
		ks.lostBatch()
		return p, err
	}
	if ks.expiries != nil && ks.expiries.on.Load() {
		ks.expiries.observe(b, committing)
	}
	return p, nil
}

// lostBatch forgets what a batch that never commits (a failed commit, a
// discarded script's or handler's batch) may have taught SPOP's memos:
// they are built and moved along through the uncommitted view, and a
// pop's count alone cannot tell them stale once the batch also added a
// member (SADD x; SPOP). Which sets the batch touched is not worth
// working out for so rare an event, and a dropped memo is only rebuilt
// (picknodes.go). A commit's caller still holds the batch's locks, so
// no other pop reads a memo the batch moved first.
func (ks *keyspace) lostBatch() { ks.spops.clear() }

// checkFormat stamps a new directory with the keyspace format version and
// refuses one written with another; dir names the directory in the error.
func (ks *keyspace) checkFormat(dir string) error {
	v, err := ks.db.Get([]byte(formatKey))
	switch {
	case errors.Is(err, lsmgo.ErrNotFound):
		return ks.db.Set([]byte(formatKey), []byte(formatVersion), lsmgo.Sync)
	case err != nil:
		return err
	case string(v) != formatVersion:
		return fmt.Errorf("lsmgo server: %s holds keyspace format %q; this server reads format %q", dir, v, formatVersion)
	}
	return nil
}

// getEntry reads the entry at userKey through r, whatever its type; ok is
// false when it is absent. kb builds the engine key.
func (ks *keyspace) getEntry(r lsmgo.Reader, kb *keyBuf, userKey []byte) (e entry, ok bool, err error) {
	kb.b = dataKey(kb.b, kb.ns, userKey)
	raw, expireAt, err := r.GetWithExpiry(kb.b)
	return decodeEntry(kb.ns, userKey, raw, expireAt, err)
}

// decodeEntry decodes what a read of userKey's entry in namespace ns
// returned; ok is false when it found nothing. The payload aliases raw.
func decodeEntry(ns nsID, userKey, raw []byte, expireAt time.Time, err error) (e entry, ok bool, _ error) {
	if errors.Is(err, lsmgo.ErrNotFound) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	if e.typ, e.payload, err = decodeHeader(userKey, raw); err != nil {
		return e, false, err
	}
	e.expireAt = expireAt
	e.ns = ns
	return e, true, nil
}

// typeOf returns the Redis type name of the value at userKey, read through
// r: "none" when it is absent.
func (ks *keyspace) typeOf(r lsmgo.Reader, kb *keyBuf, userKey []byte) (string, error) {
	e, ok, err := ks.getEntry(r, kb, userKey)
	if !ok || err != nil {
		return "none", err
	}
	return typeNames[e.typ], nil
}

// exists reports whether userKey holds a live value of any type, read
// through r.
func (ks *keyspace) exists(r lsmgo.Reader, kb *keyBuf, userKey []byte) (bool, error) {
	_, ok, err := ks.getEntry(r, kb, userKey)
	return ok, err
}

// putEntry adds a write of e at userKey, in kb's namespace, to b, with
// e's expiry.
func (ks *keyspace) putEntry(b *lsmgo.Batch, kb *keyBuf, userKey []byte, e entry) {
	buf := dataKey(kb.b, kb.ns, userKey)
	k := len(buf)
	header := e.typ
	if !e.expireAt.IsZero() {
		header |= flagExpires
	}
	buf = append(buf, header)
	buf = append(buf, e.payload...)
	if e.expireAt.IsZero() {
		b.Set(buf[:k], buf[k:])
	} else {
		b.SetWithExpiry(buf[:k], buf[k:], e.expireAt)
	}
	kb.b = trimScratch(buf)
}

// deleteKey adds a deletion of userKey to b.
func (ks *keyspace) deleteKey(b *lsmgo.Batch, kb *keyBuf, userKey []byte) {
	kb.b = dataKey(kb.b, kb.ns, userKey)
	b.Delete(kb.b)
}

// trimScratch drops a scratch buffer that a large value grew, so an idle
// connection does not keep it.
func trimScratch(b []byte) []byte {
	if cap(b) > 64<<10 {
		return nil
	}
	return b[:0]
}

// scanKeys calls fn with each live user key of namespace ns in [from,
// to), read through r, its type and whether it expires, in order, until
// fn returns false. A nil to means the end of the namespace. The key
// passed to fn is valid only during the call.
func (ks *keyspace) scanKeys(r lsmgo.Reader, ns nsID, from, to []byte, fn func(userKey []byte, typ byte, expires bool) bool) error {
	lower := dataKey(nil, ns, from)
	_, upper := dataBounds(ns)
	if to != nil {
		upper = dataKey(nil, ns, to)
	}
	n := len(dataKey(nil, ns, nil))
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		userKey := it.Key()[n:]
		typ, _, err := decodeHeader(userKey, it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if !fn(userKey, typ, it.Value()[0]&flagExpires != 0) {
			break
		}
	}
	return it.Close()
}

// randomKey picks a random position between the first and last keys and
// returns the user key at or after it; ok is false when namespace ns is
// empty. Keys that follow large gaps in the key order are picked more
// often; Redis' own pick is not uniform either. It reads through r.
func (ks *keyspace) randomKey(r lsmgo.Reader, ns nsID) (key []byte, ok bool, err error) {
	lower, upper := dataBounds(ns)
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	if !it.First() {
		return nil, false, it.Error()
	}
	first := bytes.Clone(it.Key())
	it.Last()
	probe := randomBetween(first, it.Key())
	if !it.SeekGE(probe) {
		it.First()
	}
	if err := it.Error(); err != nil {
		return nil, false, err
	}
	return bytes.Clone(it.Key()[len(lower):]), true, nil
}

// randomBetween returns a random key k with first <= k <= last (given
// first <= last): their common prefix, then a random byte between theirs,
// then random bytes.
func randomBetween(first, last []byte) []byte {
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	probe := bytes.Clone(first[:n])
	if n == len(last) {
		return probe
	}
	lo := 0
	if n < len(first) {
		lo = int(first[n])
	}
	probe = append(probe, byte(lo+rand.IntN(int(last[n])-lo+1)))
	for range 8 {
		probe = append(probe, byte(rand.Uint32()))
	}
	return probe
}

// prefixEnd returns the smallest key greater than every key with prefix,
// or nil when there is none (the prefix is all 0xff).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// getEntry reads the entry at key whatever its type through the command's
// reader.
func (c *conn) getEntry(key []byte) (e entry, exists bool, err error) {
	return c.s.ks.getEntry(c.reader(), &c.scratch, key)
}
