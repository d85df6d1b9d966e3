package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Replication, primary to replicas, at the engine's batch level
// (doc/replication.md): a replica connects to the primary's Redis port
// and sends LSMSYNC with the stream version and the sequence number it
// needs next; the primary answers +STREAM and then sends, as RESP bulk
// strings, every committed batch from there on, from its backlog, in
// commit order, with +PING when idle. The replica applies each batch
// with lsmgo.DB.ApplyReplicated, which refuses a gap or a duplicate.
// Whatever the key layout, a batch is the unit both sides agree on.

// replStreamVersion is the newest version of the LSMSYNC stream: the
// framing above and the engine's replicated batch encoding. Version 2 adds
// the full sync (replfullsync.go); a version 1 replica that cannot resume
// is refused, as before. Version 3 adds keyspace events (replnotify.go).
const replStreamVersion = 3

// replPingInterval is how often an idle stream says it is alive.
const replPingInterval = time.Second

// msgReadOnlyReplica is Redis' refusal of a write on a read-only replica.
const msgReadOnlyReplica = "READONLY You can't write against a read only replica."

// replication is the server's side of both roles.
type replication struct {
	backlog *replBacklog
	dataset atomic.Pointer[string] // the id at datasetKey
	// stream names this primary's history since its last unclean start
	// (replstream.go); streamStart is where that history's backlog began.
	stream      atomic.Pointer[string]
	streamStart atomic.Uint64
	// prev is the history the current stream continues, up to where it
	// began: the stream before an unclean start or a promotion
	// (replstream.go); nil if none.
	prev atomic.Pointer[streamPrefix]
	// walBad is the highest position at which reading the retained WAL
	// failed (replbacklog_wal.go), 0 if none.
	walBad atomic.Uint64

	mu sync.Mutex
	// primary is "host:port" while this server is a replica, else "".
	primary string
	link    *replLink
	// replicas are the streams this server sends, by connection id.
	replicas map[uint64]*replicaStream
	acks     ackBoard
	failover failoverState
	// events are the keyspace events the replicas want (replnotify.go).
	events replEvents
	// peerVersion is the stream version this replica asks its primary
	// for: the newest, or 2 once the primary refused it.
	peerVersion atomic.Int32

	// master is the master client of the link to the primary while it
	// is connected (replapply.go).
	master    atomic.Pointer[conn]
	linkUp    atomic.Bool
	linkDown  atomic.Int64           // how many times a link broke or was refused
	linkErr   atomic.Pointer[string] // why it last did
	lastIO    atomic.Int64           // unix seconds of the last read from the primary
	downSince atomic.Int64           // unix seconds since the link is down, 0 while up or never tried
	following atomic.Bool            // while a replica
	syncing   atomic.Bool            // while a full sync arrives
	// As a primary: streams begun with a full sync, resumed, and refused
	// (INFO stats' sync_full, sync_partial_ok, sync_partial_err).
	fullSyncs, resumes, refused atomic.Int64
	// committed counts the bytes of the batches committed, and
	// limitClosed the replicas closed for falling behind them
	// (repllimit.go).
	committed, limitClosed atomic.Int64

	// sendInterval is replSendInterval, in nanoseconds, but for tests.
	sendInterval atomic.Int64

	// applyMu is held by a replica while it marks the WATCHes of a
	// batch and commits it; WATCH passes through it after registering,
	// so that no batch marks before the registration and commits after
	// WATCH read the key (replapply.go).
	applyMu sync.Mutex
	// testApplyHook, when set, runs on a replica between marking the
	// WATCHes of a batch and committing it (replwatch_test.go).
	testApplyHook atomic.Pointer[func()]

	// swapping is set while a full sync replaces the DB: new connections
	// are refused with LOADING. swapMu is held then; the HTTP handlers
	// that read the DB hold it shared.
	swapping atomic.Bool
	swapMu   sync.RWMutex
}

