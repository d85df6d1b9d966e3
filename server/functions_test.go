package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const testLibrary = "#!lua name=mylib\n" +
	"redis.register_function('setter', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" +
	"redis.register_function{function_name='getter', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}\n" +
	"redis.register_function('failing', function(keys, args) return redis.call('incr', 'not-a-number') end)"

// TestFunctionsDiff sends FUNCTION and FCALL commands, errors included, to
// the server and to redis-server and compares the replies. Each FUNCTION
// LIST sees one library of one function, since Redis lists them in its
// hash tables' order.
func TestFunctionsDiff(t *testing.T) {
	diffCommands(t, []string{"FUNCTION", "FLUSH"}, functionDiffCmds, func(_ []string, reply string) string { return reply })
}

const oneFunction = "#!lua name=one\nredis.register_function{function_name='only', callback=function() return 1 end, flags={'no-writes', 'allow-stale'}, description='d'}"

var functionDiffCmds = [][]string{
	{"FUNCTION", "LOAD", oneFunction},
	{"FUNCTION", "LIST"}, {"FUNCTION", "LIST", "WITHCODE"}, {"FUNCTION", "LIST", "LIBRARYNAME", "o*"},
	{"FUNCTION", "LIST", "LIBRARYNAME", "x*"}, {"FUNCTION", "LIST", "LIBRARYNAME"}, {"FUNCTION", "LIST", "BAD"},
	{"FUNCTION", "STATS"},
	{"FUNCTION", "LOAD", testLibrary},
	{"FUNCTION", "LOAD", testLibrary},
	{"FUNCTION", "LOAD", "REPLACE", testLibrary},
	{"FCALL", "setter", "1", "k", "v"}, {"FCALL", "getter", "1", "k"}, {"FCALL_RO", "getter", "1", "k"},
	{"FCALL_RO", "setter", "1", "k", "v"}, {"FCALL", "failing", "0"}, {"FCALL", "nosuch", "0"},
	{"FCALL", "only", "0"}, {"FCALL", "setter", "5", "k"}, {"FCALL", "setter", "x"},
	{"FUNCTION", "LOAD", "return 1"},
	{"FUNCTION", "LOAD", "#!lua name=x\nreturn 1"},
	{"FUNCTION", "LOAD", "#!lua\nredis.register_function('z', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.call('ping')"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('only', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('bad name!', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=x\na = 1"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='z', callback=function() return 1 end, flags={'bad'}}"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('z', 'notfn')"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('z')"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='z', callback=function() return 1 end, bad=1}"},
	{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('z', function() return 1 end) redis.register_function('z', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=bad-name\nredis.register_function('z', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=x foo=bar\nredis.register_function('z', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!nolua name=x\nredis.register_function('z', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=x\nlocal t = redis.setresp redis.log(redis.LOG_NOTICE, 'loading') redis.register_function('z', function() return redis.REDIS_VERSION ~= nil end)"},
	{"FCALL", "z", "0"},
	{"FUNCTION", "DELETE", "x"}, {"FUNCTION", "DELETE", "x"},
	{"FUNCTION", "DELETE", "mylib"},
	{"FUNCTION", "FLUSH", "BAD"}, {"FUNCTION", "KILL"},
	{"FUNCTION", "RESTORE", "bad"}, {"FUNCTION", "RESTORE", "bad", "NOPE"},
	{"FUNCTION", "FLUSH"}, {"FUNCTION", "LIST"},
	{"FUNCTION", "STATS"},
}

// TestFunctionDumpRestoreBothWays moves libraries with FUNCTION DUMP and
// FUNCTION RESTORE from redis-server to the server and back, long code
// included (Redis compresses it with LZF), under each restore policy.
func TestFunctionDumpRestoreBothWays(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	long := "#!lua name=long\n" + strings.Repeat("-- a comment that repeats, for LZF\n", 50) +
		"redis.register_function('long', function() return 'long' end)"
	theirs.do(t, "FUNCTION", "LOAD", testLibrary)
	theirs.do(t, "FUNCTION", "LOAD", long)
	move := func(from, to *diffConn, policy ...string) string {
		from.send([]string{"FUNCTION", "DUMP"})
		dump, err := from.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		to.send(append([]string{"FUNCTION", "RESTORE", string(dump[0].Str)}, policy...))
		got, err := to.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		return render(got[0], exact)
	}
	eq(t, "Redis to lsmgo", move(theirs, ours), `+"OK"`)
	// Both libraries clash; which one Redis names depends on its hash
	// table's order.
	theirsAgain, oursAgain := move(theirs, theirs), move(theirs, ours)
	for _, reply := range []string{theirsAgain, oursAgain} {
		if reply != "-ERR Library long already exists" && reply != "-ERR Library mylib already exists" {
			t.Errorf("RESTORE APPEND of clashing libraries: Redis %q, lsmgo %q", theirsAgain, oursAgain)
		}
	}
	eq(t, "Redis to lsmgo REPLACE", move(theirs, ours, "REPLACE"), `+"OK"`)
	ours.send([]string{"FCALL", "long", "0"})
	got, _ := ours.flushRead(1)
	eq(t, "FCALL long", render(got[0], exact), `$"long"`)
	theirs.do(t, "FUNCTION", "FLUSH")
	eq(t, "lsmgo to Redis", move(ours, theirs), `+"OK"`)
	theirs.send([]string{"FCALL", "long", "0"})
	got, _ = theirs.flushRead(1)
	eq(t, "FCALL long on Redis", render(got[0], exact), `$"long"`)
	eq(t, "lsmgo to Redis FLUSH", move(ours, theirs, "FLUSH"), `+"OK"`)
}

// TestFunctionsSurviveRestart loads a library, restarts the server on the
// same directory, and calls it; FLUSHALL leaves it, FUNCTION FLUSH does
// not, across a restart too.
func TestFunctionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	restart := func() *Server { return startServer(t, func(c *Config) { c.Dir = dir }) }
	s := restart()
	c := newClient(t, s, 2, nil)
	eq(t, "FUNCTION LOAD", c.FunctionLoad(ctx, testLibrary).Val(), "mylib")
	eq(t, "FLUSHALL", c.FlushAll(ctx).Err(), nil)
	shutdown(t, s)

	s = restart()
	c = newClient(t, s, 2, nil)
	eq(t, "FCALL after restart", c.FCall(ctx, "setter", []string{"k"}, "v").Val(), "OK")
	eq(t, "FCALL_RO after restart", c.FCallRO(ctx, "getter", []string{"k"}).Val(), "v")
	eq(t, "FUNCTION FLUSH", c.FunctionFlush(ctx).Err(), nil)
	shutdown(t, s)

	s = restart()
	c = newClient(t, s, 2, nil)
	eq(t, "libraries after FUNCTION FLUSH and restart", len(c.FunctionList(ctx, redis.FunctionListQuery{}).Val()), 0)
}

func shutdown(t *testing.T, s *Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFunctionKill runs a looping function: FUNCTION STATS shows it,
// SCRIPT KILL refuses to stop a function, FUNCTION KILL stops it.
func TestFunctionKill(t *testing.T) {
	s := startServer(t, func(c *Config) { c.BusyReplyThreshold = 50 * time.Millisecond })
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	other := newClient(t, s, 3, nil)
	eq(t, "FUNCTION LOAD", c.FunctionLoad(ctx, "#!lua name=loop\nredis.register_function('spin', function() while true do end end)").Err(), nil)
	done := make(chan error, 1)
	go func() { done <- c.FCall(ctx, "spin", nil).Err() }()
	waitFor(t, "BUSY", func() bool {
		err := other.Get(ctx, "x").Err()
		return err != nil && err.Error() == msgBusyFunction
	})
	stats, err := other.Do(ctx, "FUNCTION", "STATS").Result()
	if err != nil {
		t.Fatal(err)
	}
	running := stats.(map[any]any)["running_script"].(map[any]any)
	eq(t, "running function", running["name"], "spin")
	eq(t, "its command", running["command"], []any{"fcall", "spin", "0"})
	eq(t, "SCRIPT KILL of a function", other.ScriptKill(ctx).Err().Error(), msgBusyFunction)
	eq(t, "FUNCTION KILL", other.FunctionKill(ctx).Err(), nil)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "Script killed by user") {
		t.Fatalf("killed function answered %v", err)
	}
	eq(t, "after", other.Ping(ctx).Err(), nil)
}
