package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// Databases (SELECT 0 … databases-1) are namespaces of the engine's keys
// (doc/server.md, "Databases"; internal/keylayout has the bytes). A
// persisted map, dbMap, says which namespace each database is, so that
// SWAPDB swaps two entries and FLUSHDB points its database at a namespace
// never used before: one small write each, whatever the databases hold,
// and a crash keeps the old map or the new one, never half of either.
// The keys of a namespace no database maps to any more are dead for good
// (ids are never reused); the compaction filter drops them (reclaim.go).
//
// Namespace 0 keeps the layout lsmgo had before databases, so a directory
// written then opens as database 0 unchanged.
//
// Changing the map: the command holds every stripe, so no command that
// locks runs meanwhile, and every command that locks resolves its
// database's namespace once it holds its stripes (conn.useDB). Reads take
// no lock; a read resolves the namespace and then reads, and a SWAPDB in
// between followed by another client's write to the swapped namespace
// could show that write to the wrong database. So a read that resolved
// the namespace from the server's map announces the map it uses
// (conn.reading), and a change waits, still holding the stripes, until no
// read uses the old map. A pipeline's view is pinned with the map of its
// moment (openView), so its reads need no announcement.

// nsID names a namespace of the keyspace.
type nsID uint32

// dbsKey is where the map is persisted: the next namespace id, then the
// namespace of each database, 4 bytes big-endian each.
const dbsKey = string(keylayout.Meta) + "dbs"

// maxDatabases bounds the databases setting: the map is one engine value.
const maxDatabases = 1 << 16

// maxNamespaces bounds the namespace ids: FLUSHDB and FLUSHALL take new
// ones, and the key layout has 4 bytes for them.
const maxNamespaces = 1<<32 - 1

var errNamespacesExhausted = redisError("ERR no namespace id left for a new database: all 2^32 have been used")

// appendNS appends the prefix of namespace ns's range to dst: prefix0
// alone for namespace 0 (the layout before databases), else prefixN and
// the id.
func appendNS(dst []byte, prefix0, prefixN byte, ns nsID) []byte {
	if ns == 0 {
		return append(dst, prefix0)
	}
	return binary.BigEndian.AppendUint32(append(dst, prefixN), uint32(ns))
}

// dbMap maps databases to namespaces. A published map is never modified:
// changes publish a new one.
type dbMap struct {
	next nsID   // the first id never handed out
	ns   []nsID // by database index
}

// encode returns the map's persisted form.
func (m *dbMap) encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(m.next))
	for _, ns := range m.ns {
		b = binary.BigEndian.AppendUint32(b, uint32(ns))
	}
	return b
}

func decodeDBMap(v []byte) (*dbMap, error) {
	if len(v) < 8 || len(v)%4 != 0 {
		return nil, &lsmgo.CorruptionError{File: "key " + dbsKey, Offset: -1, Reason: fmt.Sprintf("%d bytes, want 4 per database and 4 more", len(v))}
	}
	m := &dbMap{next: nsID(binary.BigEndian.Uint32(v))}
	for i := 4; i < len(v); i += 4 {
		ns := nsID(binary.BigEndian.Uint32(v[i:]))
		if ns >= m.next {
			return nil, &lsmgo.CorruptionError{File: "key " + dbsKey, Offset: int64(i), Reason: fmt.Sprintf("namespace %d not below the next id %d", ns, m.next)}
		}
		m.ns = append(m.ns, ns)
	}
	return m, nil
}

// readDBMap reads the map through r; nil when none was written yet.
func readDBMap(r lsmgo.Reader) (*dbMap, error) {
	v, err := r.Get([]byte(dbsKey))
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeDBMap(v)
}

// live reports whether some database maps to ns.
func (m *dbMap) live(ns nsID) bool {
	for _, n := range m.ns {
		if n == ns {
			return true
		}
	}
	return false
}

// namespaces returns the namespace of every database.
func (ks *keyspace) namespaces() []nsID {
	m := ks.dbs.Load()
	if m == nil {
		return []nsID{0}
	}
	return m.ns
}

// dbOf returns the database that maps to ns, or -1. A nil map (a bare
// keyspace in tests) has database 0 in namespace 0.
func (m *dbMap) dbOf(ns nsID) int {
	if m == nil {
		if ns == 0 {
			return 0
		}
		return -1
	}
	for db, n := range m.ns {
		if n == ns {
			return db
		}
	}
	return -1
}

// clone returns a copy to change before it is published.
func (m *dbMap) clone() *dbMap {
	return &dbMap{next: m.next, ns: append([]nsID(nil), m.ns...)}
}

// fresh points database db at a new namespace.
func (m *dbMap) fresh(db int) error {
	if m.next == maxNamespaces {
		return errNamespacesExhausted
	}
	m.ns[db] = m.next
	m.next++
	return nil
}