// replicaStream is one replica this server streams to, for ROLE and INFO.
type replicaStream struct {
	ip   string
	port int // its listening port, from LSMSYNC, else 0
	replicaAcks
	out replicaOutput
	// notify is the classes of keyspace events it wants (REPLCONF NOTIFY).
	notify atomic.Uint32
}

// replLink is the goroutine following a primary.
type replLink struct {
	stop chan struct{}
	done chan struct{}
}

// datasetKey holds the dataset's id: random, written when a DB is first
// opened by a server, and copied with the data to the replicas made from
// it. A replica follows only a primary with its own id, so that it never
// applies a primary's batches on top of unrelated data.
const datasetKey = string(keylayout.Meta) + "dataset-id"

func (s *Server) initReplication() error {
	if s.repl.replicas == nil {
		s.repl.replicas = map[uint64]*replicaStream{}
		s.repl.sendInterval.Store(int64(replSendInterval))
	}
	if s.repl.backlog == nil {
		s.repl.backlog = newReplBacklog(replBacklogSize, s.db.LastSeq()+1)
	} else {
		// A full sync replaced the DB.
		s.repl.backlog.reset(s.db.LastSeq() + 1)
	}
	id, err := s.db.Get([]byte(datasetKey))
	if errors.Is(err, lsmgo.ErrNotFound) {
		id = []byte(newRunID())
		err = s.db.Set([]byte(datasetKey), id, lsmgo.Sync)
	}
	if err != nil {
		return fmt.Errorf("lsmgo server: dataset id: %w", err)
	}
	s.repl.setDataset(string(id))
	return s.loadStream()
}

func (r *replication) setDataset(id string) { r.dataset.Store(&id) }

func (r *replication) datasetID() string { return *r.dataset.Load() }

// onCommit feeds the backlog; the engine calls it in commit order.
func (s *Server) onCommit(seq uint64, data []byte) {
	s.repl.committed.Add(int64(bulkFrameLen(len(data))))
	if b := s.repl.backlog; b != nil {
		b.add(seq, replCount(data), data)
	}
}

// refusesWrites reports whether client writes are refused: on a
// read-only replica.
func (s *Server) refusesWrites() bool {
	return s.repl.following.Load() && s.config().ReplicaReadOnly
}

// checkReplicaOf accepts "host port" or nothing.
func checkReplicaOf(v string) error {
	if v == "" {
		return nil
	}
	host, port, ok := strings.Cut(v, " ")
	if p, err := strconv.Atoi(port); !ok || host == "" || err != nil || p < 0 || p > 65535 {
		return errors.New("replicaof must be 'host port' or empty")
	}
	return nil
}

// replicaAddr turns a checked replicaof value into an address to dial.
func replicaAddr(v string) string {
	if host, port, ok := strings.Cut(v, " "); ok {
		return net.JoinHostPort(host, port)
	}
	return ""
}

// setReplicaOf is REPLICAOF: it records the primary in the running
// configuration (CONFIG GET replicaof, CONFIG REWRITE) and follows it.
func (s *Server) setReplicaOf(v string) error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.setLocked([]settingValue{{"replicaof", v}})
}

// follow makes the server a replica of addr ("" makes it a primary): it
// stops the current link, if any, waits for it, and starts the new one.
func (s *Server) follow(addr string) {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if l := s.repl.link; l != nil {
		close(l.stop)
		<-l.done
		s.repl.link = nil
	}
	promoted := s.repl.primary != "" && addr == ""
	s.repl.primary = addr
	s.repl.peerVersion.Store(replStreamVersion)
	s.repl.linkUp.Store(false)
	s.repl.following.Store(addr != "")
	if promoted {
		s.promote()
		return
	}
	if addr == "" {
		return
	}
	// Redis 7.0 ends every blocked command here, read-only ones too, and
	// closes their connections (TestUnblockOnReplicaOf).
	s.unblockAll()
	l := &replLink{stop: make(chan struct{}), done: make(chan struct{})}
	s.repl.link = l
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		defer close(l.done)
		s.runLink(addr, l.stop)
	}()
}

