package server

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Keyspace notifications on replicas (doc/replication.md, "Keyspace
// notifications"). Redis' replica publishes them because it runs its
// master's commands; lsmgo's applies engine batches, which do not say
// which command wrote them (an LPUSH and an RPUSH write alike), so the
// events cannot be derived on the replica: they travel in the stream
// (version 3). A replica with notify-keyspace-events set announces its
// classes on its stream (REPLCONF NOTIFY <flags>); while any replica
// wants some, the primary's commands record the events of those classes
// too (conn.notify), and once the write they describe has committed
// (conn.flushNotes) the events are kept here, in the order the primary
// publishes its own, each with the last sequence number of that write.
// Each stream sends an event record only after the batches up to that
// number, so the replica publishes it once the write is applied. No
// replica wanting events costs the primary one more atomic load per
// event a command fires, and nothing per commit.

// replEventsMax bounds the event records kept for the streams; a stream
// further behind than that loses the oldest (logged).
const replEventsMax = 8192

// replEvents holds the recent event records for the replica streams.
type replEvents struct {
	// wanted is the union of the classes the replicas announced.
	wanted atomic.Uint32

	mu      sync.Mutex
	recs    []eventRecord
	first   uint64 // the id of recs[0]; ids count every record kept
	watches map[chan struct{}]struct{}
}

// eventRecord is the events of one committed write, as the EVENTS frame
// the streams send.
type eventRecord struct {
	after uint64 // the last sequence number of the write
	frame []byte
}

// wantedFlags is what the replicas want published, 0 for nothing.
func (e *replEvents) wantedFlags() notifyFlags { return notifyFlags(e.wanted.Load()) }

// add keeps the events of a write that committed up to sequence number
// after, those of the classes the replicas want, as an EVENTS frame:
//
//	EVENTS <after> (<db> <class letter> <event> <key>)...
func (e *replEvents) add(after uint64, notes []keyEvent) {
	want := e.wantedFlags()
	n := 0
	for i := range notes {
		if notes[i].class&want != 0 {
			n++
		}
	}
	if n == 0 {
		return
	}
	frame := appendArrayHeader(nil, 2+4*n)
	frame = appendBulk(frame, []byte("EVENTS"))
	frame = appendBulk(frame, strconv.AppendUint(nil, after, 10))
	for i := range notes {
		ev := &notes[i]
		if ev.class&want == 0 {
			continue
		}
		class, event := replicaEvent(ev)
		frame = appendBulk(frame, strconv.AppendInt(nil, int64(ev.db), 10))
		frame = appendBulk(frame, []byte{class.letter()})
		frame = appendBulk(frame, []byte(event))
		frame = appendBulk(frame, ev.key)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recs = append(e.recs, eventRecord{after: after, frame: frame})
	if len(e.recs) > replEventsMax {
		drop := len(e.recs) - replEventsMax/2
		clear(e.recs[:drop])
		e.recs = append(e.recs[:0], e.recs[drop:]...)
		e.first += uint64(drop)
	}
	for ch := range e.watches {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// watch returns a channel that receives when a record is added.
func (e *replEvents) watch() chan struct{} {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watches == nil {
		e.watches = map[chan struct{}]struct{}{}
	}
	e.watches[ch] = struct{}{}
	return ch
}

func (e *replEvents) unwatch(ch chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.watches, ch)
}

// cursorFrom is where a stream that continues at sequence number from
// starts reading: after the newest records of writes it already has.
func (e *replEvents) cursorFrom(from uint64) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := len(e.recs)
	for i > 0 && e.recs[i-1].after >= from {
		i--
	}
	return e.first + uint64(i)
}

// read appends to dst the frames from the record at cursor on whose
// writes are at sequence numbers before next (sent), stopping at the
// first that is not, so that the order stays the primary's. It returns
// the new cursor and how many records the stream lost, which left the
// buffer before it read them.
func (e *replEvents) read(dst []byte, cursor, next uint64) ([]byte, uint64, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var lost uint64
	if cursor < e.first {
		lost, cursor = e.first-cursor, e.first
	}
	for i := cursor - e.first; i < uint64(len(e.recs)) && e.recs[i].after < next; i++ {
		dst = append(dst, e.recs[i].frame...)
		cursor++
	}
	return dst, cursor, lost
}

// recomputeWanted sets wanted to the union of the replicas' classes; the
// caller holds repl.mu.
func (r *replication) recomputeWanted() {
	var f notifyFlags
	for _, rs := range r.replicas {
		f |= notifyFlags(rs.notify.Load())
	}
	r.events.wanted.Store(uint32(f))
}

// setReplicaNotify records the classes a replica announced.
func (s *Server) setReplicaNotify(rs *replicaStream, f notifyFlags) {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	rs.notify.Store(uint32(f))
	s.repl.recomputeWanted()
}

// letter is the notify-keyspace-events letter of a single class.
func (f notifyFlags) letter() byte {
	for _, l := range notifyLetters {
		if l.flag == f {
			return l.letter
		}
	}
	return '?'
}

// replicaNotifyFlags is what a replica announces: its classes while it
// publishes any (K or E set), else nothing.
func (s *Server) replicaNotifyFlags() notifyFlags {
	f := s.config().NotifyKeyspaceEvents
	if f&(notifyKeyspace|notifyKeyevent) == 0 {
		return 0
	}
	return f
}

// announceNotify sends REPLCONF NOTIFY <flags> on the replica's stream
// when its notify-keyspace-events changed since it last did (sent, which
// starts at 0 for a new link); a version 3 primary only.
func (s *Server) announceNotify(nc net.Conn, sent *notifyFlags) error {
	f := s.replicaNotifyFlags()
	if f == *sent || s.repl.peerVersion.Load() < 3 {
		return nil
	}
	*sent = f
	_, err := nc.Write(resp.AppendCommand(nil, []byte("REPLCONF"), []byte("NOTIFY"), f.letters()))
	return err
}

// letters writes every class of f by its own letter, without A (whose
// String form hides n).
func (f notifyFlags) letters() []byte {
	var b []byte
	for _, l := range notifyLetters {
		if f&l.flag != 0 {
			b = append(b, l.letter)
		}
	}
	if f&notifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if f&notifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if f&notifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return b
}

// replicaEvent is the event a Redis replica publishes for one the
// primary's command fired, where Redis propagates that command rewritten
// (INCRBYFLOAT as SET … KEEPTTL, HINCRBYFLOAT as HSET): the replica runs
// the rewritten command and publishes its event.
func replicaEvent(ev *keyEvent) (notifyFlags, string) {
	switch ev.event {
	case "incrbyfloat":
		return notifyString, "set"
	case "hincrbyfloat":
		return notifyHash, "hset"
	}
	return ev.class, ev.event
}

// publishReplicatedEvents publishes, on a replica, the events of an
// EVENTS frame from the primary, whose write it has applied.
func (s *Server) publishReplicatedEvents(mc *conn, v resp.Value) error {
	args := v.Array
	if (len(args)-2)%4 != 0 {
		return fmt.Errorf("EVENTS frame of %d elements", len(args))
	}
	after, err := strconv.ParseUint(string(args[1].Str), 10, 64)
	if err != nil || after > s.db.LastSeq() {
		return fmt.Errorf("EVENTS frame after %q, ahead of this replica at %d", args[1].Str, s.db.LastSeq())
	}
	for i := 2; i < len(args); i += 4 {
		db, err := strconv.Atoi(string(args[i].Str))
		class, cerr := parseNotifyFlags(string(args[i+1].Str))
		if err != nil || cerr != nil || db < 0 || len(args[i+1].Str) != 1 {
			return fmt.Errorf("EVENTS frame: bad database %q or class %q", args[i].Str, args[i+1].Str)
		}
		s.publishKeyEvent(mc, class, string(args[i+2].Str), args[i+3].Str, db)
	}
	return nil
}

// isEvents reports whether v is an EVENTS frame of bulk strings.
func isEvents(v resp.Value) bool {
	if v.Type != '*' || len(v.Array) < 2 || string(v.Array[0].Str) != "EVENTS" {
		return false
	}
	for _, a := range v.Array {
		if a.Type != '$' {
			return false
		}
	}
	return true
}
