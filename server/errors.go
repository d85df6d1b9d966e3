package server

import (
	"errors"

	"github.com/lsmgo-dev/lsmgo"
)

// redisError is an error whose text is the Redis error reply for it,
// code first ("ERR …", "WRONGTYPE …"). Helpers return one instead of
// replying; the handler passes it on and it is written once, as the
// command's reply, by replyErr.
type redisError string

func (e redisError) Error() string { return string(e) }

var (
	// errWrongType is Redis' reply to a command run on a key of another
	// type.
	errWrongType    = redisError("WRONGTYPE Operation against a key holding the wrong kind of value")
	errStringTooBig = redisError(msgStringTooBig)
)

// engineError turns an error into a Redis error reply: a redisError is
// its own text; a read-only engine gets MISCONF, which Redis uses when it
// cannot persist writes.
func engineError(err error) string {
	var re redisError
	switch {
	case errors.As(err, &re):
		return string(re)
	case errors.Is(err, lsmgo.ErrReadOnly):
		return "MISCONF Errors writing to disk; writes are refused until an operator runs LSMGO.RESUME (or restarts the server): " + err.Error()
	case errors.Is(err, lsmgo.ErrNoSpace):
		// Redis, too, answers MISCONF while it cannot persist; unlike
		// the read-only case this one heals once space is freed.
		return "MISCONF Disk full; writes resume by themselves once space is freed: " + err.Error()
	case errors.Is(err, lsmgo.ErrClosed):
		return "ERR server is shutting down"
	}
	return "ERR " + err.Error()
}
