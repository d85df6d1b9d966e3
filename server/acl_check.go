package server

import (
	"bytes"
)

// Permission checks: a command runs when one of its user's selectors
// allows the command (or its first argument), every key it names with the
// access each key gets (its key specs' flags), and every channel it
// publishes or subscribes to.

// aclDenial is why a selector refused a command; Redis reports, of all
// the selectors' refusals, the greatest, and among equals the one at the
// latest argument.
type aclDenial uint8

const (
	aclAllowed aclDenial = iota
	aclDeniedCommand
	aclDeniedKey
	aclDeniedAuth
	aclDeniedChannel
)

// channelArgs locates the channels of the commands that publish or
// subscribe: arguments first..last (-1: to the end); pattern when they
// are patterns, which a user may subscribe to only when one of its
// channel rules is that very pattern.
func channelArgs(cmd *command) (first, last int, pattern bool) {
	switch cmd.name {
	case "publish", "spublish":
		return 1, 1, false
	case "subscribe", "ssubscribe":
		return 1, -1, false
	case "psubscribe":
		return 1, -1, true
	}
	return 0, 0, false
}

// check runs cmd with args against s; keys are the command's keys. On a
// denial it returns the position of the argument refused.
func (s *aclSelector) check(cmd *command, args [][]byte, keys []keyRef) (aclDenial, int) {
	if !s.all && cmd.flags&flagNoAuth == 0 && !s.allows(cmd.id) && !s.firstArgAllowed(cmd, args) {
		return aclDeniedCommand, 0
	}
	if !s.allKeys {
		for _, k := range keys {
			if !s.keyAllowed(args[k.pos], k.flags) {
				return aclDeniedKey, k.pos
			}
		}
	}
	if !s.allChans {
		first, last, pattern := channelArgs(cmd)
		if first > 0 {
			if last < 0 || last >= len(args) {
				last = len(args) - 1
			}
			for i := first; i <= last; i++ {
				if !s.channelAllowed(args[i], pattern) {
					return aclDeniedChannel, i
				}
			}
		}
	}
	return aclAllowed, 0
}

func (s *aclSelector) firstArgAllowed(cmd *command, args [][]byte) bool {
	i := 1
	if cmd.parent != nil {
		i = 2
	}
	if i >= len(args) {
		return false
	}
	for _, a := range s.firstArgs[cmd.id] {
		if is(args[i], a) {
			return true
		}
	}
	return false
}

// keyAllowed matches key against the patterns that grant the access f
// needs.
func (s *aclSelector) keyAllowed(key []byte, f keyFlags) bool {
	read, write := f.needsRead(), f.needsWrite()
	for _, p := range s.keys {
		if (read && !p.read) || (write && !p.write) {
			continue
		}
		if globMatch([]byte(p.pattern), key, false) {
			return true
		}
	}
	return false
}

func (s *aclSelector) channelAllowed(ch []byte, pattern bool) bool {
	for _, p := range s.channels {
		if pattern && bytes.Equal([]byte(p), ch) || !pattern && globMatch([]byte(p), ch, false) {
			return true
		}
	}
	return false
}

// check runs cmd against every selector of p: allowed if one allows it,
// else the most relevant refusal.
func (p *aclPerms) check(cmd *command, args [][]byte, keyBuf []keyRef) (aclDenial, int, []keyRef) {
	keys := keyBuf[:0]
	if len(cmd.acl.specs) > 0 {
		keys = commandKeys(cmd, args, keys)
	}
	worst, at := aclDeniedCommand, 0
	for _, s := range p.selectors {
		d, pos := s.check(cmd, args, keys)
		if d == aclAllowed {
			return aclAllowed, 0, keys
		}
		if d > worst || d == worst && pos > at {
			worst, at = d, pos
		}
	}
	return worst, at, keys
}

// aclDenialMessage words a refusal as Redis 7.2 does; verbose (ACL
// DRYRUN) names the key or channel.
func aclDenialMessage(d aclDenial, user string, cmd *command, arg []byte, verbose bool) string {
	switch d {
	case aclDeniedKey:
		if verbose {
			return "No permissions to access the '" + string(arg) + "' key"
		}
		return "No permissions to access a key"
	case aclDeniedChannel:
		if verbose {
			return "No permissions to access the '" + string(arg) + "' channel"
		}
		return "No permissions to access a channel"
	}
	return "User " + user + " has no permissions to run the '" + cmd.name + "' command"
}

// ACL LOG contexts: where the refused command came from.
const (
	aclCtxToplevel = "toplevel"
	aclCtxMulti    = "multi"
	aclCtxLua      = "lua"
)

