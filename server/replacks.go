package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Replica acknowledgements (doc/replication.md, "Acknowledgements"): on
// the LSMSYNC connection the replica sends REPLCONF ACK <seq>, the last
// sequence number it applied, after each burst of batches it applies,
// on each +PING of an idle stream (so at least every second), and when
// the primary sends REPLCONF GETACK *. The primary keeps each replica's
// acknowledged position and when it came: WAIT counts replicas at or
// past a position, min-replicas-to-write counts replicas heard from
// recently, and INFO and ROLE show them.

// replicaAcks is what the primary knows of one replica's progress.
type replicaAcks struct {
	acked   atomic.Uint64 // the last sequence number the replica applied
	ackedAt atomic.Int64  // unix nanoseconds of its last ACK, or of its start
	// acking is set by the first ACK: only a replica known to answer is
	// sent GETACK, so that an older replica never reads one.
	acking atomic.Bool
	// getAck asks the stream's goroutine, the only writer of the
	// connection, to send REPLCONF GETACK; buffered, one pending is enough.
	getAck chan struct{}
	// gone is closed when the replica's side of the connection ends (its
	// reader stops), so that the stream ends at once, not at its next
	// write.
	gone <-chan struct{}
}

// ackBoard wakes the WAITs when any replica acknowledges.
type ackBoard struct {
	mu      sync.Mutex
	changed chan struct{}
}

// next returns a channel closed at the next acknowledgement.
func (a *ackBoard) next() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

func (a *ackBoard) notify() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// startAcks prepares rs for acknowledgements and reads them from the
// replica's connection until the returned stop is called. The handler of
// LSMSYNC only writes, so this goroutine is the connection's only reader;
// stop interrupts it and waits, so that the connection's own loop reads
// again only after it.
func (s *Server) startAcks(c *conn, rs *replicaStream) (stop func()) {
	rs.getAck = make(chan struct{}, 1)
	rs.ackedAt.Store(time.Now().UnixNano())
	c.setState(stateReplica, true)
	c.nc.SetReadDeadline(time.Time{}) // the stream's own pings and acks keep it alive
	done := make(chan struct{})
	rs.gone = done
	go func() {
		defer close(done)
		for {
			args, err := c.rd.ReadCommand()
			if err != nil {
				return
			}
			if len(args) == 3 && is(args[0], "REPLCONF") && is(args[1], "NOTIFY") {
				if f, err := parseNotifyFlags(string(args[2])); err == nil {
					s.setReplicaNotify(rs, f)
				}
				continue
			}
			if len(args) != 3 || !is(args[0], "REPLCONF") || !is(args[1], "ACK") {
				continue
			}
			if n, err := strconv.ParseUint(string(args[2]), 10, 64); err == nil {
				rs.acked.Store(n)
				rs.ackedAt.Store(time.Now().UnixNano())
				rs.acking.Store(true)
				s.repl.acks.notify()
			}
		}
	}()
	return func() {
		c.nc.SetReadDeadline(time.Now())
		<-done
		c.setState(stateReplica, false)
	}
}

// writeGetAck sends REPLCONF GETACK * on a replica's stream.
func writeGetAck(w *resp.Writer) {
	w.ArrayHeader(3)
	w.BulkString("REPLCONF")
	w.BulkString("GETACK")
	w.BulkString("*")
}

// sendAck is the replica's REPLCONF ACK with its last applied sequence
// number.
func (s *Server) sendAck(nc net.Conn) error {
	nc.SetWriteDeadline(time.Now().Add(10 * replPingInterval))
	_, err := nc.Write(resp.AppendCommand(nil, []byte("REPLCONF"), []byte("ACK"),
		strconv.AppendUint(nil, s.db.LastSeq(), 10)))
	return err
}

// isGetAck reports whether a value the primary sent on the stream is
// REPLCONF GETACK.
func isGetAck(v resp.Value) bool {
	return v.Type == '*' && len(v.Array) >= 2 && is(v.Array[0].Str, "REPLCONF") && is(v.Array[1].Str, "GETACK")
}

// ackLag is how long ago the replica last acknowledged.
func (r *replicaAcks) ackLag(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, r.ackedAt.Load()))
}

// ackedReplicas counts the replicas that applied every batch up to seq,
// and asks the others for an acknowledgement when askOthers.
func (s *Server) ackedReplicas(seq uint64, askOthers bool) int {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	n := 0
	for _, r := range s.repl.replicas {
		switch {
		case r.acked.Load() >= seq:
			n++
		case askOthers && r.acking.Load():
			select {
			case r.getAck <- struct{}{}:
			default:
			}
		}
	}
	return n
}

// goodReplicas counts the replicas heard from within
// min-replicas-max-lag, as Redis' min-replicas-to-write counts them.
func (s *Server) goodReplicas(maxLag time.Duration) int {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return s.repl.countGood(time.Now(), maxLag)
}

// countGood is goodReplicas with repl.mu held.
func (r *replication) countGood(now time.Time, maxLag time.Duration) int {
	n := 0
	for _, rs := range r.replicas {
		if rs.ackLag(now) <= maxLag {
			n++
		}
	}
	return n
}

// msgNoReplicas is Redis' refusal of a write under min-replicas-to-write.
const msgNoReplicas = "NOREPLICAS Not enough good replicas to write."

