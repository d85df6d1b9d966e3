package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Client-side caching (CLIENT TRACKING), as Redis 7 does it. A tracking
// client in the default mode has the keys its read-only commands name
// remembered in the tracking table (key → client ids); the first write of
// such a key sends each of those clients an invalidation message and
// forgets the key. A client in BCAST mode remembers nothing: every write
// of a key under one of its prefixes is announced, one message per
// prefix per commit. Messages are RESP3 pushes (">2 invalidate [keys]"),
// or, redirected to a RESP2 client that is subscribed, messages on the
// __redis__:invalidate channel; FLUSHDB and FLUSHALL send a null instead
// of keys. They travel through the target connection's Pub/Sub queue
// (pubsub.go), so a message caused by the target's own command follows
// that command's reply, as in Redis.
//
// Every commit reaches invalidate (conn.apply): commands, EXEC, scripts,
// pipelined batches; expired keys reach it through the expiry watch
// (expiry_events.go), which runs while any client tracks. With no client
// tracking, that costs one atomic load per commit, and a command one nil
// check of its connection's tracking state.
//
// Like Redis, the table is keyed by key name alone, whatever the
// database; it holds at most tracking-table-max-keys keys, beyond which
// random keys are invalidated early. Ids of clients that stopped tracking
// stay in the table until their keys are invalidated.
type trackingTable struct {
	// clients counts the connections with tracking on.
	clients atomic.Int64

	mu sync.Mutex
	// keys maps a tracked key to the ids of the clients that may cache it.
	keys  map[string]map[uint64]struct{}
	items int // (key, client) pairs in keys
	// prefixes maps a BCAST prefix to the clients that registered it.
	prefixes map[string]map[*conn]struct{}
}

// tracker is a connection's tracking state. The connection's goroutine
// owns it; invalidators read it under the table's mutex, and the
// connection changes it only under that mutex.
type tracker struct {
	bcast, optin, optout, noloop bool
	// caching is CLIENT CACHING's answer for the next command.
	caching bool
	// script is the EVAL or FCALL running, whose declared keys a
	// read-only command inside it makes tracked, as in Redis.
	script   *scriptCall
	redirect uint64
	// broken records that the redirect target is gone.
	broken   bool
	prefixes []string
}

// trackingChannel is where RESP2 redirect targets get invalidations.
const trackingChannel = "__redis__:invalidate"

// active reports whether any client tracks.
func (t *trackingTable) active() bool { return t.clients.Load() > 0 }

// enable turns tracking on for c, or changes its options (CLIENT
// TRACKING ON has checked them): BCAST prefixes add to those c has.
func (s *Server) enableTracking(c *conn, opts tracker, prefixes []string) {
	t := &s.tracking
	c.ensureSub() // before any invalidator can see c
	t.mu.Lock()
	first := false
	if old := c.trk; old == nil {
		first = t.clients.Add(1) == 1
	} else {
		opts.prefixes = old.prefixes
	}
	if opts.bcast {
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		if t.prefixes == nil {
			t.prefixes = map[string]map[*conn]struct{}{}
		}
		for _, p := range prefixes {
			set := t.prefixes[p]
			if set == nil {
				set = map[*conn]struct{}{}
				t.prefixes[p] = set
			}
			if _, ok := set[c]; !ok {
				set[c] = struct{}{}
				opts.prefixes = append(opts.prefixes, p)
			}
		}
	}
	c.trk = &opts
	t.mu.Unlock()
	if first {
		s.turnExpiryWatch()
	}
}

// disableTracking turns c's tracking off: CLIENT TRACKING OFF, RESET and
// a closing connection.
func (s *Server) disableTracking(c *conn) {
	if c.trk == nil {
		return
	}
	t := &s.tracking
	t.mu.Lock()
	for _, p := range c.trk.prefixes {
		delete(t.prefixes[p], c)
		if len(t.prefixes[p]) == 0 {
			delete(t.prefixes, p)
		}
	}
	c.trk = nil
	t.mu.Unlock()
	if t.clients.Add(-1) == 0 {
		s.turnExpiryWatch()
	}
}

