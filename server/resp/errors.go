package resp

import "errors"

// ProtocolError reports input that violates RESP. Msg is the complete text
// Redis 7 sends for the same fault (for example "Protocol error: invalid bulk
// length"); a server replies with "-ERR " + Msg and then closes the
// connection, because the stream can no longer be framed reliably.
type ProtocolError struct {
	Msg string
}

// Error returns Msg.
func (e *ProtocolError) Error() string { return e.Msg }

// The request-side texts are Redis 7's, byte for byte; clients and test
// suites match on them.
const (
	msgInvalidMultibulkLen = "Protocol error: invalid multibulk length"
	msgInvalidBulkLen      = "Protocol error: invalid bulk length"
	msgUnauthMultibulkLen  = "Protocol error: unauthenticated multibulk length"
	msgUnauthBulkLen       = "Protocol error: unauthenticated bulk length"
	msgTooBigInline        = "Protocol error: too big inline request"
	msgTooBigMbulkCount    = "Protocol error: too big mbulk count string"
	msgTooBigBulkCount     = "Protocol error: too big bulk count string"
	msgUnbalancedQuotes    = "Protocol error: unbalanced quotes in request"

	// Reply-side texts have no Redis counterpart (Redis never parses
	// replies from untrusted peers), so they follow the same style.
	msgInvalidReplyLine    = "Protocol error: invalid reply line terminator"
	msgInvalidBulkTerm     = "Protocol error: invalid bulk payload terminator"
	msgInvalidInteger      = "Protocol error: invalid integer"
	msgInvalidDouble       = "Protocol error: invalid double"
	msgInvalidBoolean      = "Protocol error: invalid boolean"
	msgInvalidVerbatim     = "Protocol error: invalid verbatim string"
	msgTooBigReplyLine     = "Protocol error: too big reply line"
	msgReplyNestingTooDeep = "Protocol error: reply nesting too deep"
)

// expectedDollar builds Redis' "expected '$', got 'c'" message. Redis prints
// the raw byte but its error path turns CR and LF into spaces so the reply
// stays one line; doing the same here keeps Error() identical to what
// redis-server puts on the wire.
func expectedDollar(c byte) *ProtocolError {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{Msg: "Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

// unknownReplyType reports a reply whose first byte is no RESP2/RESP3 type.
func unknownReplyType(c byte) *ProtocolError {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{Msg: "Protocol error: unknown reply type '" + string([]byte{c}) + "'"}
}

// errBadRead reports an io.Reader that returned an impossible count.
var errBadRead = errors.New("resp: reader returned invalid count")

// errClosed is returned by every read after Close.
var errClosed = errors.New("resp: reader closed")
