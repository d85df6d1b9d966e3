package server

import (
	"sync"
)

// CLIENT UNBLOCK ends another client's blocked command (the blocking
// pops, XREAD and XREADGROUP with BLOCK, WAIT) early: as if its timeout
// had passed, or with an error. A primary that becomes a replica ends
// them all with an error and closes their connections (unblockAll).

// msgUnblocked is the error CLIENT UNBLOCK id ERROR makes the blocked
// command reply.
const msgUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// msgRoleChanged is the error of the commands blocked when REPLICAOF makes
// the server a replica (or points it at another primary), worded as Redis
// 7.0's, which then closes their connections: a write-blocking command
// could no longer write, and what a blocked read waits for now comes
// from another history.
const msgRoleChanged = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"

// unblockCause is how a blocked command ends when unblocked: "" as on its
// timeout, else with the error msg; quit closes the connection after it.
type unblockCause struct {
	msg  string
	quit bool
}

// unblockPoint is where CLIENT UNBLOCK reaches a connection; it is armed
// while the connection is blocked.
type unblockPoint struct {
	mu sync.Mutex
	// woken is non-nil while armed, and closed by unblock, which sets
	// fired and cause.
	woken chan struct{}
	fired bool
	cause unblockCause
	// claim takes the client off what it waits for, reporting false
	// when it was served first and so is no longer blocked.
	claim func() bool
}

// arm is called by a connection about to block; claim may be nil when
// nothing can serve the client. The returned channel closes on CLIENT
// UNBLOCK.
func (u *unblockPoint) arm(claim func() bool) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.woken, u.claim, u.fired, u.cause = make(chan struct{}), claim, false, unblockCause{}
	return u.woken
}

// disarm is called once the connection no longer waits; it reports
// whether unblock came, and how the command is to end, even when the
// connection woke for another reason at the same moment.
func (u *unblockPoint) disarm() (fired bool, cause unblockCause) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.woken, u.claim = nil, nil
	return u.fired, u.cause
}

// unblock wakes the connection if it is blocked, reporting whether it was.
func (u *unblockPoint) unblock(cause unblockCause) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.woken == nil || u.fired || (u.claim != nil && !u.claim()) {
		return false
	}
	u.fired, u.cause = true, cause
	close(u.woken)
	return true
}

// endBlocked ends the blocked command of a client unblocked with an
// error (unblockCause) and reports whether it did; the command then
// replies nothing more.
func (c *conn) endBlocked(cause unblockCause) bool {
	if cause.msg == "" {
		return false
	}
	c.fail(cause.msg)
	c.quit = c.quit || cause.quit
	return true
}

// unblockAll ends every blocked command with msgRoleChanged and closes
// its connection once it replied, as Redis does when it becomes a
// replica (disconnectAllBlockedClients).
func (s *Server) unblockAll() {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	for _, c := range s.clients {
		c.unblocker.unblock(unblockCause{msg: msgRoleChanged, quit: true})
	}
}

// cmdClientUnblock implements CLIENT UNBLOCK client-id [TIMEOUT|ERROR].
func cmdClientUnblock(c *conn, _ *command, args [][]byte) error {
	if len(args) > 4 {
		return redisError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try CLIENT HELP.")
	}
	var cause unblockCause
	if len(args) == 4 {
		switch {
		case is(args[3], "TIMEOUT"):
		case is(args[3], "ERROR"):
			cause.msg = msgUnblocked
		default:
			return redisError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		return redisError(msgNotInteger)
	}
	c.s.clientsMu.Lock()
	target := c.s.clients[uint64(id)]
	c.s.clientsMu.Unlock()
	if target != nil && target.unblocker.unblock(cause) {
		c.wr.Int(1)
	} else {
		c.wr.Int(0)
	}
	return nil
}
