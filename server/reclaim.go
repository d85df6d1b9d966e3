package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// Reclaiming the elements of deleted collections (doc/server.md,
// "Collections"). DEL, UNLINK, expiry, FLUSHALL and overwriting delete or
// replace a collection's metadata only, whatever its size. Its elements
// are then dead for good, since versions never repeat, and the engine's
// compaction filter (newElemFilter) turns each into a deletion when a
// flush or compaction rewrites it. Background compactions get to every
// element sooner or later while the DB takes writes; for a big collection
// deleted by a command, the reclaimer also compacts its element range at
// once, so the space comes back without waiting for the tree to churn.

// reclaimMinElems is the size from which a deleted collection's element
// range is compacted at once. A compaction of the range flushes the
// memtable and rewrites every L0 table, worth it to give back the space
// of ten thousand elements and more, not for a small hash.
const reclaimMinElems = 10_000

// elemFilter is the server's CompactionFilter. It drops every key of a
// namespace that no database maps to any more in the state the engine
// gives (FLUSHDB, FLUSHALL: databases.go); ids are never reused, so such
// a key is dead in every later state too, as the engine requires.
//
// It also drops an element entry when its collection's metadata, read in
// that state, is absent (deleted, expired), holds no collection, or holds
// another version, and a stream's entries that trimming left dead. Versions never repeat for a key, so such an element is
// dead in every later state too; and every command writes a collection's
// metadata in the batch of its elements, so the state never holds an
// element without the metadata that makes it live.
//
// The elements of one collection version are adjacent in key order, so
// the filter keeps the verdict of the last version it judged: one
// metadata read per run of elements, not per element. Keeping a "live"
// verdict for the rest of the run only keeps entries longer.
type elemFilter struct {
	state lsmgo.Reader
	// dbs is the map of databases in state; nil when there is none or
	// it could not be read, and then no namespace is judged dead.
	dbs     *dbMap
	prefix  []byte // the element prefix (namespace, key, version) last judged
	dead    bool
	stream  *streamMeta // the live stream prefix is in, if it is one
	scratch []byte
}

func newElemFilter(state lsmgo.Reader) lsmgo.CompactionFilter {
	dbs, _ := readDBMap(state) // unreadable: keep every namespace
	return &elemFilter{state: state, dbs: dbs}
}

// deadNS reports whether namespace ns was handed out and no database maps
// to it any more.
func (f *elemFilter) deadNS(ns nsID) bool {
	return f.dbs != nil && ns < f.dbs.next && !f.dbs.live(ns)
}

// Drop implements lsmgo.CompactionFilter.
func (f *elemFilter) Drop(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	var ns nsID
	head := 1 // bytes before the key length
	switch key[0] {
	case dataPrefix:
		return f.deadNS(0)
	case keylayout.NSData:
		return len(key) >= 5 && f.deadNS(nsID(binary.BigEndian.Uint32(key[1:5])))
	case elemPrefix:
	case keylayout.NSElem:
		if len(key) < 5 {
			return false
		}
		ns, head = nsID(binary.BigEndian.Uint32(key[1:5])), 5
	default:
		return false
	}
	if f.deadNS(ns) {
		return true
	}
	if len(key) < head+4 {
		return false
	}
	n := int(binary.BigEndian.Uint32(key[head:]))
	if len(key)-head-4-8 < n {
		return false // not an element key of this layout: keep it
	}
	prefix := key[:head+4+n+8]
	if !bytes.Equal(prefix, f.prefix) {
		f.prefix = append(f.prefix[:0], prefix...)
		f.dead = f.judge(ns, key[head+4:head+4+n], binary.BigEndian.Uint64(prefix[head+4+n:]))
	}
	return f.dead || f.stream != nil && f.stream.deadElem(key[len(prefix):])
}

// judge reads the metadata at userKey in namespace ns and says whether
// elements of version are dead; for a live stream, it keeps the metadata
// in f.stream, which judges each element (trimmed entries are dead). A
// read error keeps them: only certainty drops.
func (f *elemFilter) judge(ns nsID, userKey []byte, version uint64) bool {
	f.stream = nil
	f.scratch = dataKey(f.scratch, ns, userKey)
	raw, err := f.state.Get(f.scratch)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	typ, payload, err := decodeHeader(userKey, raw)
	if err != nil {
		return false
	}
	if typ == typeString {
		return true
	}
	if len(payload) < 8 || binary.BigEndian.Uint64(payload) != version {
		return len(payload) >= 8
	}
	if typ == typeStream {
		if m, err := decodeStreamMeta(userKey, entry{typ: typ, payload: payload}); err == nil {
			f.stream = &m
		}
	}
	return false
}

