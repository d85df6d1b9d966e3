package server

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// fuzzSkipped are the commands FuzzCommands never sends, and why: each
// ends the fuzzer's connection or server, or changes its mode, in a way
// that is not a bug.
var fuzzSkipped = map[string]string{
	"quit":           "closes the connection by design",
	"subscribe":      "subscribed mode: later commands are refused, not run",
	"psubscribe":     "subscribed mode, as SUBSCRIBE",
	"save":           "writes a whole snapshot: slow, and takes no number",
	"bgsave":         "as SAVE, in the background",
	testPanicCommand: "the test-only command that panics on purpose",
	"shutdown":       "stops the server by design",
	"monitor":        "monitor mode: the fuzzer's replies would interleave with fed commands",
	"replicaof":      "turns the server into a replica of the host its arguments name, refusing writes from then on",
	"slaveof":        "REPLICAOF's old name",
	"wait":           "waits out its timeout (ms, up to 2^63) while no replica acknowledges, by design",
	"client|pause":   "pauses every client for the fuzzed time (up to 2^63 ms), by design",
	"client|reply":   "OFF and SKIP silence the replies the fuzzer waits for, by design",
	"migrate":        "connects to the host its arguments name (a DNS lookup, or the fuzzed server itself, waited on for its timeout); TestMigrateRedis covers it",
	"config|set": "can shrink limits the fuzzer's own connection lives by (proto-max-bulk-len, " +
		"maxmemory-clients, timeout); its numbers go through parseBound, which config tests cover",
}

// fuzzTimeoutArg says where a blocking command's timeout is: its index
// among the arguments, negative counting from the end. FuzzCommands sets
// it to a short timeout, so that a blocking command never waits the 0
// (forever) an edge value would give it.
var fuzzTimeoutArg = map[string]int{
	"blpop": -1, "brpop": -1, "blmove": -1, "brpoplpush": -1, "bzpopmin": -1, "bzpopmax": -1,
	"blmpop": 1, "bzmpop": 1,
}

// fuzzRandomCount marks the random-pick commands: a negative count asks
// for that many picks with repeats, which Redis and lsmgo both honour
// literally, so -2^32 builds a reply of four billion elements. The fuzzer
// turns such counts into -3; the out-of-range ones (below -2^62) stay.
var fuzzRandomCount = map[string]bool{"srandmember": true, "hrandfield": true, "zrandmember": true}

// fuzzValues are the arguments FuzzCommands draws from: integer and float
// edges, strings at the limits, the keys the setup fills, and the option
// keywords that lead into the parsers behind them.
var fuzzValues = append(append([]string{
	"0", "1", "-1", "2", "3", "-2", "10", "0.01",
	"2147483647", "2147483648", "-2147483648", "-2147483649",
	"4294967295", "4294967296", "-4294967296",
	"9223372036854775806", "9223372036854775807", "-9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "-9223372036854775809", "18446744073709551615", "99999999999999999999999",
	"1e308", "-1e308", "1e309", "5e-324", "nan", "NaN", "inf", "-inf", "+inf", "(1", "(-inf", "[a", "(a", "-", "+",
	"", " ", "\x00", "01", "-0", "0x10", "1.5", strings.Repeat("x", 70_000),
	"k", "s", "n", "l", "set", "h", "z", "missing",
}, scanOptionWords...), "*", "a", "f")

var scanOptionWords = []string{
	"COUNT", "LIMIT", "MATCH", "TYPE", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "PERSIST", "GET", "NX", "XX", "GT", "LT", "CH",
	"INCR", "WITHSCORES", "WITHSCORE", "WITHVALUES", "BYSCORE", "BYLEX", "REV", "LEFT", "RIGHT", "BEFORE", "AFTER",
	"RANK", "MAXLEN", "MIN", "MAX", "WEIGHTS", "AGGREGATE", "SUM", "DB", "REPLACE", "NOVALUES",
}

// fuzzCommandNames lists every command and subcommand of the table as the
// words a client sends, so that a new command is fuzzed without being
// listed here.
func fuzzCommandNames() [][]string {
	var out [][]string
	for _, cmd := range allCommands {
		if cmd.subs != nil {
			continue // its subcommands are listed themselves
		}
		if _, skip := fuzzSkipped[cmd.name]; skip {
			continue
		}
		out = append(out, strings.Split(cmd.name, "|"))
	}
	return out
}

