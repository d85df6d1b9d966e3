package server

import (
	"bytes"
	"strconv"
)

// Keyspace notifications (doc/server.md, "Keyspace notifications"): with
// notify-keyspace-events set, every change a command makes to a key is
// published through the Pub/Sub hub as Redis does it, on
//
//	__keyspace@<db>__:<key>     message: the event name   (flag K)
//	__keyevent@<db>__:<event>   message: the key          (flag E)
//
// for the classes of events the flags select.
//
// The API, for every command that writes: once the command's write is in
// c.commit's hands (c.commit returned nil), it calls
//
//	c.notify(class, event, key)
//
// once per event, in Redis' order, with Redis' event name and class
// (notifyGeneric for del, expire, rename_from …, notifyString for set,
// incrby …, notifyList, notifySet, notifyHash, notifyZSet, notifyStream;
// notifyNew for "new", through c.notifyNew, before the type's event when
// the command created the key). notify copies the key and costs one
// atomic load when notifications are off. The events wait on the
// connection and leave only once the write they describe has committed:
// at the end of the command, or inside MULTI/EXEC and scripts after
// EXEC's or the script's batch, or for pipelined writes after the
// pending batch (pipeline.go). A commit that fails drops them, so no
// event announces a write that did not happen, and the events of one
// connection leave in the order its commands ran. The database number is
// the connection's (dbIndex). "expired" is published by the expiry
// watcher (expiry_events.go), not by commands.

// notifyFlags are notify-keyspace-events' classes, one bit per letter.
type notifyFlags uint16

const (
	notifyKeyspace notifyFlags = 1 << iota // K
	notifyKeyevent                         // E
	notifyGeneric                          // g
	notifyString                           // $
	notifyList                             // l
	notifySet                              // s
	notifyHash                             // h
	notifyZSet                             // z
	notifyExpired                          // x
	notifyEvicted                          // e
	notifyStream                           // t
	notifyKeyMiss                          // m
	notifyModule                           // d
	notifyNew                              // n

	// notifyAll is what the letter A stands for: neither key misses nor
	// new keys, as in Redis.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash |
		notifyZSet | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// notifyLetters maps each letter to its class, in the order Redis
// writes them back (CONFIG GET).
var notifyLetters = []struct {
	letter byte
	flag   notifyFlags
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet},
	{'h', notifyHash}, {'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted},
	{'t', notifyStream}, {'d', notifyModule}, {'n', notifyNew},
}

// errNotifyClass is Redis' error for a letter it does not know, worded
// as Redis words it (capital, full stop), which clients may match.
var errNotifyClass error = notifyClassError{}

type notifyClassError struct{}

func (notifyClassError) Error() string {
	return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
}

// parseNotifyFlags parses notify-keyspace-events' letters.
func parseNotifyFlags(v string) (notifyFlags, error) {
	var f notifyFlags
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case 'A':
			f |= notifyAll
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 'm':
			f |= notifyKeyMiss
		default:
			j := 0
			for j < len(notifyLetters) && notifyLetters[j].letter != c {
				j++
			}
			if j == len(notifyLetters) {
				return 0, errNotifyClass
			}
			f |= notifyLetters[j].flag
		}
	}
	return f, nil
}