// turnExpiryWatch runs the expiry watch while expired keys must be
// announced: to keyspace notifications or to tracking clients. Never
// called holding the table's mutex: turning the watch on takes every
// stripe, which writers hold while they invalidate.
func (s *Server) turnExpiryWatch() {
	s.ks.expiries.turn(&s.ks, s.config().NotifyKeyspaceEvents.expiredOn() || s.tracking.active())
}

// clientByID returns the connected client with id, or nil.
func (s *Server) clientByID(id uint64) *conn {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	return s.clients[id]
}

// beforeTracked runs before each command of a tracking connection: a
// read-only command's keys are remembered first, so that a write
// committing while it reads invalidates them (a key remembered after the
// read could miss the write that made the read stale). The command then
// reads the newest state, not a pipelined view made earlier.
func (c *conn) beforeTracked(cmd *command, args [][]byte) {
	trk := c.trk
	if cmd.group == "scripting" && cmd.parent == nil {
		// EVAL_RO and FCALL_RO too: only a read inside counts.
		trk.script = &scriptCall{cmd, args}
		return
	}
	if trk.bcast || cmd.flags&flagReadonly == 0 {
		return
	}
	if trk.optin && !trk.caching || trk.optout && trk.caching {
		return
	}
	if trk.script != nil && c.inScript() {
		cmd, args = trk.script.cmd, trk.script.args
	}
	keys := commandKeys(cmd, args, c.aclKeys[:0])
	c.aclKeys = keys[:0]
	if len(keys) == 0 {
		return
	}
	c.closeView()
	t := &c.s.tracking
	t.mu.Lock()
	if t.keys == nil {
		t.keys = map[string]map[uint64]struct{}{}
	}
	for _, k := range keys {
		ids := t.keys[string(args[k.pos])]
		if ids == nil {
			ids = map[uint64]struct{}{}
			t.keys[string(args[k.pos])] = ids
		}
		if _, ok := ids[c.id]; !ok {
			ids[c.id] = struct{}{}
			t.items++
		}
	}
	c.s.limitTrackingLocked(nil)
	t.mu.Unlock()
}

// scriptCall is a script command and its arguments.
type scriptCall struct {
	cmd  *command
	args [][]byte
}

// afterTracked ends CLIENT CACHING's effect, which lasts one command (or
// one transaction), and a script's.
func (c *conn) afterTracked(cmd *command) {
	if c.trk != nil && c.trk.script != nil && c.trk.script.cmd == cmd {
		c.trk.script = nil
	}
	if c.trk != nil && c.trk.caching && cmd.name != "client|caching" && c.tx == nil && !c.inExec() {
		c.s.tracking.mu.Lock()
		c.trk.caching = false
		c.s.tracking.mu.Unlock()
	}
}

// limitTrackingLocked invalidates random keys until the table holds at
// most tracking-table-max-keys, sent as by from.
func (s *Server) limitTrackingLocked(from *conn) {
	t := &s.tracking
	max := s.config().TrackingTableMaxKeys
	if max <= 0 || len(t.keys) <= max {
		return
	}
	for key := range t.keys { // map order: a random pick, as Redis' is
		if len(t.keys) <= max {
			break
		}
		s.invalidateKeyLocked(from, key)
	}
}

// invalidateBatch announces the keys b wrote, which has just committed,
// as written by from (nil for the server's own writes: expiry).
func (s *Server) invalidateBatch(from *conn, b *lsmgo.Batch) {
	s.invalidate(from, func(yield func([]byte)) {
		b.ForEachKey(func(k []byte) {
			if _, key, ok := userKeyOf(k); ok {
				yield(key)
			}
		})
	})
}

// invalidateKeys announces that keys changed, written by from.
func (s *Server) invalidateKeys(from *conn, keys ...[]byte) {
	s.invalidate(from, func(yield func([]byte)) {
		for _, k := range keys {
			yield(k)
		}
	})
}

