package server

import (
	"strings"
	"testing"
)

// edgeInts are the integers where a sum, product or negation of
// user-supplied numbers overflows or changes width.
var edgeInts = []string{
	"0", "1", "-1", "2", "-2",
	"2147483647", "2147483648", "-2147483648", "-2147483649",
	"4294967295", "4294967296", "-4294967296",
	"9223372036854775806", "9223372036854775807", "-9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "-9223372036854775809", "18446744073709551615",
}

// edgeTemplates are commands with one integer argument, written "N", or
// two ("N" replaced by each pair drawn from edgeInts with the second from
// a short list). Each runs against a fresh dataset so that a template
// that writes cannot change the next one's input. Counts that Redis
// honours literally and would make it build a reply of billions of
// elements (SRANDMEMBER -2^32) are left out: both servers would answer
// the same, slowly.
var edgeTemplates = []struct {
	cmd  string
	norm norm
	// bigOK says the template is safe for every edge value; otherwise
	// only values that cannot make either server build a huge reply run.
	bigOK bool
	// oneDB marks a database index: Redis has 16, lsmgo one.
	oneDB bool
}{
	{"SETRANGE s N A", exact, true, false},
	{"SETRANGE s N ab", exact, true, false},
	{"SETRANGE s N ''", exact, true, false},
	{"GETRANGE s N -1", exact, true, false},
	{"GETRANGE s 0 N", exact, true, false},
	{"GETRANGE s N N", exact, true, false},
	{"SUBSTR s N 2", exact, true, false},
	{"INCRBY n N", exact, true, false},
	{"DECRBY n N", exact, true, false},
	{"INCRBY max N", exact, true, false},
	{"DECRBY min N", exact, true, false},
	{"HINCRBY h f N", exact, true, false},
	{"HINCRBY h max N", exact, true, false},
	{"EXPIRE s N", exact, true, false},
	{"PEXPIRE s N", exact, true, false},
	{"EXPIREAT s N", exact, true, false},
	{"PEXPIREAT s N", exact, true, false},
	{"SET k v EX N", exact, true, false},
	{"SET k v PX N", exact, true, false},
	{"SET k v EXAT N", exact, true, false},
	{"SET k v PXAT N", exact, true, false},
	{"GETEX s EX N", exact, true, false},
	{"GETEX s PX N", exact, true, false},
	{"GETEX s EXAT N", exact, true, false},
	{"GETEX s PXAT N", exact, true, false},
	{"SETEX k N v", exact, true, false},
	{"PSETEX k N v", exact, true, false},
	{"LRANGE l N -1", exact, true, false},
	{"LRANGE l 0 N", exact, true, false},
	{"LRANGE l N N", exact, true, false},
	{"LINDEX l N", exact, true, false},
	{"LSET l N x", exact, true, false},
	{"LTRIM l N -1", exact, true, false},
	{"LTRIM l 0 N", exact, true, false},
	{"LREM l N a", exact, true, false},
	{"LPOS l a RANK N", exact, true, false},
	{"LPOS l a COUNT N", exact, true, false},
	{"LPOS l a MAXLEN N", exact, true, false},
	{"LPOS l a RANK -1 COUNT N MAXLEN N", exact, true, false},
	{"LPOP l N", exact, true, false},
	{"RPOP l N", exact, true, false},
	{"LMPOP 1 l LEFT COUNT N", exact, true, false},
	{"LMPOP N l LEFT", exact, true, false},
	{"BLPOP l N", exact, true, false},
	{"BLMPOP N 1 l LEFT", exact, true, false},
	{"SPOP set N", shape, true, false},
	{"SRANDMEMBER set N", shape, false, false},
	{"HRANDFIELD h N", shape, false, false},
	{"HRANDFIELD h N WITHVALUES", shape, false, false},
	{"ZRANDMEMBER z N", shape, false, false},
	{"ZRANDMEMBER z N WITHSCORES", shape, false, false},
	{"SINTERCARD N set", exact, true, false},
	{"SINTERCARD 1 set LIMIT N", exact, true, false},
	{"ZINTERCARD 1 z LIMIT N", exact, true, false},
	{"SMISMEMBER set N", exact, true, false},
	{"ZRANGE z N -1", exact, true, false},
	{"ZRANGE z 0 N WITHSCORES", exact, true, false},
	{"ZRANGE z N N REV", exact, true, false},
	{"ZRANGE z -inf +inf BYSCORE LIMIT N 2", exact, true, false},
	{"ZRANGE z -inf +inf BYSCORE LIMIT 0 N", exact, true, false},
	{"ZRANGEBYSCORE z -inf +inf LIMIT N N", exact, true, false},
	{"ZRANGEBYLEX z - + LIMIT 1 N", exact, true, false},
	{"ZRANGESTORE d z N -1", exact, true, false},
	{"ZREVRANGE z N N", exact, true, false},
	{"ZREMRANGEBYRANK z N -1", exact, true, false},
	{"ZREMRANGEBYRANK z 0 N", exact, true, false},
	{"ZADD z N m", exact, true, false},
	{"ZINCRBY z N a", exact, true, false},
	{"ZCOUNT z N +inf", exact, true, false},
	{"ZPOPMIN z N", exact, true, false},
	{"ZPOPMAX z N", exact, true, false},
	{"ZMPOP 1 z MIN COUNT N", exact, true, false},
	{"ZMPOP N z MIN", exact, true, false},
	{"BZPOPMIN z N", exact, true, false},
	{"ZUNIONSTORE d N z", exact, true, false},
	{"ZUNION N z", exact, true, false},
	{"ZUNIONSTORE d 1 z WEIGHTS N", exact, true, false},
	{"SCAN N", shape, true, false},
	{"SCAN 0 COUNT N", shape, true, false},
	{"HSCAN h N", shape, true, false},
	{"SSCAN set N COUNT N", shape, true, false},
	{"ZSCAN z 0 COUNT N", shape, true, false},
	{"SELECT N", exact, true, true},
	{"COPY s s2 DB N", exact, true, true},
	{"SLOWLOG GET N", exact, true, false},
	{"APPEND s N", exact, true, false},
	{"SETNX N N", exact, true, false},
	{"MSETNX N N", exact, true, false},
}