// writeRefusal returns why a client write is refused now, or "": on a
// read-only replica, and on a primary with fewer good replicas than
// min-replicas-to-write.
func (s *Server) writeRefusal() string {
	if s.refusesWrites() {
		return msgReadOnlyReplica
	}
	cfg := s.config()
	if cfg.MinReplicasToWrite > 0 && cfg.MinReplicasMaxLag > 0 && !s.repl.following.Load() &&
		s.goodReplicas(cfg.MinReplicasMaxLag) < cfg.MinReplicasToWrite {
		return msgNoReplicas
	}
	return ""
}

// cmdWait implements WAIT numreplicas timeout: it answers how many
// replicas acknowledged every write committed before it (the primary's
// last sequence number, which covers the caller's last write), once
// numreplicas have or the timeout (ms; 0 waits for ever) passes. Inside
// MULTI it answers at once. CLIENT UNBLOCK ends the wait early.
func cmdWait(c *conn, _ *command, args [][]byte) error {
	c.detach()
	ms, ok := parseInt(args[2])
	if !ok {
		return redisError("ERR timeout is not an integer or out of range")
	}
	want, ok := parseInt(args[1])
	if !ok {
		return redisError(msgNotInteger)
	}
	if ms < 0 {
		return redisError("ERR timeout is negative")
	}
	s := c.s
	if s.repl.following.Load() {
		return redisError("ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
	}
	seq := s.db.LastSeq()
	n := s.ackedReplicas(seq, false)
	if int64(n) >= want || c.inExec() {
		c.wr.Int(int64(n))
		return nil
	}
	var timeout <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	unblocked := c.unblocker.arm(nil)
	c.setState(stateBlocked, true)
	s.blocked.waits.Add(1)
	// The replicas are asked once; after that they acknowledge each
	// burst of batches they apply anyway.
	for ask := true; int64(n) < want; ask = false {
		acked := s.repl.acks.next()
		if n = s.ackedReplicas(seq, ask); int64(n) >= want {
			break
		}
		select {
		case <-acked:
			continue
		case <-timeout:
		case <-unblocked:
		case <-s.done:
		}
		break
	}
	n = s.ackedReplicas(seq, false)
	s.blocked.waits.Add(-1)
	c.setState(stateBlocked, false)
	if _, cause := c.unblocker.disarm(); c.endBlocked(cause) {
		return nil
	}
	c.wr.Int(int64(n))
	return nil
}

// writeReplicaLines writes INFO replication's slaveN lines, offsets
// being what each replica acknowledged and lag the seconds since, and
// min_slaves_good_slaves when min-replicas-to-write is on.
func (s *Server) writeReplicaLines(b *strings.Builder) {
	now, i := time.Now(), 0
	for _, r := range s.repl.replicas {
		fmt.Fprintf(b, "slave%d:ip=%s,port=%d,state=online,offset=%d,lag=%d\r\n",
			i, r.ip, r.port, r.acked.Load(), int64(r.ackLag(now)/time.Second))
		i++
	}
	if cfg := s.config(); cfg.MinReplicasToWrite > 0 && cfg.MinReplicasMaxLag > 0 {
		field(b, "min_slaves_good_slaves", s.repl.countGood(now, cfg.MinReplicasMaxLag))
	}
}

// replicaSettings are the settings of this file, with Redis' old names.
func replicaSettings() []*setting {
	toWrite := func(c *Config) *int { return &c.MinReplicasToWrite }
	maxLag := func(c *Config) *time.Duration { return &c.MinReplicasMaxLag }
	priority := func(c *Config) *int { return &c.ReplicaPriority }
	const toWriteUsage = "refuse writes with fewer replicas acknowledging within min-replicas-max-lag (0: off)"
	const maxLagUsage = "seconds since a replica's last acknowledgement for min-replicas-to-write to count it"
	const priorityUsage = "Sentinel promotes replicas of lower priority first, never one of 0"
	announceIP := func(c *Config) *string { return &c.ReplicaAnnounceIP }
	announcePort := func(c *Config) *int { return &c.ReplicaAnnouncePort }
	const ipUsage = "address a replica's primary shows for it to Sentinel (empty: the one it connects from)"
	const portUsage = "port a replica's primary shows for it to Sentinel (0: the one it listens on)"
	return []*setting{
		intSetting("min-replicas-to-write", toWriteUsage, true, 0, math.MaxInt32, toWrite),
		intSetting("min-slaves-to-write", toWriteUsage, true, 0, math.MaxInt32, toWrite),
		durationSetting("min-replicas-max-lag", maxLagUsage, true, time.Second, 0, maxLag),
		durationSetting("min-slaves-max-lag", maxLagUsage, true, time.Second, 0, maxLag),
		intSetting("replica-priority", priorityUsage, true, 0, math.MaxInt32, priority),
		intSetting("slave-priority", priorityUsage, true, 0, math.MaxInt32, priority),
		stringSetting("replica-announce-ip", ipUsage, true, announceIP, checkAnnounceIP),
		stringSetting("slave-announce-ip", ipUsage, true, announceIP, checkAnnounceIP),
		intSetting("replica-announce-port", portUsage, true, 0, 65535, announcePort),
		intSetting("slave-announce-port", portUsage, true, 0, 65535, announcePort),
		boolSetting("replica-announced", "whether Sentinel lists this replica (INFO replica_announced)", true,
			func(c *Config) *bool { return &c.ReplicaAnnounced }),
	}
}

// checkAnnounceIP accepts a host name or address without spaces or
// commas, which would break INFO's slaveN line, or nothing.
func checkAnnounceIP(v string) error {
	if strings.ContainsAny(v, " ,\t\r\n") {
		return errors.New("replica-announce-ip must be an address or host name")
	}
	return nil
}