// invalidate announces the keys each yields: to the clients that track
// each, and to the BCAST clients of each prefix it has, all its keys in
// one message. Nothing is allocated for a key no one tracks.
func (s *Server) invalidate(from *conn, each func(yield func([]byte))) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	var bcast map[string][]string
	each(func(key []byte) {
		if _, ok := t.keys[string(key)]; ok {
			s.invalidateKeyLocked(from, string(key))
		}
		for p := range t.prefixes {
			if len(key) >= len(p) && string(key[:len(p)]) == p {
				if bcast == nil {
					bcast = map[string][]string{}
				}
				if !slices.Contains(bcast[p], string(key)) {
					bcast[p] = append(bcast[p], string(key))
				}
			}
		}
	})
	// In Redis' order, its radix trees': prefixes, then keys, sorted.
	for _, p := range slices.Sorted(maps.Keys(bcast)) {
		matched := bcast[p]
		slices.Sort(matched)
		for c := range t.prefixes[p] {
			if c.trk.noloop && c == from {
				continue
			}
			s.sendInvalidation(from, c, matched, false)
		}
	}
}

// invalidateKeyLocked sends the invalidation of key to the clients that
// may cache it, and forgets it.
func (s *Server) invalidateKeyLocked(from *conn, key string) {
	t := &s.tracking
	ids := t.keys[key]
	delete(t.keys, key)
	t.items -= len(ids)
	for id := range ids {
		c := s.clientByID(id)
		if c == nil || c.trk == nil || c.trk.bcast || c.trk.noloop && c == from {
			continue
		}
		s.sendInvalidation(from, c, []string{key}, false)
	}
}

// invalidateAll sends every tracking client the null invalidation of
// FLUSHDB and FLUSHALL, and empties the table, where clients that
// stopped tracking may have left keys.
func (s *Server) invalidateAll(from *conn) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active() {
		for _, c := range s.clientList() {
			if c.trk != nil {
				s.sendInvalidation(from, c, nil, true)
			}
		}
	}
	t.keys, t.items = nil, 0
}

// sendInvalidation sends c's invalidation of keys (or, with flush, the
// null of a flush), to c or to its redirect target, as Redis does: a
// gone target makes a RESP3 c hear "tracking-redir-broken", and a RESP2
// connection hears nothing unless it is a subscribed redirect target.
func (s *Server) sendInvalidation(from, c *conn, keys []string, flush bool) {
	target, proto := c, c.proto.Load()
	if id := c.trk.redirect; id != 0 {
		target = s.clientByID(id)
		if target == nil {
			c.trk.broken = true
			if proto == 3 {
				msg := []byte(">2\r\n$21\r\ntracking-redir-broken\r\n:")
				msg = append(strconv.AppendUint(msg, id, 10), "\r\n"...)
				c.push(from, msg, false, "")
			}
			return
		}
	}
	var msg []byte
	switch {
	case target.proto.Load() == 3:
		msg = append(msg, ">2\r\n$10\r\ninvalidate\r\n"...)
	case target != c && target.state.Load()&statePubsub != 0:
		msg = append(msg, "*3\r\n$7\r\nmessage\r\n$20\r\n"+trackingChannel+"\r\n"...)
	default:
		return
	}
	if flush {
		if proto == 3 {
			msg = append(msg, "_\r\n"...)
		} else {
			msg = append(msg, "$-1\r\n"...)
		}
	} else {
		bs := make([][]byte, len(keys))
		for i, k := range keys {
			bs[i] = []byte(k)
		}
		msg = resp.AppendCommand(msg, bs...)
	}
	target.push(from, msg, false, "")
}

// trackingStats are INFO's tracking figures.
func (s *Server) trackingStats() (keys, items, prefixes int) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.items, len(t.prefixes)
}

// limitTracking applies a lowered tracking-table-max-keys at once.
func (s *Server) limitTracking() {
	s.tracking.mu.Lock()
	s.limitTrackingLocked(nil)
	s.tracking.mu.Unlock()
}

// prefixCollision reports the first pair of overlapping prefixes among
// the new ones and those c has, as CLIENT TRACKING refuses them.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(p, h) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}
