package server

import (
	"sync/atomic"
	"time"
)

// A replica's output buffer (client-output-buffer-limit replica). A
// primary sends a replica its batches from the shared backlog, so what
// it holds for one replica is not a buffer of its own but the batches
// committed since the replica's position that the replica has not taken
// yet: during a full sync, all those committed since the copy began;
// while streaming, those the replica has not read. A replica that falls
// that far behind, past the hard limit or past the soft one for longer
// than its time, is disconnected and logged, as Redis does; it reconnects
// and resumes, or takes a new copy. The amount is counted in bytes of the
// batches as streamed (RESP bulk strings): every commit adds to the
// primary's total (replication.committed), and each stream counts what
// it wrote.

// replicaOutput is one replica stream's share of that count.
type replicaOutput struct {
	// base is the primary's committed total when the stream began, less
	// the bytes of the backlog's batches the replica still needed then;
	// set again once a full copy is sent (the watcher reads it
	// meanwhile).
	base atomic.Int64
	// sent counts the bytes of the batches written to the replica.
	sent atomic.Int64
}

// replLimitCheck is how often a stream's output is checked: the stream's
// goroutine may be stuck writing to a replica that does not read.
const replLimitCheck = 100 * time.Millisecond

// startOutput sets the stream's base, when it will send the batches
// from sequence number from on (0: a full copy is to be made, and every
// batch committed from now on counts until it is sent; then the base is
// set again from the copy's last batch).
func (s *Server) startOutput(rs *replicaStream, from uint64) {
	base := s.repl.committed.Load()
	if from != 0 {
		base -= s.repl.backlog.framedFrom(from)
	}
	rs.out.base.Store(base)
}

// pending is the bytes committed for rs that it has not been sent.
func (s *Server) pending(rs *replicaStream) int64 {
	return max(0, s.repl.committed.Load()-rs.out.base.Load()-rs.out.sent.Load())
}

// watchOutput closes c, the connection of the replica stream rs, when its
// pending output passes client-output-buffer-limit replica, checked until
// the returned stop is called.
func (s *Server) watchOutput(c *conn, rs *replicaStream) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(replLimitCheck)
		defer t.Stop()
		var overSoft time.Time
		for {
			select {
			case <-done:
				return
			case <-s.done:
				return
			case <-t.C:
				// The time of this check, not the tick's: a tick received
				// late would date the excess before it was seen, and cut
				// the replica off short of the soft time.
				now := time.Now()
				lim, n := s.config().ReplicaBufferLimit, s.pending(rs)
				over := lim.Hard > 0 && n > lim.Hard
				if lim.Soft > 0 && n > lim.Soft {
					if overSoft.IsZero() {
						overSoft = now
					}
					over = over || now.Sub(overSoft) > lim.SoftTime
				} else {
					overSoft = time.Time{}
				}
				if over {
					s.repl.limitClosed.Add(1)
					s.log.Warn("closing replica that passed client-output-buffer-limit replica", "replica", c.nc.RemoteAddr().String(),
						"pending_bytes", n, "hard", lim.Hard, "soft", lim.Soft, "soft_seconds", int64(lim.SoftTime/time.Second))
					c.closeSocket()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