// aclRefusal checks cmd against the connection's user, whose permissions
// are p, and for a refusal logs it and returns the NOPERM reply.
func (c *conn) aclRefusal(p *aclPerms, cmd *command, args [][]byte, ctx string) string {
	d, pos, keys := p.check(cmd, args, c.aclKeys)
	c.aclKeys = keys[:0]
	if d == aclAllowed {
		return ""
	}
	u := c.user.Load()
	c.s.acl.log.add(c, d, ctx, aclLogObject(d, cmd, args, pos), u.name)
	return "NOPERM " + aclDenialMessage(d, u.name, cmd, args[pos], false)
}

// perms returns the permissions of the connection's user.
func (c *conn) perms() *aclPerms { return c.user.Load().perms.Load() }

// aclContext is the ACL LOG context of a command the connection sent.
func (c *conn) aclContext() string {
	if c.tx != nil {
		return aclCtxMulti
	}
	return aclCtxToplevel
}

// aclChangedSinceQueued checks a command MULTI queued again when EXEC
// runs it, as Redis does: the user's rules may have changed meanwhile.
func (c *conn) aclChangedSinceQueued(cmd *command, args [][]byte) string {
	p := c.perms()
	if p.unrestricted {
		return ""
	}
	d, pos, keys := p.check(cmd, args, c.aclKeys)
	c.aclKeys = keys[:0]
	if d == aclAllowed {
		return ""
	}
	c.s.acl.log.add(c, d, aclCtxMulti, aclLogObject(d, cmd, args, pos), c.user.Load().name)
	reason := "no permission to execute the command or subcommand"
	switch d {
	case aclDeniedKey:
		reason = "no permission to touch the specified keys"
	case aclDeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and its execution. This command is no longer allowed for the following reason: " + reason
}

// aclLogObject is what ACL LOG names for a refusal: the command, or the
// key or channel refused.
func aclLogObject(d aclDenial, cmd *command, args [][]byte, pos int) string {
	if d == aclDeniedCommand {
		return cmd.name
	}
	return string(args[pos])
}

// ACLCheck answers redis.acl_check_cmd: whether the script's caller may
// run args, and whether args name a command at all.
func (sc *scriptCaller) ACLCheck(args [][]byte) (allowed, known bool) {
	c := sc.c
	cmd := lookup(commands, &c.nameBuf, args[0])
	if cmd != nil && cmd.subs != nil && len(args) > 1 {
		cmd = lookup(cmd.subs, &c.nameBuf, args[1])
	}
	if cmd == nil {
		return false, false
	}
	d, _, keys := c.perms().check(cmd, args, c.aclKeys)
	c.aclKeys = keys[:0]
	return d == aclAllowed, true
}

// channelAllowed reports whether any selector of p allows the channel
// (or, with pattern, the pattern subscription) ch.
func (p *aclPerms) channelAllowed(ch []byte, pattern bool) bool {
	for _, s := range p.selectors {
		if s.allChans || s.channelAllowed(ch, pattern) {
			return true
		}
	}
	return false
}

// closeRevokedSubscribers closes the connections of users that are
// subscribed to a channel or pattern their rules no longer allow, as Redis
// 7 does when a user's rules change; self, if among them, closes after
// its reply.
func (s *Server) closeRevokedSubscribers(self *conn, users ...*aclUser) {
	doomed := map[*conn]bool{}
	h := &s.pubsub
	h.mu.RLock()
	for _, u := range users {
		p := u.perms.Load()
		for _, subs := range []struct {
			m       map[string]map[*conn]struct{}
			pattern bool
		}{{h.channels, false}, {h.patterns, true}} {
			for ch, conns := range subs.m {
				for c := range conns {
					if c.user.Load() == u && !p.channelAllowed([]byte(ch), subs.pattern) {
						doomed[c] = true
					}
				}
			}
		}
	}
	h.mu.RUnlock()
	for c := range doomed {
		if c == self {
			c.quit = true
		} else {
			c.closeSocket()
		}
	}
}

// sortPatternsAllowed refuses SORT's BY (with a pattern) and GET, which
// read keys no key spec names, unless one of the user's selectors that
// allows the command may read every key, as in Redis.
func (c *conn) sortPatternsAllowed(cmd *command, args [][]byte, by []byte, gets int) error {
	p := c.perms()
	if p.unrestricted || (bytes.IndexByte(by, '*') < 0 && gets == 0) {
		return nil
	}
	keys := commandKeys(cmd, args, nil)
	for _, s := range p.selectors {
		if d, _ := s.check(cmd, args, keys); d == aclAllowed && s.readsAllKeys() {
			return nil
		}
	}
	if bytes.IndexByte(by, '*') >= 0 {
		return redisError("ERR BY option of SORT denied due to insufficient ACL permissions.")
	}
	return redisError("ERR GET option of SORT denied due to insufficient ACL permissions.")
}

func (s *aclSelector) readsAllKeys() bool {
	if s.allKeys {
		return true
	}
	for _, k := range s.keys {
		if k.read && k.pattern == "*" {
			return true
		}
	}
	return false
}