// reclaimer compacts, one at a time in a goroutine of its own, the
// element ranges of deleted big collections. Ranges asked for while a
// compaction runs are merged into one span, compacted next.
type reclaimer struct {
	db   *lsmgo.DB
	log  *slog.Logger
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	lo, hi []byte // pending span; lo == nil when none
	// asked counts the ranges asked for, served those whose compaction
	// has finished (or failed): all are served when the two are equal.
	asked, served int64
}

func newReclaimer(db *lsmgo.DB, log *slog.Logger) *reclaimer {
	r := &reclaimer{db: db, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.wg.Add(1)
	go r.loop()
	return r
}

// add asks for [lo, hi) to be compacted soon.
func (r *reclaimer) add(lo, hi []byte) {
	r.mu.Lock()
	r.asked++
	if r.lo == nil || bytes.Compare(lo, r.lo) < 0 {
		r.lo = bytes.Clone(lo)
	}
	if r.hi == nil || bytes.Compare(hi, r.hi) > 0 {
		r.hi = bytes.Clone(hi)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reclaimer) loop() {
	defer r.wg.Done()
	for {
		select {
		case <-r.done:
			return
		case <-r.wake:
		}
		r.mu.Lock()
		lo, hi, asked := r.lo, r.hi, r.asked
		r.lo, r.hi = nil, nil
		r.mu.Unlock()
		if lo == nil {
			continue
		}
		// Compact's end is inclusive: a key equal to hi, if any, is
		// compacted too, which costs nothing worth avoiding.
		err := r.db.Compact(lo, hi)
		select {
		case <-r.done:
			return // the DB closing cut the compaction short
		default:
		}
		if err != nil {
			r.log.Warn("reclaiming deleted collections' elements failed; background compactions will reclaim them", "err", err)
		}
		r.mu.Lock()
		r.served = asked
		r.mu.Unlock()
	}
}

// idle reports whether every range asked for has been compacted.
func (r *reclaimer) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served == r.asked
}

// stop ends the goroutine; a compaction it runs ends when the DB closes,
// so call stop before closing the DB and wait after.
func (r *reclaimer) stop() { close(r.done) }

// wait waits for the goroutine to end.
func (r *reclaimer) wait() { r.wg.Wait() }

// reclaimDeleted is called with each entry a command deleted or replaced
// (after the batch was applied): a collection of reclaimMinElems elements
// or more has its element range compacted in the background.
func (ks *keyspace) reclaimDeleted(userKey []byte, e entry) {
	if ks.reclaim == nil || e.typ == typeString {
		return
	}
	m, err := decodeMeta(userKey, e)
	if err != nil || elemsOf(m) < reclaimMinElems {
		return
	}
	prefix := elemsKey(nil, userKey, m)
	ks.reclaim.add(prefix, prefixEnd(prefix))
}

// elemCount returns the element count of the collection at userKey, or 0
// when there is none or it cannot be read: a hint for reclaiming, not
// worth failing a command for.
func (ks *keyspace) elemCount(kb *keyBuf, userKey []byte) int64 {
	e, ok, err := ks.getEntry(ks.latest(), kb, userKey)
	if !ok || err != nil || e.typ == typeString {
		return 0
	}
	m, err := decodeMeta(userKey, e)
	if err != nil {
		return 0
	}
	return elemsOf(m)
}

// elemsOf is the number of elements of m, at most: a fragmented string
// counts its bytes, and holds at most a fragment per fragSize of them.
func elemsOf(m collMeta) int64 {
	if m.typ == typeFragString {
		return (m.count + fragSize - 1) / fragSize
	}
	return m.count
}

// reclaimNamespace has namespace ns, which no database maps to any more,
// compacted in the background when it holds reclaimMinElems keys and
// elements or more: it counts no further, so FLUSHDB stays cheap.
func (ks *keyspace) reclaimNamespace(ns nsID) {
	if ks.reclaim == nil {
		return
	}
	var n int64
	kb := &keyBuf{ns: ns}
	err := ks.scanKeys(ks.latest(), ns, nil, nil, func(key []byte, typ byte, _ bool) bool {
		n++
		if typ != typeString {
			n += ks.elemCount(kb, key)
		}
		return n < reclaimMinElems
	})
	if err != nil || n < reclaimMinElems {
		return
	}
	lo, hi := dataBounds(ns)
	ks.reclaim.add(lo, hi)
	lo = appendNS(nil, elemPrefix, keylayout.NSElem, ns)
	ks.reclaim.add(lo, prefixEnd(lo))
}