// String writes f as Redis' CONFIG GET does: A for all the classes it
// stands for (which hides n, as in Redis), else the class letters, then
// K, E and m.
func (f notifyFlags) String() string {
	var b []byte
	if f&notifyAll == notifyAll {
		b = append(b, 'A')
	} else {
		for _, l := range notifyLetters {
			if f&l.flag != 0 {
				b = append(b, l.letter)
			}
		}
	}
	for _, l := range []struct {
		letter byte
		flag   notifyFlags
	}{{'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss}} {
		if f&l.flag != 0 {
			b = append(b, l.letter)
		}
	}
	return string(b)
}

func notifySetting() *setting {
	return &setting{name: "notify-keyspace-events", live: true,
		usage: "keyspace events published through Pub/Sub: Redis' class letters K E g $ l s h z x e t m d n A (empty: none)",
		get:   func(c *Config) string { return c.NotifyKeyspaceEvents.String() },
		set: func(c *Config, v string) error {
			f, err := parseNotifyFlags(v)
			if err == nil {
				c.NotifyKeyspaceEvents = f
			}
			return err
		}}
}

// keyEvent is one event waiting on its connection for its write to
// commit.
type keyEvent struct {
	class notifyFlags
	event string
	key   []byte
	db    int
}

// notifying reports whether events of class are published now, here or
// on a replica (replnotify.go).
func (s *Server) notifying(class notifyFlags) bool {
	f := s.config().NotifyKeyspaceEvents | s.repl.events.wantedFlags()
	return f&class != 0 && f&(notifyKeyspace|notifyKeyevent) != 0
}

// notify records that the running command's write, which it has handed
// to c.commit, fired event of class on key. See the API above.
func (c *conn) notify(class notifyFlags, event string, key []byte) {
	c.notifyIn(c.dbIndex(), class, event, key)
}

// notifyIn is notify for a key in database db, which COPY … DB and MOVE
// write to.
func (c *conn) notifyIn(db int, class notifyFlags, event string, key []byte) {
	if !c.s.notifying(class) {
		return
	}
	c.notes = append(c.notes, keyEvent{class: class, event: event, key: bytes.Clone(key), db: db})
}

// notifyNew records the "new" event of a key the running command
// created, which Redis fires before the command's own event.
func (c *conn) notifyNew(key []byte) { c.notify(notifyNew, "new", key) }

// dbIndex is the database the connection works in: its events name it.
// SELECT makes it the selected one.
func (c *conn) dbIndex() int { return c.db }

// flushNotes publishes the events whose writes have committed: all that
// wait, unless a transaction or script is still collecting its batch or
// pipelined writes are pending, whose commit publishes them.
func (c *conn) flushNotes() {
	if len(c.notes) == 0 || c.exec != nil || len(c.pending.cmds) > 0 {
		return
	}
	if c.s.repl.events.wantedFlags() != 0 {
		after := c.notesSeq
		if after == 0 {
			// Events of a command that committed nothing of its own.
			after = c.s.db.LastSeq()
		}
		c.s.repl.events.add(after, c.notes)
	}
	c.notesSeq = 0
	for i := range c.notes {
		n := &c.notes[i]
		c.s.publishKeyEvent(c, n.class, n.event, n.key, n.db)
		n.key = nil
	}
	c.notes = c.notes[:0]
}

// dropNotes forgets the events waiting on the connection: the write they
// describe failed to commit.
func (c *conn) dropNotes() {
	clear(c.notes)
	c.notes = c.notes[:0]
	c.notesSeq = 0
}

// publishKeyEvent publishes one event on the keyspace and keyevent
// channels notify-keyspace-events selects, sent by from (nil for the
// server's own events, such as expiry).
// publishExpired announces that the key at engineKey expired, in the
// database its namespace belongs to (none when FLUSHDB let it go).
func (s *Server) publishExpired(engineKey []byte) {
	ns, key, ok := userKeyOf(engineKey)
	if !ok {
		return
	}
	if db := s.ks.dbs.Load().dbOf(ns); db >= 0 {
		s.publishKeyEvent(nil, notifyExpired, "expired", key, db)
	}
	if s.tracking.active() {
		s.invalidateKeys(nil, key)
	}
}

func (s *Server) publishKeyEvent(from *conn, class notifyFlags, event string, key []byte, db int) {
	f := s.config().NotifyKeyspaceEvents
	if f&class == 0 {
		return
	}
	prefix := func(kind string) []byte {
		b := append([]byte("__"), kind...)
		b = append(b, '@')
		b = strconv.AppendInt(b, int64(db), 10)
		return append(b, "__:"...)
	}
	if f&notifyKeyspace != 0 {
		s.pubsub.publish(from, append(prefix("keyspace"), key...), []byte(event))
	}
	if f&notifyKeyevent != 0 {
		s.pubsub.publish(from, append(prefix("keyevent"), event...), key)
	}
}

// notifySet fires the events of a string command that stored a whole
// value: "new" when it created the key, "set", and "expire" when it gave
// the value an expiry.
func (c *conn) notifySet(key []byte, created, expires bool) {
	if created {
		c.notifyNew(key)
	}
	c.notify(notifyString, "set", key)
	if expires {
		c.notify(notifyGeneric, "expire", key)
	}
}

// creates reports whether a write to key would create it, for its "new"
// event; it reads only while "new" events are on.
func (c *conn) creates(key []byte) (bool, error) {
	if !c.s.notifying(notifyNew) {
		return false, nil
	}
	_, exists, err := c.getEntry(key)
	return !exists, err
}

// notifyEdit fires the events of a write to a collection of type typ at
// key: "new" first when it created the key, then event, of typ's class,
// then "del" when it emptied the collection, which deletes it.
func (c *conn) notifyEdit(typ byte, event string, key []byte, created, emptied bool) {
	if created {
		c.notifyNew(key)
	}
	c.notify(typeClass(typ), event, key)
	if emptied {
		c.notify(notifyGeneric, "del", key)
	}
}

// typeClass is the class of the events of a type's commands.
func typeClass(typ byte) notifyFlags {
	switch typ {
	case typeString:
		return notifyString
	case typeList:
		return notifyList
	case typeSet:
		return notifySet
	case typeHash:
		return notifyHash
	case typeZSet:
		return notifyZSet
	}
	return notifyGeneric
}

// expiredOn reports whether f publishes "expired" events, which the
// expiry watch then has to follow (expiry_events.go).
func (f notifyFlags) expiredOn() bool {
	return f&notifyExpired != 0 && f&(notifyKeyspace|notifyKeyevent) != 0
}