// loadDBs reads the map, or makes the first one (database 0 in namespace
// 0, where a directory written before databases keeps its keys), and
// gives databases that the map does not have yet (a raised databases
// setting) namespaces of their own.
func (ks *keyspace) loadDBs(databases int) (*dbMap, error) {
	m, err := readDBMap(ks.db)
	if err != nil {
		return nil, fmt.Errorf("lsmgo server: databases: %w", err)
	}
	if m != nil && len(m.ns) >= databases {
		return m, nil
	}
	if m == nil {
		m = &dbMap{next: 1, ns: []nsID{0}}
	}
	for len(m.ns) < databases {
		m.ns = append(m.ns, 0)
		if err := m.fresh(len(m.ns) - 1); err != nil {
			return nil, err
		}
	}
	return m, ks.db.Set([]byte(dbsKey), m.encode(), lsmgo.Sync)
}

// dbs returns the map the running command sees: inside EXEC or a script
// that changed it, the transaction's; with a pipeline's view, the view's;
// else the server's.
func (c *conn) dbs() *dbMap {
	switch {
	case c.exec != nil && c.exec.dbs != nil:
		return c.exec.dbs
	case c.view != nil:
		return c.viewDBs
	}
	return c.s.ks.dbs.Load()
}

// useDB points the connection's key buffer at its database's namespace.
func (c *conn) useDB() { c.scratch.ns = c.dbs().ns[c.db] }

// useDBToRead is useDB for a read that takes no lock: it announces the
// map it reads by (see above) until doneReading.
func (c *conn) useDBToRead() {
	if c.exec != nil || c.view != nil || len(c.stripes) > 0 {
		c.useDB()
		return
	}
	for {
		m := c.s.ks.dbs.Load()
		c.reading.Store(m)
		c.announced = true
		if c.s.ks.dbs.Load() == m {
			c.scratch.ns = m.ns[c.db]
			return
		}
	}
}

// doneReading ends useDBToRead's announcement: at the end of a command,
// and before it waits for anything a change of the map may hold (stripes,
// blocking), or a change waiting for it would wait for good.
func (c *conn) doneReading() {
	if c.announced {
		c.reading.Store(nil)
		c.announced = false
	}
}

// openView pins the DB's current state, with the map of that moment, for
// a run of pipelined reads.
func (c *conn) openView() error {
	for {
		m := c.s.ks.dbs.Load()
		v, err := c.s.ks.newView()
		if err != nil {
			return err
		}
		if c.s.ks.dbs.Load() == m {
			c.view, c.viewDBs = v, m
			return nil
		}
		v.Close()
	}
}

// changeDBs runs change on a copy of the map and makes the result the
// map: persisted in one write with every stripe held; inside EXEC or a
// script, in its batch, and published once that commits.
func (c *conn) changeDBs(change func(m *dbMap) error) error {
	own := !c.inExec() // EXEC and scripts hold every stripe already
	if own {
		held := c.lockAll()
		defer c.unlock(held)
	}
	old := c.dbs()
	m := old.clone()
	if err := change(m); err != nil {
		return err
	}
	c.batch.Set([]byte(dbsKey), m.encode())
	if err := c.commit(); err != nil {
		return err
	}
	if own {
		c.publishDBs(old, m)
	} else {
		c.exec.dbs = m
	}
	return nil
}

// publishDBs makes m, committed, the server's map in place of old, with
// every stripe held: it waits for the reads that use old, marks the
// clients watching keys whose database changed, and has the clients
// blocked on keys try again, and the old namespaces no database maps to
// any more reclaimed.
func (c *conn) publishDBs(old, m *dbMap) {
	s := c.s
	s.ks.dbs.Store(m)
	for _, other := range s.clientList() {
		for other != c && other.reading.Load() == old {
			runtime.Gosched()
			time.Sleep(10 * time.Microsecond)
		}
	}
	s.ks.watches.touchChanged(&s.ks, old, m)
	c.blk.ready = append(c.blk.ready, s.blocked.keys()...)
	for db, ns := range old.ns {
		if !m.live(ns) && db < len(m.ns) {
			s.ks.reclaimNamespace(ns)
		}
	}
}

// changedDBs lists, for each namespace whose database changed from old to
// m, the namespaces to look in for its watched keys: its own, and the one
// its database now has unless that is new (empty).
func changedDBs(old, m *dbMap) map[nsID][]nsID {
	changed := map[nsID][]nsID{}
	for db, ns := range old.ns {
		if db >= len(m.ns) || m.ns[db] == ns {
			continue
		}
		look := []nsID{ns}
		if old.live(m.ns[db]) {
			look = append(look, m.ns[db])
		}
		changed[ns] = look
	}
	return changed
}
