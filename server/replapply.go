package server

import (
	"fmt"
	"net"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// A replica applies its primary's batches on the link's goroutine
// (followOnce). Redis' replica runs its master's commands as a client of
// its own, the master client: the keys they change fail the WATCHes on
// them, reach the clients tracking them, and serve the clients blocked on
// them, and CLIENT LIST shows the link with flag M. lsmgo's link is such
// a client too: a conn that runs no command, listed with the others and
// killed by CLIENT KILL TYPE master (the replica reconnects and resumes).
// Keyspace notifications come from the primary with the batches
// (replnotify.go).

// newMasterConn makes the master client of a link over nc and lists it.
func (s *Server) newMasterConn(nc net.Conn) *conn {
	mc := newConn(s, nc, s.nextID.Add(1))
	mc.setState(stateMaster, true)
	s.repl.master.Store(mc)
	return mc
}

// dropMasterConn unlists the master client when its link ends.
func (s *Server) dropMasterConn(mc *conn) { s.repl.master.CompareAndSwap(mc, nil) }

// listedClients is clientList with the master client, if any, for CLIENT
// LIST and CLIENT KILL.
func (s *Server) listedClients() []*conn {
	list := s.clientList()
	if mc := s.repl.master.Load(); mc != nil {
		list = append(list, mc)
		sortConns(list)
	}
	return list
}

// applyReplicated applies consecutive batches of the primary as one
// commit (replApplier gathers them) and then does what a Redis replica
// does after a master's commands: marks the WATCHes of the keys they
// write (before the commit, as a local write does: touchAndApply), sends their tracking
// invalidations, and serves the clients blocked on them. Batches that
// change the map of databases (FLUSHDB, FLUSHALL, SWAPDB) make the new
// map this replica's, as changeDBs does on the primary.
func (s *Server) applyReplicated(mc *conn, batches [][]byte) error {
	keys := func(fn func(k []byte)) {
		for _, data := range batches {
			lsmgo.ForEachReplicatedKey(data, fn)
		}
	}
	dbsChanged := false
	keys(func(k []byte) { dbsChanged = dbsChanged || string(k) == dbsKey })
	flushed, err := s.commitReplicated(mc, batches, keys, dbsChanged)
	if err != nil {
		return err
	}
	// The primary's writes are not this server's: SPOP's memos would not
	// see them (picknodes.go), nor would a ZPOPMIN window see an older
	// primary's add below its end (zpopwindow.go).
	s.ks.spops.clear()
	s.ks.zpops.clear()
	if flushed {
		s.invalidateAll(mc)
	} else if s.tracking.active() {
		s.invalidate(mc, func(yield func([]byte)) {
			keys(func(k []byte) {
				if _, key, ok := userKeyOf(k); ok {
					yield(key)
				}
			})
		})
	}
	r := &s.blocked
	if r.blocked.Load() == 0 {
		return nil
	}
	keys(func(k []byte) { r.signalWaited(mc, k) })
	r.serveReady(mc) // with no stripe held: the tries take theirs
	return nil
}

// commitReplicated commits the batches; when they change the map of
// databases, it does so holding every stripe and publishes the new map,
// and reports whether a database got a new, empty namespace (a flush).
func (s *Server) commitReplicated(mc *conn, batches [][]byte, keys func(func(k []byte)), dbsChanged bool) (flushed bool, err error) {
	if dbsChanged {
		held := mc.lockAll()
		defer mc.unlock(held)
	}
	if err := s.touchAndApply(batches, keys); err != nil {
		return false, err
	}
	if !dbsChanged {
		return false, nil
	}
	old := s.ks.dbs.Load()
	m, err := readDBMap(s.db)
	if err != nil || m == nil {
		return false, fmt.Errorf("replication: the primary's map of databases: %v", err)
	}
	mc.publishDBs(old, m)
	for db, ns := range m.ns {
		flushed = flushed || db < len(old.ns) && ns >= old.next
	}
	return flushed, nil
}

// touchAndApply marks the WATCHes of the keys the batches write and
// commits them, holding applyMu: a local writer holds its keys' stripes
// from the marking to the commit, which WATCH waits for; the replica's
// link takes none, so WATCH waits on applyMu instead (cmdWatch).
func (s *Server) touchAndApply(batches [][]byte, keys func(func(k []byte))) error {
	s.repl.applyMu.Lock()
	defer s.repl.applyMu.Unlock()
	s.ks.watches.touchKeys(keys, s.ks.dbs.Load())
	if hook := s.repl.testApplyHook.Load(); hook != nil {
		(*hook)()
	}
	return s.db.ApplyReplicatedBatches(batches, nil)
}

// replApplyBytes bounds the batches a replica commits at once.
const replApplyBytes = 1 << 20

// replApplier gathers, on a replica, a batch from the primary together
// with those already received behind it, which applyReplicated commits
// as one (lsmgo.DB.ApplyReplicatedBatches): a replica that applied each small
// batch on its own paid a WAL write and a pass of the commit pipeline per
// batch, and fell behind a primary whose commit groups carry many
// (doc/replication.md, "Applying batches"). It only takes what is already
// read, so it adds no wait.
type replApplier struct {
	buf   []byte
	ends  []int
	parts [][]byte
}

// gather returns the batch in *v and the batches buffered in rd behind
// it, up to replApplyBytes, good until the next call. When it read a
// value that is not a batch, it leaves it in *v and reports held: the
// caller handles it next.
func (a *replApplier) gather(rd *resp.Reader, v *resp.Value) (batches [][]byte, held bool, err error) {
	if rd.Buffered() == 0 {
		// The common case of a replica that keeps up: one batch.
		a.parts = append(a.parts[:0], v.Str)
		return a.parts, false, nil
	}
	a.buf, a.ends, a.parts = a.buf[:0], a.ends[:0], a.parts[:0]
	for {
		// The reader's values are valid until its next read.
		a.buf = append(a.buf, v.Str...)
		a.ends = append(a.ends, len(a.buf))
		if rd.Buffered() == 0 || len(a.buf) >= replApplyBytes {
			break
		}
		if *v, err = rd.ReadValue(); err != nil {
			return nil, false, err
		}
		if v.Type != '$' {
			held = true
			break
		}
	}
	start := 0
	for _, end := range a.ends {
		a.parts = append(a.parts, a.buf[start:end])
		start = end
	}
	return a.parts, held, nil
}
