package server

import (
	"io"
	"strconv"
	"strings"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// CLIENT subcommands that change how the server treats a connection:
// REPLY silences replies, NO-EVICT and NO-TOUCH set flags that CLIENT
// LIST shows.

// replyMode is CLIENT REPLY's state.
type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	// replySkipNext is set by CLIENT REPLY SKIP, whose own reply is
	// skipped; it turns into replySkip for the command after it.
	replySkipNext
	replySkip
)

// muteReplies makes the command about to run write its replies nowhere
// when CLIENT REPLY says so, and returns the mode it ran under, for
// unmuteReplies after it. Pub/Sub frames still reach the client
// (pushOut), as in Redis.
func (c *conn) muteReplies() replyMode {
	mode := c.replies
	if mode == replyOff || mode == replySkip {
		c.unmuted = c.wr
		c.wr = resp.NewWriter(io.Discard)
		c.wr.SetProtocol(c.unmuted.Protocol())
	}
	return mode
}

// unmuteReplies restores the writer muteReplies took away and moves
// CLIENT REPLY SKIP on: set by this command, it silences the next one;
// having silenced this one, it is over.
func (c *conn) unmuteReplies(mode replyMode) {
	if c.unmuted != nil {
		proto := c.wr.Protocol() // a HELLO may have changed it
		c.wr, c.unmuted = c.unmuted, nil
		c.wr.SetProtocol(proto)
	}
	switch {
	case c.replies == replySkipNext:
		c.replies = replySkip
	case mode == replySkip && c.replies == replySkip:
		c.replies = replyOn
	}
}

// pushOut is the writer of Pub/Sub frames, which CLIENT REPLY OFF and
// SKIP do not silence.
func (c *conn) pushOut() *resp.Writer {
	if c.unmuted != nil {
		return c.unmuted
	}
	return c.wr
}

func cmdClientReply(c *conn, _ *command, args [][]byte) error {
	switch {
	case is(args[2], "ON"):
		c.replies = replyOn
		c.pushOut().SimpleString("OK")
	case is(args[2], "OFF"):
		c.replies = replyOff
	case is(args[2], "SKIP"):
		if c.replies != replyOff {
			c.replies = replySkipNext
		}
	default:
		return redisError(msgSyntax)
	}
	return nil
}

// Connection states other goroutines read, for CLIENT LIST's flags and
// CLIENT KILL's filters (conn.state).
const (
	stateMulti uint32 = 1 << iota
	stateBlocked
	statePubsub
	stateNoEvict
	stateNoTouch
	stateReplica // a replica's LSMSYNC stream
	stateMaster  // a replica's link to its primary (replapply.go)
	stateMonitor
)

// setState turns bits of the connection's state on or off.
func (c *conn) setState(bits uint32, on bool) {
	if on {
		c.state.Or(bits)
	} else {
		c.state.And(^bits)
	}
}

// flagLetters writes the flags field of CLIENT LIST, in Redis' order:
// tracking holds the tracking letters (trackingFields), dirty says a
// watched key changed.
func flagLetters(state uint32, tracking string, dirty bool) string {
	var b []byte
	letter := func(on bool, l byte) {
		if on {
			b = append(b, l)
		}
	}
	letter(state&stateMonitor != 0, 'O')
	letter(state&stateReplica != 0, 'S')
	letter(state&stateMaster != 0, 'M')
	letter(state&statePubsub != 0, 'P')
	letter(state&stateMulti != 0, 'x')
	letter(state&stateBlocked != 0, 'b')
	b = append(b, tracking...)
	letter(dirty, 'd')
	letter(state&stateNoEvict != 0, 'e')
	letter(state&stateNoTouch != 0, 'T')
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// onOff returns the handler of CLIENT NO-EVICT or NO-TOUCH, which set
// bit. lsmgo evicts no keys and keeps no access times, so the flags
// change only what CLIENT LIST shows; maxmemory-clients exempts no one.
func onOff(bit uint32) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		switch {
		case is(args[2], "ON"):
			c.setState(bit, true)
		case is(args[2], "OFF"):
			c.setState(bit, false)
		default:
			return redisError(msgSyntax)
		}
		c.ok()
		return nil
	}
}

// killFilter is CLIENT KILL's filters.
type killFilter struct {
	id          uint64
	addr, laddr string
	typ         string // "", or a client class (clientClass)
	skipMe      bool
}

func (f *killFilter) matches(c, self *conn) bool {
	switch {
	case f.skipMe && c == self,
		f.id != 0 && c.id != f.id,
		f.addr != "" && c.raddr.String() != f.addr,
		f.laddr != "" && c.laddr.String() != f.laddr:
		return false
	}
	return f.typ == "" || f.typ == c.clientClass()
}

// clientClass is the class of client CLIENT KILL and CLIENT LIST's TYPE
// filter name: "normal", "pubsub", "replica" or "master".
func (c *conn) clientClass() string {
	state := c.state.Load()
	switch {
	case state&stateMaster != 0:
		return "master"
	case state&stateReplica != 0:
		return "replica"
	case state&statePubsub != 0:
		return "pubsub"
	}
	return "normal"
}

// parseClientClass checks a TYPE filter's class; "slave" is "replica".
func parseClientClass(v []byte) (string, error) {
	switch t := strings.ToLower(string(v)); t {
	case "normal", "pubsub", "master", "replica":
		return t, nil
	case "slave":
		return "replica", nil
	}
	return "", redisError("ERR Unknown client type '" + string(v) + "'")
}

// cmdClientKill implements CLIENT KILL addr:port and CLIENT KILL with
// the filters ID, ADDR, LADDR, USER, TYPE and SKIPME. A killed client's
// connection closes; the client issuing the command, if it kills itself,
// gets its reply first.
func cmdClientKill(c *conn, _ *command, args [][]byte) error {
	f := killFilter{skipMe: true}
	old := len(args) == 3
	if old {
		f.addr, f.skipMe = string(args[2]), false
	} else {
		if len(args)%2 != 0 {
			return redisError(msgSyntax)
		}
		for i := 2; i < len(args); i += 2 {
			v := string(args[i+1])
			switch {
			case is(args[i], "ID"):
				id, err := strconv.ParseUint(v, 10, 64)
				if err != nil || id == 0 {
					return redisError("ERR client-id should be greater than 0")
				}
				f.id = id
			case is(args[i], "TYPE"):
				t, err := parseClientClass(args[i+1])
				if err != nil {
					return err
				}
				f.typ = t
			case is(args[i], "USER"):
				if v != "default" {
					return redisError("ERR No such user '" + v + "'")
				}
			case is(args[i], "ADDR"):
				f.addr = v
			case is(args[i], "LADDR"):
				f.laddr = v
			case is(args[i], "SKIPME"):
				switch {
				case is(args[i+1], "YES"):
					f.skipMe = true
				case is(args[i+1], "NO"):
					f.skipMe = false
				default:
					return redisError(msgSyntax)
				}
			default:
				return redisError(msgSyntax)
			}
		}
	}
	killed := 0
	for _, o := range c.s.listedClients() {
		if !f.matches(o, c) {
			continue
		}
		killed++
		if o == c {
			c.quit = true // after its reply
		} else {
			o.closeSocket()
		}
	}
	switch {
	case !old:
		c.wr.Int(int64(killed))
	case killed == 0:
		return redisError("ERR No such client")
	default:
		c.ok()
	}
	return nil
}
