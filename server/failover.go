package server

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// FAILOVER, Redis 6.2's coordinated failover (doc/replication.md,
// "FAILOVER"): the primary pauses writes, waits until the target replica
// acknowledged its last batch, then tells the target to take over with
// REPLCONF FAILOVER <stream-id> on a connection of its own; the target,
// if it follows that stream, promotes itself (as REPLICAOF NO ONE) and
// answers +OK; the old primary then follows it. Both hold the same
// history, so the old primary continues from the fork point without a new
// copy (replfork.go), presenting its own stream, the one the target
// followed. Writes resume, refused with READONLY now that the server is
// a replica. A timeout without FORCE, an ABORT, or a failure to reach
// the target gives up and resumes writes here.

func init() {
	register(spec{name: "failover", arity: -1, flags: flagAdmin | flagStale, group: "server", since: "6.2.0",
		summary: "Starts a coordinated failover from a server to one of its replicas.", run: cmdFailover})
}

// Redis' master_failover_state values.
const (
	failoverNone       = "no-failover"
	failoverWaiting    = "waiting-for-sync"
	failoverInProgress = "failover-in-progress"
)

// failoverState is the running FAILOVER, if any.
type failoverState struct {
	mu    sync.Mutex
	state string // "" is failoverNone
	abort chan struct{}
}

func (f *failoverState) current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == "" {
		return failoverNone
	}
	return f.state
}

func (f *failoverState) set(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
}

// failoverRequest is FAILOVER's parsed arguments.
type failoverRequest struct {
	to      string // host:port, or "" for any replica in sync
	timeout time.Duration
	force   bool
}

func parseFailover(args [][]byte) (req failoverRequest, abort bool, err error) {
	for i := 1; i < len(args); i++ {
		switch {
		case is(args[i], "ABORT") && len(args) == 2:
			return req, true, nil
		case is(args[i], "TO") && i+2 < len(args) && req.to == "":
			port, perr := strconv.Atoi(string(args[i+2]))
			if perr != nil || port <= 0 || port > 65535 {
				return req, false, redisError("ERR Invalid port")
			}
			req.to = net.JoinHostPort(string(args[i+1]), string(args[i+2]))
			i += 2
		case is(args[i], "TIMEOUT") && i+1 < len(args) && req.timeout == 0:
			ms, ok := parseInt(args[i+1])
			if !ok || ms <= 0 {
				return req, false, redisError("ERR FAILOVER timeout must be greater than 0")
			}
			req.timeout = time.Duration(ms) * time.Millisecond
			i++
		case is(args[i], "FORCE") && !req.force:
			req.force = true
		default:
			return req, false, redisError(msgSyntax)
		}
	}
	if req.force && (req.to == "" || req.timeout == 0) {
		return req, false, redisError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
	}
	return req, false, nil
}

// cmdFailover implements FAILOVER [TO host port [FORCE]] [TIMEOUT ms]
// and FAILOVER ABORT; like Redis it answers OK and fails over in the
// background.
func cmdFailover(c *conn, _ *command, args [][]byte) error {
	req, abort, err := parseFailover(args)
	if err != nil {
		return err
	}
	s, f := c.s, &c.s.repl.failover
	// Counted before f.mu is taken: INFO takes repl.mu, then f.mu.
	s.repl.mu.Lock()
	n, found := len(s.repl.replicas), req.to == ""
	for _, r := range s.repl.replicas {
		found = found || net.JoinHostPort(r.ip, strconv.Itoa(r.port)) == req.to
	}
	s.repl.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if abort {
		if f.state == "" {
			return redisError("ERR No failover in progress.")
		}
		close(f.abort)
		f.abort = make(chan struct{}) // the next ABORT finds a fresh one
		c.ok()
		return nil
	}
	switch {
	case s.repl.following.Load():
		return redisError("ERR FAILOVER is not valid when server is a replica.")
	case f.state != "":
		return redisError("ERR FAILOVER already in progress.")
	}
	switch {
	case n == 0:
		return redisError("ERR FAILOVER requires connected replicas.")
	case !found:
		return redisError("ERR FAILOVER target HOST and PORT is not a replica.")
	}
	f.state, f.abort = failoverWaiting, make(chan struct{})
	// Held until the server follows the target or gives up.
	s.pause.set(time.Now().Add(100*365*24*time.Hour), false)
	s.bgWG.Add(1)
	go func(abort <-chan struct{}) {
		defer s.bgWG.Done()
		defer s.pause.lift()
		defer f.set("")
		if err := s.runFailover(req, abort); err != nil {
			s.log.Warn("FAILOVER gave up; this server stays the primary", "err", err)
		}
	}(f.abort)
	c.ok()
	return nil
}

// runFailover waits for a target in sync, hands over to it and follows it.
func (s *Server) runFailover(req failoverRequest, abort <-chan struct{}) error {
	var timeout <-chan time.Time
	if req.timeout > 0 {
		t := time.NewTimer(req.timeout)
		defer t.Stop()
		timeout = t.C
	}
	s.ackedReplicas(s.db.LastSeq(), true)
	target := ""
	for target == "" {
		acked := s.repl.acks.next()
		if target = s.replicaInSync(req.to); target != "" {
			break
		}
		select {
		case <-acked:
			continue
		case <-abort:
			return errors.New("aborted")
		case <-s.done:
			return errors.New("shutting down")
		case <-timeout:
		}
		if !req.force {
			return errors.New("no replica caught up before the timeout")
		}
		target = req.to
	}
	s.repl.failover.set(failoverInProgress)
	// The target takes over the history this server wrote: its stream.
	stream := *s.repl.stream.Load()
	if err := s.saveFollowedStream(stream); err != nil {
		return err
	}
	if err := askToTakeOver(target, stream); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(target)
	return s.setReplicaOf(host + " " + port)
}

// replicaInSync returns the address of a replica (the one at to, if
// given) that acknowledged this server's last batch, or "".
func (s *Server) replicaInSync(to string) string {
	seq := s.db.LastSeq()
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	for _, r := range s.repl.replicas {
		addr := net.JoinHostPort(r.ip, strconv.Itoa(r.port))
		if r.acked.Load() >= seq && (to == "" || addr == to) {
			return addr
		}
	}
	return ""
}

// askToTakeOver sends REPLCONF FAILOVER to the target and reads its answer.
func askToTakeOver(target, stream string) error {
	nc, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(resp.AppendCommand(nil, []byte("REPLCONF"), []byte("FAILOVER"), []byte(stream))); err != nil {
		return err
	}
	v, err := resp.NewReader(nc, resp.Limits{}).ReadValue() // default limits: a short reply
	switch {
	case err != nil:
		return err
	case v.Type == '-':
		return errors.New(v.Err)
	}
	return nil
}

// takeOver is the target's side, REPLCONF FAILOVER <stream-id>: a
// replica of that stream promotes itself.
func (c *conn) takeOver(stream string) error {
	s := c.s
	if !s.repl.following.Load() || s.followedStream() != stream {
		return redisError("ERR FAILOVER stream id must match the stream this replica follows.")
	}
	if err := s.setReplicaOf(""); err != nil {
		return err
	}
	s.log.Info("promoted by the primary's FAILOVER")
	c.ok()
	return nil
}
