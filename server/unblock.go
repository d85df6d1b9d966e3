package server

import (
	"sync"
)

// CLIENT UNBLOCK ends another client's blocked command (the blocking
// pops, XREAD and XREADGROUP with BLOCK, WAIT) early: as if its timeout
// had passed, or with an error.

// msgUnblocked is the error CLIENT UNBLOCK id ERROR makes the blocked
// command reply.
const msgUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// unblockPoint is where CLIENT UNBLOCK reaches a connection; it is armed
// while the connection is blocked.
type unblockPoint struct {
	mu sync.Mutex
	// woken is non-nil while armed, and closed by CLIENT UNBLOCK, which
	// sets fired, and withError for its ERROR mode.
	woken            chan struct{}
	fired, withError bool
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
	u.woken, u.claim, u.fired, u.withError = make(chan struct{}), claim, false, false
	return u.woken
}

// disarm is called once the connection no longer waits; it reports
// whether CLIENT UNBLOCK came, and with ERROR, even when the connection
// woke for another reason at the same moment.
func (u *unblockPoint) disarm() (fired, withError bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.woken, u.claim = nil, nil
	return u.fired, u.withError
}

// unblock wakes the connection if it is blocked, reporting whether it was.
func (u *unblockPoint) unblock(withError bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.woken == nil || u.fired || (u.claim != nil && !u.claim()) {
		return false
	}
	u.fired, u.withError = true, withError
	close(u.woken)
	return true
}

// cmdClientUnblock implements CLIENT UNBLOCK client-id [TIMEOUT|ERROR].
func cmdClientUnblock(c *conn, _ *command, args [][]byte) error {
	if len(args) > 4 {
		return redisError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try CLIENT HELP.")
	}
	withError := false
	if len(args) == 4 {
		switch {
		case is(args[3], "TIMEOUT"):
		case is(args[3], "ERROR"):
			withError = true
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
	if target != nil && target.unblocker.unblock(withError) {
		c.wr.Int(1)
	} else {
		c.wr.Int(0)
	}
	return nil
}