// edgeSmall are the values that templates without bigOK get: no count
// that would ask for billions of random picks.
var edgeSmall = map[string]bool{"0": true, "1": true, "-1": true, "2": true, "-2": true,
	"-9223372036854775808": true, "9223372036854775807": true, "9223372036854775808": true,
	"-9223372036854775809": true, "18446744073709551615": true}

// TestRedisDiffIntegerEdges runs every integer-taking command with every
// edge integer against lsmgo and a real redis-server and compares the
// replies: no overflow may turn into a wrong answer, and none into a
// panic (the last command checks the server is still there).
func TestRedisDiffIntegerEdges(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		for _, d := range []*diffConn{ours, theirs} {
			// An empty slow log on both sides: SLOWLOG GET compares.
			d.do(t, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
			d.do(t, "SLOWLOG", "RESET")
		}
		setup := [][]string{
			{"FLUSHALL"},
			{"SET", "s", "hello"},
			{"SET", "n", "10"},
			{"SET", "max", "9223372036854775807"},
			{"SET", "min", "-9223372036854775808"},
			{"RPUSH", "l", "a", "b", "c", "a"},
			{"SADD", "set", "a", "b", "c"},
			{"HSET", "h", "f", "1", "g", "2", "max", "9223372036854775807"},
			{"ZADD", "z", "1", "a", "2", "b", "3", "c"},
		}
		compared := 0
		for _, tmpl := range edgeTemplates {
			for _, n := range edgeInts {
				if !tmpl.bigOK && !edgeSmall[n] {
					continue
				}
				if tmpl.oneDB && (n == "1" || n == "2") {
					continue // lsmgo has database 0 only (doc/server.md)
				}
				args := strings.Fields(strings.ReplaceAll(tmpl.cmd, "N", n))
				for i, a := range args {
					if a == "''" {
						args[i] = ""
					}
				}
				for _, d := range []*diffConn{ours, theirs} {
					for _, cmd := range setup {
						d.send(cmd)
					}
					d.send(args)
					d.send([]string{"PING"})
				}
				got, err := ours.flushRead(len(setup) + 2)
				if err != nil {
					t.Fatalf("%q: lsmgo: %v", args, err)
				}
				want, err := theirs.flushRead(len(setup) + 2)
				if err != nil {
					t.Fatalf("%q: redis: %v", args, err)
				}
				cmd := diffCmd{args: args, norm: tmpl.norm}
				if g, w := renderReply(got[len(setup)], cmd), renderReply(want[len(setup)], cmd); g != w {
					t.Errorf("RESP%d %q:\n lsmgo: %s\n redis: %s", proto, args, g, w)
				}
				compared++
			}
		}
		t.Logf("RESP%d: %d commands compared", proto, compared)
	}
}
