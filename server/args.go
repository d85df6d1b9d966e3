package server

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// parseInt parses a decimal int64 as Redis' string2ll does, which is what
// decides "value is not an integer or out of range": an optional '-', no
// '+', no spaces, no leading zeros, no "-0", at most 20 bytes.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || digits[0] == '0' && (len(digits) > 1 || len(b) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// parseFloat parses a number as Redis' string2ld does for INCRBYFLOAT: no
// surrounding spaces, and not NaN. Infinity parses; the caller rejects an
// infinite result.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5*1024 || isSpaceByte(b[0]) || isSpaceByte(b[len(b)-1]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// is reports whether arg equals the upper-case option name opt, ignoring
// case as Redis does for every option keyword.
func is(arg []byte, opt string) bool {
	if len(arg) != len(opt) {
		return false
	}
	for i := range arg {
		c := arg[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != opt[i] {
			return false
		}
	}
	return true
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func toUpper(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// timeArg says how a command's time argument, or its reply, counts:
// seconds or milliseconds, from now or from the Unix epoch.
type timeArg struct{ seconds, relative bool }

// The four ways Redis commands count time: EX/EXPIRE/TTL, PX/PEXPIRE/PTTL,
// EXAT/EXPIREAT/EXPIRETIME and PXAT/PEXPIREAT/PEXPIRETIME.
var (
	inSeconds = timeArg{seconds: true, relative: true}
	inMillis  = timeArg{relative: true}
	atSeconds = timeArg{seconds: true}
	atMillis  = timeArg{}
)

// parseExpireTime turns an EX/PX/EXAT/PXAT value into an absolute time
// with Redis' checks: an integer, positive, and no overflow on the way to
// absolute milliseconds.
func parseExpireTime(cmd *command, arg []byte, u timeArg) (time.Time, error) {
	seconds, relative := u.seconds, u.relative
	n, ok := parseInt(arg)
	if !ok {
		return time.Time{}, redisError(msgNotInteger)
	}
	if n <= 0 || seconds && n > math.MaxInt64/1000 {
		return time.Time{}, redisError(invalidExpire(cmd))
	}
	if seconds {
		n *= 1000
	}
	if relative {
		now := time.Now().UnixMilli()
		if n > math.MaxInt64-now {
			return time.Time{}, redisError(invalidExpire(cmd))
		}
		n += now
	}
	return time.UnixMilli(n), nil
}

// distinct calls fn once per distinct key, in argument order.
func distinct(keys [][]byte, fn func(key []byte)) {
	if len(keys) <= 8 {
		for i, k := range keys {
			seen := false
			for _, prev := range keys[:i] {
				seen = seen || bytes.Equal(prev, k)
			}
			if !seen {
				fn(k)
			}
		}
		return
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[string(k)]; !dup {
			seen[string(k)] = struct{}{}
			fn(k)
		}
	}
}

// listRange clamps Redis' start and end indexes (negative ones count from
// the end) to the list of n elements; empty is true when nothing is left.
func listRange(start, end, n int64) (from, to int64, empty bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	if start > end || start >= n {
		return 0, 0, true
	}
	return start, min(end, n-1), false
}

// parseDB reads a database index below databases, refusing any other
// with Redis' error: a value outside a C int first, as Redis reads the
// index into one.
func parseDB(arg []byte, databases int) (int, error) {
	db, ok := parseInt(arg)
	switch {
	case !ok:
		return 0, redisError(msgNotInteger)
	case db < math.MinInt32 || db > math.MaxInt32:
		return 0, redisError("ERR value is out of range, value must between -2147483648 and 2147483647")
	case db < 0 || db >= int64(databases):
		return 0, redisError(msgDBRange)
	}
	return int(db), nil
}

const msgDBRange = "ERR DB index is out of range"