// promote makes a former replica a primary. Its history diverges from its
// old primary's from its first write on, so it takes a new dataset id:
// the old primary cannot then follow it and apply its batches on top of
// a different history (it needs a new copy); the old primary's other
// replicas may, up to the fork point (replfork.go). Collection versions the old primary handed out are in the DB:
// the clock continues above them.
func (s *Server) promote() {
	id := newRunID()
	if err := s.db.Apply(s.promotionBatch(id), lsmgo.Sync); err != nil {
		s.log.Error("replication: new dataset id after promotion", "err", err)
	} else {
		s.repl.setDataset(id)
	}
	s.newStream()
	// SPOP's memos and ZPOPMIN's windows learned before or while
	// following may predate writes another server made.
	s.ks.spops.clear()
	s.ks.zpops.clear()
	if err := s.ks.versions.reload(); err != nil {
		s.log.Error("replication: reloading collection versions", "err", err)
	}
}

// runLink follows the primary at addr until stop or shutdown, reconnecting
// after a second when the link breaks.
func (s *Server) runLink(addr string, stop chan struct{}) {
	for {
		err := s.followOnce(addr, stop)
		s.repl.linkUp.Store(false)
		s.repl.downSince.CompareAndSwap(0, time.Now().Unix())
		why := err.Error()
		s.repl.linkErr.Store(&why)
		s.repl.linkDown.Add(1)
		s.log.Warn("replication link to primary down", "primary", addr, "err", err)
		select {
		case <-stop:
			return
		case <-s.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// followOnce connects to the primary, asks for the batches after this
// DB's last, and applies them until the link breaks or stop; when the
// primary cannot serve them, it sends a full copy first (FULLSYNC), which
// replaces this DB.
func (s *Server) followOnce(addr string, stop chan struct{}) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	ended := make(chan struct{})
	defer close(ended)
	mc := s.newMasterConn(nc)
	defer s.dropMasterConn(mc)
	go func() {
		select {
		case <-stop:
		case <-s.done:
		case <-ended:
		}
		nc.Close()
	}()
	rd := resp.NewReader(nc, resp.Limits{MaxBulkLen: 1 << 30})
	nc.SetDeadline(time.Now().Add(10 * replPingInterval))
	if err := s.authToPrimary(nc, rd); err != nil {
		return err
	}
	nc.SetDeadline(time.Time{})
	if err := s.reloadDataset(); err != nil {
		return err
	}
	from := s.db.LastSeq() + 1
	if _, err := nc.Write(s.syncRequest(from)); err != nil {
		return err
	}
	var batches replApplier
	var v resp.Value
	var announced notifyFlags // the classes announced on this link
	for held := false; ; {
		if !held {
			// The primary pings every second when idle.
			nc.SetReadDeadline(time.Now().Add(10 * replPingInterval))
			if v, err = rd.ReadValue(); err != nil {
				return err
			}
		}
		held = false
		s.repl.lastIO.Store(time.Now().Unix())
		switch v.Type {
		case '-':
			if strings.Contains(v.Err, "unsupported replication stream version") && s.repl.peerVersion.Load() > 2 {
				// An older primary: ask again for version 2, without
				// keyspace events.
				s.repl.peerVersion.Store(2)
			}
			return fmt.Errorf("primary refused: %s", v.Err)
		case '+':
			f := strings.Fields(string(v.Str))
			switch {
			case len(f) == 3 && f[0] == "STREAM":
				// Every batch from here on is of that stream.
				if err := s.saveFollowedStream(f[2]); err != nil {
					return err
				}
			case len(f) == 2 && f[0] == "FULLSYNC":
				s.log.Info("replication: full sync from the primary begins", "primary", addr, "had", from-1)
				if from, err = s.fullSync(rd, nc, f[1], stop); err != nil {
					return err
				}
				s.log.Info("replication: full sync done", "primary", addr, "at", from-1)
			default:
				// +PING: an idle stream's, answered with an acknowledgement
				// (and a change of notify-keyspace-events, if any).
				if err := s.sendAck(nc); err != nil {
					return err
				}
				if err := s.announceNotify(nc, &announced); err != nil {
					return err
				}
				continue
			}
			// Keep what this replica applies, as Redis' replicas do, so
			// that its siblings continue from it without a new copy if
			// it is promoted.
			s.repl.backlog.activate()
			s.repl.linkUp.Store(true)
			s.repl.downSince.Store(0)
			s.log.Info("replication link to primary up", "primary", addr, "from", from)
			if err := s.sendAck(nc); err != nil {
				return err
			}
			if err := s.announceNotify(nc, &announced); err != nil {
				return err
			}
		case '$':
			mc.lastActive.Store(time.Now().UnixNano())
			var parts [][]byte
			if parts, held, err = batches.gather(rd, &v); err == nil {
				err = s.applyReplicated(mc, parts)
			}
			if err != nil {
				var mismatch *lsmgo.SeqMismatchError
				if errors.As(err, &mismatch) {
					return fmt.Errorf("%w; this replica needs a new copy of the primary (doc/replication.md)", err)
				}
				return err
			}
			if !held && rd.Buffered() == 0 {
				if err := s.sendAck(nc); err != nil {
					return err
				}
			}
		case '*':
			if isEvents(v) {
				if err := s.publishReplicatedEvents(mc, v); err != nil {
					return err
				}
				continue
			}
			if !isGetAck(v) {
				return errors.New("unexpected command on the replication stream")
			}
			if err := s.sendAck(nc); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected reply type %q on the replication stream", v.Type)
		}
	}
}

// authToPrimary sends AUTH [masteruser] masterauth when masterauth is set,
// and waits for +OK.
func (s *Server) authToPrimary(nc net.Conn, rd *resp.Reader) error {
	cfg := s.config()
	if cfg.MasterAuth == "" {
		return nil
	}
	args := [][]byte{[]byte("AUTH")}
	if cfg.MasterUser != "" {
		args = append(args, []byte(cfg.MasterUser))
	}
	args = append(args, []byte(cfg.MasterAuth))
	if _, err := nc.Write(resp.AppendCommand(nil, args...)); err != nil {
		return err
	}
	v, err := rd.ReadValue()
	if err != nil {
		return err
	}
	if v.Type == '-' {
		return fmt.Errorf("primary refused AUTH (masteruser/masterauth): %s", v.Err)
	}
	return nil
}

// syncRequest is LSMSYNC version dataset-id from listening-port stream-id
// [announced-ip]: the port and address replica-announce-port and
// replica-announce-ip say, the latter only when set.
func (s *Server) syncRequest(from uint64) []byte {
	cfg := s.config()
	port := cfg.ReplicaAnnouncePort
	if a, ok := s.Addr().(*net.TCPAddr); ok && port == 0 {
		port = a.Port
	}
	version := int(s.repl.peerVersion.Load())
	if version == 0 {
		version = replStreamVersion
	}
	args := [][]byte{[]byte("LSMSYNC"), []byte(strconv.Itoa(version)),
		[]byte(s.repl.datasetID()), strconv.AppendUint(nil, from, 10), []byte(strconv.Itoa(port)),
		[]byte(s.followedStream())}
	if cfg.ReplicaAnnounceIP != "" {
		args = append(args, []byte(cfg.ReplicaAnnounceIP))
	}
	return resp.AppendCommand(nil, args...)
}

// fullSync receives the primary's copy and installs it, and returns the
// sequence number the stream continues from.
func (s *Server) fullSync(rd *resp.Reader, nc net.Conn, stream string, stop <-chan struct{}) (uint64, error) {
	s.repl.syncing.Store(true)
	defer s.repl.syncing.Store(false)
	last, dataset, err := s.receiveFullSync(rd, nc, stream)
	if err != nil {
		return 0, err
	}
	// The primary keeps sending batches while the copy is installed;
	// they wait in the socket.
	nc.SetReadDeadline(time.Time{})
	if err := s.swapIn(stop, dataset != s.repl.datasetID()); err != nil {
		return 0, err
	}
	return last + 1, nil
}

// cmdLSMSync is the primary's side: LSMSYNC version dataset from
// listening-port stream turns the connection into a stream of the
// batches from sequence number from on, preceded, for a replica that
// cannot resume there and speaks version 2, by a full copy. It returns
// when the replica goes away, falls out of the backlog, or the server
// shuts down.
func cmdLSMSync(c *conn, _ *command, args [][]byte) error {
	c.detach() // the connection becomes the replica's stream
	version, err := strconv.Atoi(string(args[1]))
	if err != nil || version < 1 || version > replStreamVersion {
		return redisError(fmt.Sprintf("ERR unsupported replication stream version %q; this server speaks 1 to %d", args[1], replStreamVersion))
	}
	from, err := strconv.ParseUint(string(args[3]), 10, 64)
	if err != nil || from == 0 {
		return redisError("ERR invalid replication position")
	}
	s := c.s
	s.repl.backlog.activate()
	stream := *s.repl.stream.Load()
	refusal, retained := s.resumeRefusal(args, from, stream)
	if retained != nil {
		defer retained.Close()
	}
	full := refusal != "" && version >= 2
	switch {
	case full:
		s.repl.fullSyncs.Add(1)
	case refusal != "":
		s.repl.refused.Add(1)
		return redisError(refusal)
	default:
		s.repl.resumes.Add(1)
	}
	rs := &replicaStream{}
	if len(args) > 4 {
		rs.port, _ = strconv.Atoi(string(args[4]))
	}
	if len(args) > 6 && len(args[6]) > 0 && checkAnnounceIP(string(args[6])) == nil {
		rs.ip = string(args[6])
	} else if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		rs.ip = a.IP.String()
	}
	stopAcks := s.startAcks(c, rs)
	defer stopAcks()
	if full {
		s.startOutput(rs, 0)
	} else {
		s.startOutput(rs, from)
	}
	defer s.watchOutput(c, rs)()
	s.repl.mu.Lock()
	s.repl.replicas[c.id] = rs
	s.repl.mu.Unlock()
	defer func() {
		s.repl.mu.Lock()
		delete(s.repl.replicas, c.id)
		s.repl.recomputeWanted()
		s.repl.mu.Unlock()
	}()
	if full {
		s.log.Info("replication: full sync to a replica", "replica", c.nc.RemoteAddr().String(), "why", refusal)
		c.wr.SimpleString("FULLSYNC " + stream)
		last, err := s.sendFullSync(c)
		if err != nil {
			c.quit = true
			s.log.Warn("replication: full sync to a replica failed", "replica", c.nc.RemoteAddr().String(), "err", err)
			return nil
		}
		from = last + 1
		// What was committed while the copy was made and up to its last
		// batch is in the copy: the replica now needs only what the
		// backlog holds after it.
		s.startOutput(rs, from)
	} else {
		c.wr.SimpleString("STREAM " + strconv.FormatUint(from, 10) + " " + stream)
	}
	return s.streamBatches(c, rs, from, retained)
}

// resumeRefusal says why a replica cannot resume at from, or "" and,
// when the ring does not hold from, a reader of the retained WAL there.
func (s *Server) resumeRefusal(args [][]byte, from uint64, stream string) (string, *lsmgo.LogReader) {
	why := s.resumeCheck(args, from, stream)
	if why != "" || s.repl.backlog.holds(from) {
		return why, nil
	}
	lr, walWhy := s.openRetained(from)
	if lr == nil {
		first, _ := s.repl.backlog.extent()
		return fmt.Sprintf("NOBACKLOG position %d is not in this primary's backlog (from %d to %d in memory; on disk: %s)",
			from, first, s.repl.backlog.extentNext(), walWhy), nil
	}
	return "", lr
}

// resumeCheck says why a replica presenting args cannot resume at from
// whatever the backlog holds, or "".
func (s *Server) resumeCheck(args [][]byte, from uint64, stream string) string {
	presented := "?"
	if len(args) > 5 {
		presented = string(args[5])
	}
	sibling := false // of the replica this server was promoted from (replfork.go)
	if string(args[2]) != s.repl.datasetID() {
		ok, why := s.continuesFork(string(args[2]), presented, from)
		if why != "" {
			return "DIVERGED " + why
		}
		if !ok {
			return "NOTACOPY the replica's data is not a copy of this primary's (dataset ids differ)"
		}
		sibling = true
	}
	if !sibling && (len(args) < 6 || (presented != stream && presented != "?")) {
		// The replica's streamed batches are of an earlier history,
		// whose end this primary may have lost: only a replica at the
		// current history's start is surely a prefix. ("?": it never
		// streamed, so its data is a checkpoint, which holds only what
		// the primary had synced.)
		if from != s.repl.streamStart.Load() && !s.continuesPrev(presented, from) {
			return "DIVERGED the replica holds batches of this primary's history before an unclean restart, which the primary may have lost"
		}
	}
	return ""
}

// replSendInterval is the least time between two writes of a replica's
// stream while batches keep coming: a batch committed sooner after the
// last write waits for the rest of it, so that the commits of that time
// go out in one write. A write per commit group cost a primary with two
// replicas at -P 1 a syscall per group, 15% of its CPU (profile.sh), and
// each replica a read, a commit and an acknowledgement per group. A
// batch after a quiet moment goes out at once; one under load waits at
// most this long (replication lag).
const replSendInterval = time.Millisecond

// replReadLimit bounds what a replica stream copies out of the backlog
// at a time (under its lock), so that one far behind does not hold up
// the commits.
const replReadLimit = 256 << 10

// streamBatches sends the batches from sequence number from on, from the
// backlog, with a PING every second without one: from the ring while it
// holds the position, else from the retained WAL (retained, when not
// nil, is a reader of it at from) until the ring does.
func (s *Server) streamBatches(c *conn, rs *replicaStream, from uint64, retained *lsmgo.LogReader) error {
	wake := s.repl.backlog.watch()
	defer s.repl.backlog.unwatch(wake)
	evWake := s.repl.events.watch()
	defer s.repl.events.unwatch(evWake)
	evCursor := s.repl.events.cursorFrom(from)
	ping := time.NewTicker(replPingInterval)
	defer ping.Stop()
	defer func() {
		if retained != nil {
			retained.Close()
		}
	}()
	hold := time.NewTimer(0)
	defer hold.Stop()
	var wrote time.Time // of the last write of batches
	var buf []byte
	for started := false; ; started = true {
		var caughtUp, ok bool
		if retained != nil && s.repl.backlog.holds(from) {
			// The ring takes over: count what the stream has to send
			// from here as the ring's (replica output limit).
			retained.Close()
			retained = nil
			rs.out.base.Store(s.repl.committed.Load() - s.repl.backlog.framedFrom(from) - rs.out.sent.Load())
		}
		if retained != nil {
			var err error
			buf, caughtUp, err = s.readRetained(retained, buf[:0], replReadLimit)
			if from = retained.Pos(); err != nil {
				c.quit = true
				return redisError(fmt.Sprintf("NOBACKLOG the retained WAL cannot serve position %d", from))
			}
			ok = true
		} else {
			buf, from, caughtUp, ok = s.repl.backlog.read(from, buf[:0], replReadLimit)
			if !ok {
				var why string
				if retained, why = s.openRetained(from); retained != nil {
					continue
				}
				s.log.Info("replication: a replica's position left the backlog", "position", from, "why", why)
			}
		}
		if !ok {
			c.quit = true
			if !started {
				return redisError(fmt.Sprintf("NOBACKLOG position %d left the backlog during the full sync", from))
			}
			return redisError(fmt.Sprintf("NOBACKLOG the replica fell behind the backlog at position %d", from))
		}
		c.wr.Raw(buf)
		rs.out.sent.Add(int64(len(buf)))
		if rs.notify.Load() != 0 {
			// The events of the writes sent, after them.
			var lost uint64
			buf, evCursor, lost = s.repl.events.read(buf[:0], evCursor, from)
			c.wr.Raw(buf)
			if lost > 0 {
				s.log.Warn("replication: a replica fell behind the keyspace events; some are not sent", "replica", c.nc.RemoteAddr().String(), "records", lost)
			}
		} else {
			// Keep up while the replica wants none, so that events it
			// turns on later start at its position, not at the
			// stream's start.
			evCursor = s.repl.events.cursorFrom(from)
		}
		if !caughtUp {
			continue
		}
		if c.wr.Buffered() > 0 {
			wrote = time.Now()
		}
		if err := c.wr.Flush(); err != nil {
			c.quit = true
			return nil
		}
		select {
		case <-wake:
			if wait := time.Duration(s.repl.sendInterval.Load()) - time.Since(wrote); wait > 0 {
				hold.Reset(wait)
				select {
				case <-hold.C:
				case <-rs.gone:
					c.quit = true
					return nil
				case <-s.done:
					c.quit = true
					return nil
				}
			}
		case <-evWake:
		case <-ping.C:
			c.wr.SimpleString("PING")
		case <-rs.getAck:
			writeGetAck(c.wr)
		case <-rs.gone:
			c.quit = true
			return nil
		case <-s.done:
			c.quit = true
			return nil
		}
	}
}

// reload continues the clock above the versions stored in the DB, which a
// replica's primary wrote: called when the replica becomes a primary.
func (vc *versionClock) reload() error {
	fresh, err := newVersionClock(vc.db)
	if err != nil {
		return err
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	vc.next = max(vc.next, fresh.next)
	vc.limit = vc.next
	return nil
}

// writeReplicationInfo writes INFO replication's fields, Redis' names;
// offsets are sequence numbers.
func (s *Server) writeReplicationInfo(b *strings.Builder) {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	// What reads see: a write in the middle of its commit has its
	// sequence numbers before it is visible (lsmgo.DB.VisibleSeq).
	offset := s.db.VisibleSeq()
	if s.repl.primary != "" {
		host, port, _ := net.SplitHostPort(s.repl.primary)
		field(b, "role", "slave")
		field(b, "master_host", host)
		field(b, "master_port", port)
		status, last := "down", int64(-1)
		if s.repl.linkUp.Load() {
			status, last = "up", time.Now().Unix()-s.repl.lastIO.Load()
		}
		field(b, "master_link_status", status)
		field(b, "master_last_io_seconds_ago", last)
		field(b, "master_sync_in_progress", boolInt(s.repl.syncing.Load()))
		if status == "down" {
			// Sentinel passes over a replica whose link is down too long.
			down := int64(-1)
			if since := s.repl.downSince.Load(); since != 0 {
				down = time.Now().Unix() - since
			}
			field(b, "master_link_down_since_seconds", down)
		}
		field(b, "slave_read_repl_offset", offset)
		field(b, "slave_repl_offset", offset)
		field(b, "slave_priority", s.config().ReplicaPriority)
		field(b, "slave_read_only", boolInt(s.config().ReplicaReadOnly))
		field(b, "replica_announced", boolInt(s.config().ReplicaAnnounced))
	} else {
		field(b, "role", "master")
	}
	field(b, "connected_slaves", len(s.repl.replicas))
	s.writeReplicaLines(b)
	field(b, "master_failover_state", s.repl.failover.current())
	field(b, "master_replid", s.runID)
	field(b, "master_replid2", strings.Repeat("0", 40))
	field(b, "master_repl_offset", offset)
	field(b, "second_repl_offset", -1)
	field(b, "repl_backlog_active", boolInt(s.repl.backlog.isActive()))
	// The size bounds the WAL files kept; the history is the ring's and
	// theirs; the first offset is the ring's (the WAL's may be older).
	field(b, "repl_backlog_size", s.config().ReplBacklogSize)
	first, size := s.repl.backlog.extent()
	field(b, "repl_backlog_first_byte_offset", first)
	field(b, "repl_backlog_histlen", int64(size)+s.db.Metrics().WAL.RetainedBytes)
}
