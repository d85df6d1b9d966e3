package server

import (
	"sync"
	"sync/atomic"
	"time"
)

// CLIENT PAUSE and UNPAUSE: while a pause lasts, the commands it covers
// (all of them, or with WRITE those that may write) wait in
// conn.execute before they run; CLIENT commands never wait, so that
// CLIENT UNPAUSE can end a pause of ALL. A client waiting in a pause
// holds no lock.
type pauseState struct {
	// on is set while a pause may last: without one, commands pay one
	// atomic load.
	on    atomic.Bool
	mu    sync.Mutex
	until time.Time
	all   bool
	// lifted closes when UNPAUSE or a new pause changes the state.
	lifted chan struct{}
}

// set starts a pause until the time given, or extends the running one:
// the later end and the wider kind win, as in Redis.
func (p *pauseState) set(until time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Now().Before(p.until) {
		all = all || p.all
		if p.until.After(until) {
			until = p.until
		}
	}
	p.until, p.all = until, all
	p.on.Store(true)
	p.changedLocked()
}

func (p *pauseState) lift() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.until = time.Time{}
	p.changedLocked()
}

func (p *pauseState) changedLocked() {
	if p.lifted != nil {
		close(p.lifted)
	}
	p.lifted = make(chan struct{})
}

// wait returns once no pause covers cmd, or done closes; it calls
// before first when it has to wait.
func (p *pauseState) wait(cmd *command, done <-chan struct{}, before func()) {
	if !p.on.Load() || cmd.name == "client" || cmd.parent != nil && cmd.parent.name == "client" {
		return
	}
	for {
		p.mu.Lock()
		until, all, lifted := p.until, p.all, p.lifted
		left := time.Until(until)
		if left <= 0 {
			p.on.Store(false)
		}
		p.mu.Unlock()
		if left <= 0 || !all && !mayWrite(cmd) {
			return
		}
		before()
		t := time.NewTimer(left)
		select {
		case <-lifted:
		case <-t.C:
		case <-done:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// mayWrite reports whether cmd may write or replicate, which CLIENT
// PAUSE WRITE holds back: Redis counts scripts, PUBLISH and PFCOUNT
// (which may store its cache) among them, and EXEC, whose queued
// commands may write.
func mayWrite(cmd *command) bool {
	if cmd.flags&flagWrite != 0 {
		return true
	}
	switch cmd.name {
	case "eval", "evalsha", "fcall", "publish", "pfcount", "exec":
		return true
	}
	return false
}

func cmdClientPause(c *conn, _ *command, args [][]byte) error {
	ms, ok := parseInt(args[2])
	if !ok {
		return redisError("ERR timeout is not an integer or out of range")
	}
	if ms < 0 {
		return redisError("ERR timeout is negative")
	}
	all := true
	if len(args) == 4 {
		switch {
		case is(args[3], "WRITE"):
			all = false
		case is(args[3], "ALL"):
		default:
			return redisError(msgSyntax)
		}
	} else if len(args) > 4 {
		return redisError(msgSyntax)
	}
	c.s.pause.set(time.Now().Add(time.Duration(ms)*time.Millisecond), all)
	c.ok()
	return nil
}

func cmdClientUnpause(c *conn, _ *command, _ [][]byte) error {
	c.s.pause.lift()
	c.ok()
	return nil
}
