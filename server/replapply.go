package server

import (
	"net"

	"github.com/lsmgo-dev/lsmgo"
)

// A replica applies its primary's batches on the link's goroutine
// (followOnce). Redis' replica runs its master's commands as a client of
// its own, the master client: the keys they change fail the WATCHes on
// them, reach the clients tracking them, and serve the clients blocked on
// them, and CLIENT LIST shows the link with flag M. lsmgo's link is such
// a client too: a conn that runs no command, listed with the others and
// killed by CLIENT KILL TYPE master (the replica reconnects and resumes).
// Keyspace notifications are not sent for replicated writes: a batch
// carries engine keys, not the commands that wrote them, so the event
// names Redis would publish are unknown here (doc/replication.md).

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

// applyReplicated applies one batch of the primary and then does what a
// Redis replica does after a master's command: marks the WATCHes of the
// keys it writes (before the commit, as a local write does), sends their
// tracking invalidations, and serves the clients blocked on them.
func (s *Server) applyReplicated(mc *conn, data []byte) error {
	keys := func(fn func(k []byte)) { lsmgo.ForEachReplicatedKey(data, fn) }
	s.ks.watches.touchKeys(keys, s.ks.dbs.Load())
	if err := s.db.ApplyReplicated(data, nil); err != nil {
		return err
	}
	if s.tracking.active() {
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
	r.serveReady(mc)
	return nil
}