// FuzzCommands runs commands from the whole table with arguments drawn
// from edge values against a live server. Each input byte pair picks a
// command and an argument count, the next bytes its arguments. It fails
// on a handler panic (recovered and counted by the server), on a reply
// that is not valid RESP, and on a command not answered within the
// deadline.
func FuzzCommands(f *testing.F) {
	var errLog errorLog
	f.Add([]byte{0, 2, 48, 16})
	f.Add([]byte("\x10\x03\x30\x11\x31\x20\x02\x34\x12"))
	s := startServer(f, func(c *Config) {
		c.ProtoMaxBulkLen = 1 << 20 // keeps SETRANGE and APPEND results small
		c.HTTPAddr = ""
		c.LogOutput = &errLog
	})
	initial := s.cfg.Load()
	names := fuzzCommandNames()
	setup := [][]string{
		{"FLUSHALL"}, {"SET", "s", "hello"}, {"SET", "n", "10"}, {"RPUSH", "l", "a", "b", "c"},
		{"SADD", "set", "a", "b"}, {"HSET", "h", "f", "1", "g", "x"}, {"ZADD", "z", "1", "a", "2", "b"},
	}
	// Regression seeds by name: the committed corpus names commands by
	// their place in the table, which moves as commands are added.
	for _, seed := range [][]string{
		{"setrange", "k", "9223372036854775807", "a"},
		{"lrem", "l", "-9223372036854775808", "a"},
	} {
		f.Add(fuzzSeed(f, names, seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		panicsBefore := s.stats.panics.Load()
		var cmds [][]string
		for len(data) >= 2 && len(cmds) < 16 {
			name := names[int(data[0])%len(names)]
			nargs := int(data[1] % 8)
			data = data[2:]
			args := slices.Clone(name)
			for i := 0; i < nargs && len(data) > 0; i++ {
				args = append(args, fuzzValues[int(data[0])%len(fuzzValues)])
				data = data[1:]
			}
			if at, ok := fuzzTimeoutArg[name[0]]; ok {
				if at < 0 {
					at += len(args)
				}
				if at > 0 && at < len(args) {
					args[at] = "0.01"
				}
			}
			if fuzzRandomCount[name[0]] && len(args) > 2 {
				if n, ok := parseInt([]byte(args[2])); ok && n < -1000 && n >= -maxRandCount {
					args[2] = "-3"
				}
			}
			cmds = append(cmds, args)
		}
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		var out []byte
		for _, c := range append(slices.Clone(setup), cmds...) {
			out = resp.AppendCommand(out, toBytes(c)...)
		}
		if _, err := nc.Write(out); err != nil {
			t.Fatal(err)
		}
		// An error reply may quote a 70 KB argument ("ERR Unsupported
		// option …"), as Redis' does: valid RESP, longer than the 64 KiB a
		// server accepts for an inline request, so the reply reader's line
		// limit is raised past the longest fuzz value.
		rd := resp.NewReader(nc, resp.Limits{MaxBulkLen: 1 << 30, MaxMultibulkLen: 1 << 30, MaxInlineLen: 1 << 20})
		for i := range len(setup) + len(cmds) {
			if _, err := rd.ReadValue(); err != nil {
				cmd := []string{"(setup)"}
				if i >= len(setup) {
					cmd = cmds[i-len(setup)]
				}
				t.Fatalf("reply %d, to %q of %q: %v\n%d panics:\n%s", i, short(cmd), short2(cmds), err,
					s.stats.panics.Load()-panicsBefore, errLog.String())
			}
		}
		// Undo whatever CONFIG SET the input ran before the next input.
		s.cfgMu.Lock()
		s.cfg.Store(initial)
		s.cfgMu.Unlock()
		if n := s.stats.panics.Load() - panicsBefore; n > 0 {
			t.Fatalf("%d handler panics running %q:\n%s", n, short2(cmds), errLog.String())
		}
	})
}

// errorLog keeps the server's ERROR lines, where a recovered panic's
// stack is, for the failure message.
type errorLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *errorLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("level=ERROR")) {
		l.mu.Lock()
		l.buf.Write(p)
		l.mu.Unlock()
	}
	return len(p), nil
}

func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func toBytes(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// short abbreviates the huge string in a failure message.
func short(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if len(a) > 40 {
			out[i] = fmt.Sprintf("%.8s…(%d bytes)", a, len(a))
		}
	}
	return out
}

func short2(cmds [][]string) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = short(c)
	}
	return out
}

// fuzzSeed encodes one command, its name words followed by arguments
// taken from fuzzValues, in FuzzCommands' input format: the command's
// index in names, the argument count, each argument's index.
func fuzzSeed(t testing.TB, names [][]string, cmd []string) []byte {
	t.Helper()
	for i, name := range names {
		if len(cmd) < len(name) || !slices.Equal(name, cmd[:len(name)]) {
			continue
		}
		args := cmd[len(name):]
		out := []byte{byte(i), byte(len(args))}
		for _, a := range args {
			j := slices.Index(fuzzValues, a)
			if j < 0 || j > 255 || i > 255 || len(args) > 7 {
				t.Fatalf("fuzz seed %q cannot be encoded", cmd)
			}
			out = append(out, byte(j))
		}
		return out
	}
	t.Fatalf("fuzz seed %q: no such command", cmd)
	return nil
}
