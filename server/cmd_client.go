package server

import (
	"io"

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
