package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestScriptingDiff sends EVAL, EVALSHA, EVAL_RO and SCRIPT commands,
// errors included, to the server and to redis-server and compares the
// replies.
func TestScriptingDiff(t *testing.T) {
	diffCommands(t, []string{"SCRIPT", "FLUSH"}, scriptingDiffCmds, func(cmd []string, reply string) string {
		if len(cmd) > 1 && cmd[0] == "EVAL" && cmd[1] == "syntax error here" || cmd[0] == "SCRIPT" && cmd[len(cmd)-1] == "syntax error" {
			// gopher-lua's parser words its errors its own way
			// (doc/server.md): the line must match.
			return cutAfter(reply, "user_script:1:")
		}
		return reply
	})
}

// diffCommands runs cmds in both protocols on the server and on
// redis-server, each side first flushed (FLUSHALL and flush), and
// compares each pair of replies after cut.
func diffCommands(t *testing.T, flush []string, cmds [][]string, cut func(cmd []string, reply string) string) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		for _, d := range []*diffConn{ours, theirs} {
			d.do(t, "FLUSHALL")
			d.do(t, flush...)
		}
		for _, cmd := range cmds {
			var replies []string
			for _, d := range []*diffConn{ours, theirs} {
				d.send(cmd)
				vs, err := d.flushRead(1)
				if err != nil {
					t.Fatal(err)
				}
				replies = append(replies, cut(cmd, render(vs[0], exact)))
			}
			if replies[0] != replies[1] {
				t.Errorf("resp%d %q:\n got %s\nwant %s", proto, cmd, replies[0], replies[1])
			}
		}
	}
}

var scriptingDiffCmds = [][]string{
	{"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
	{"EVALSHA", "a0c38691e7b8e7cd6e04b4b0e5b0e6c3c8a4b9b0", "0"},
	{"SCRIPT", "LOAD", "return {KEYS[1], ARGV[1]}"},
	{"EVALSHA", "4e6d8fc8bb01276962cce5371fa795a7763657ae", "1", "a", "b"},
	{"EVALSHA", "4E6D8FC8BB01276962CCE5371FA795A7763657AE", "1", "a", "b"},
	{"EVALSHA_RO", "4e6d8fc8bb01276962cce5371fa795a7763657ae", "1", "a", "b"},
	{"SCRIPT", "EXISTS", "4e6d8fc8bb01276962cce5371fa795a7763657ae", "ffffffffffffffffffffffffffffffffffffffff"},
	{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"},
	{"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "k"},
	{"EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'x')", "0"},
	{"EVAL", "#!lua\nreturn redis.call('get', 'k')", "0"},
	{"EVAL", "#!lua flags=bad\nreturn 1", "0"},
	{"EVAL", "#!luax\nreturn 1", "0"},
	{"EVAL", "#!lua x=y\nreturn 1", "0"},
	{"EVAL", "#!lua\nerror('on line two')", "0"},
	{"EVAL", "return 1", "-1"}, {"EVAL", "return 1", "2", "a"}, {"EVAL", "return 1", "x"},
	{"EVAL", "return redis.call('nosuch')", "0"}, {"EVAL", "return redis.pcall('nosuch')", "0"},
	{"EVAL", "return redis.call('get')", "0"}, {"EVAL", "return redis.call('blpop', 'l', 0)", "0"},
	{"EVAL", "return redis.call('multi')", "0"}, {"EVAL", "return redis.call('eval', 'return 1', 0)", "0"},
	{"EVAL", "return redis.call('script', 'flush')", "0"}, {"EVAL", "return redis.call('config', 'get', 'x')", "0"},
	{"EVAL", "return redis.call('script', 'nosuch')", "0"},
	{"EVAL", "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e}", "0"},
	{"EVAL", "return redis.call('incr', 'k')", "0"},
	{"EVAL", "redis.call('rpush', 'l', 'a', 'b') return redis.call('lpop', 'l')", "0"},
	{"EVAL", "return redis.call('blmpop', 0, 1, 'nosuchlist', 'left')", "0"},
	{"EVAL", "return redis.call('lrange', 'l', 0, -1)", "0"},
	{"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"},
	{"EVAL", "return redis.pcall('xread', 'STREAMS', 's', '$')", "1", "s"},
	{"EVAL", "return redis.pcall('XRead', 'COUNT', '1', 'BLOCK', '0', 'STREAMS', 's', '$')", "1", "s"},
	{"EVAL", "return redis.pcall('xread', 'BLOCK', 'x', 'STREAMS', 's')", "1", "s"},
	{"EVAL", "return redis.pcall('xreadgroup', 'group', 'g', 'c', 'STREAMS', 's', '>')", "1", "s"},
	{"EVAL", "return redis.pcall('xreadgroup', 'group', 'g', 'c', 'BLOCK', 0, 'STREAMS', 's', '>')", "1", "s"},
	{"MULTI"}, {"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, {"EXEC"},
	{"EVAL", "redis.call('set', 'a', 1) redis.call('incr', 'a') return redis.call('get', 'a')", "0"},
	{"EVAL", "redis.call('set', 'b', 1) error('after a write')", "0"},
	{"GET", "b"},
	{"EVAL", "return redis.call('hset', 'h', 'f', 'v', 'g', 'w')", "0"},
	{"EVAL", "redis.setresp(3) local r = redis.call('hgetall', 'h') return {r.map.f, r.map.g}", "0"},
	{"EVAL", "return redis.call('type', 'h')", "0"},
	{"EVAL", "syntax error here", "0"},
	{"SCRIPT", "FLUSH", "bad"}, {"SCRIPT", "FLUSH", "ASYNC"}, {"SCRIPT", "KILL"},
	{"SCRIPT", "EXISTS", "4e6d8fc8bb01276962cce5371fa795a7763657ae"},
	{"EVALSHA", "4e6d8fc8bb01276962cce5371fa795a7763657ae", "0"},
	{"SCRIPT", "LOAD", "syntax error"},
	{"EVAL"}, {"EVAL", "return 1"}, {"SCRIPT"}, {"SCRIPT", "LOAD"},
}

// cutAfter cuts s after the first sep, or returns it whole.
func cutAfter(s, sep string) string {
	if i := strings.Index(s, sep); i >= 0 {
		return s[:i+len(sep)]
	}
	return s
}

// TestScriptCommandFlags checks notInScripts and allowedBusy against
// redis-server's noscript and allow_busy flags for every command and
// subcommand lsmgo has.
func TestScriptCommandFlags(t *testing.T) {
	d := dialDiff(t, "unix", startRedis(t), 2)
	d.send([]string{"COMMAND"})
	vs, err := d.flushRead(1)
	if err != nil {
		t.Fatal(err)
	}
	redisFlags := map[string]map[string]bool{}
	var walk func(v resp.Value)
	walk = func(v resp.Value) {
		flags := map[string]bool{}
		for _, f := range v.Array[2].Array {
			flags[string(f.Str)] = true
		}
		redisFlags[string(v.Array[0].Str)] = flags
		if len(v.Array) > 9 {
			for _, sub := range v.Array[9].Array {
				walk(sub)
			}
		}
	}
	for _, v := range vs[0].Array {
		walk(v)
	}
	checked := 0
	for _, cmd := range allCommands {
		flags, ok := redisFlags[cmd.name]
		if !ok || cmd.subs != nil {
			continue
		}
		checked++
		if notInScripts[cmd.name] != flags["noscript"] {
			t.Errorf("%s: not allowed in scripts %v, Redis' noscript %v", cmd.name, notInScripts[cmd.name], flags["noscript"])
		}
		if allowedBusy[cmd.name] != flags["allow_busy"] {
			t.Errorf("%s: allowed while busy %v, Redis' allow_busy %v", cmd.name, allowedBusy[cmd.name], flags["allow_busy"])
		}
	}
	if checked < 100 {
		t.Fatalf("only %d commands checked", checked)
	}
}

// TestScriptAtomicity runs read-modify-write scripts from many clients at
// once with plain writers beside them, then checks no increment was lost,
// that WATCH sees a script's write, and that a script queued in MULTI
// runs inside EXEC.
func TestScriptAtomicity(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const clients, rounds = 8, 200
	incr := redis.NewScript(`local v = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', KEYS[1], v + 1)
redis.call('rpush', KEYS[2], v)
return v + 1`)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, s, 2+i%2, nil)
			for range rounds {
				if err := incr.Run(ctx, c, []string{"counter", "log"}).Err(); err != nil {
					t.Error(err)
					return
				}
				c.Set(ctx, "other"+strconv.Itoa(i), i, 0)
			}
		}()
	}
	wg.Wait()
	c := newClient(t, s, 2, nil)
	eq(t, "counter", c.Get(ctx, "counter").Val(), strconv.Itoa(clients*rounds))
	logged := c.LRange(ctx, "log", 0, -1).Val()
	for i, v := range logged {
		if v != strconv.Itoa(i) {
			t.Fatalf("log[%d] = %s: two scripts read the same counter", i, v)
		}
	}

	// WATCH sees a script's write.
	other := newClient(t, s, 2, nil)
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		if err := incr.Run(ctx, other, []string{"counter", "log"}).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "counter", "lost", 0)
			return nil
		})
		return err
	}, "counter")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC after a script wrote a watched key: %v, want TxFailedErr", err)
	}

	// A script queued in MULTI runs inside EXEC, seeing the writes
	// queued before it.
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "m", "1", 0)
		p.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"m"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "EVAL in EXEC", cmds[1].(*redis.Cmd).Val(), int64(2))
}

// TestScriptBusyAndKill runs a long script: past busy-reply-threshold
// other clients get BUSY, SCRIPT KILL stops it, and a script that wrote
// cannot be killed.
func TestScriptBusyAndKill(t *testing.T) {
	s := startServer(t, func(c *Config) { c.BusyReplyThreshold = 50 * time.Millisecond })
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	other := newClient(t, s, 2, nil)
	eq(t, "SCRIPT KILL idle", other.ScriptKill(ctx).Err().Error(), msgNotBusy)
	for _, write := range []bool{false, true} {
		body := "while true do end"
		if write {
			body = "redis.call('set', 'w', 1) local t = redis.call('time') while true do if tonumber(redis.call('time')[1]) > t[1] + 2 then return 'done' end end"
		}
		done := make(chan error, 1)
		go func() { done <- c.Eval(ctx, body, nil).Err() }()
		waitFor(t, "BUSY", func() bool {
			err := other.Get(ctx, "x").Err()
			return err != nil && strings.HasPrefix(err.Error(), "BUSY ")
		})
		if !write {
			eq(t, "SCRIPT KILL", other.ScriptKill(ctx).Err(), nil)
			err := <-done
			if err == nil || !strings.Contains(err.Error(), "Script killed by user with SCRIPT KILL...") {
				t.Fatalf("killed script answered %v", err)
			}
			continue
		}
		eq(t, "SCRIPT KILL after a write", other.ScriptKill(ctx).Err().Error(), msgUnkillable)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		eq(t, "write of the unkillable script", other.Get(ctx, "w").Val(), "1")
	}
	eq(t, "after", other.Ping(ctx).Err(), nil)
}

// TestScriptRedlock drives the server with the lock pattern Redlock and
// most lock libraries use: SET key token NX PX to take the lock and a
// compare-and-delete script (go-redis' redis.NewScript, EVALSHA with
// fallback to EVAL) to release it, from several clients. The critical
// sections must never overlap, and a release with the wrong token must
// not free the lock.
func TestScriptRedlock(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	unlock := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`)
	const clients, rounds = 6, 30
	var inside, overlaps, held atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		c := newClient(t, s, 2+i%2, nil)
		wg.Go(func() {
			for r := 0; r < rounds; {
				token := strconv.Itoa(i) + ":" + strconv.Itoa(r)
				ok, err := c.SetNX(ctx, "lock", token, 10*time.Second).Result()
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					time.Sleep(time.Millisecond)
					continue
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				held.Add(1)
				if n, _ := unlock.Run(ctx, c, []string{"lock"}, "not-"+token).Int(); n != 0 {
					t.Errorf("a wrong token released the lock")
				}
				inside.Add(-1)
				if n, err := unlock.Run(ctx, c, []string{"lock"}, token).Int(); err != nil || n != 1 {
					t.Errorf("release: %d, %v", n, err)
				}
				r++
			}
		})
	}
	wg.Wait()
	eq(t, "overlapping critical sections", overlaps.Load(), int64(0))
	eq(t, "locks taken", held.Load(), int64(clients*rounds))
}

// TestScriptShutdownStopsScript shuts the server down while a script
// that has written loops: shutdown does not wait for it forever, and its
// write, never finished, is not committed.
func TestScriptShutdownStopsScript(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.ShutdownTimeout = 200 * time.Millisecond })
	c := newClient(t, s, 2, nil)
	done := make(chan error, 1)
	go func() { done <- c.Eval(ctx, "redis.call('set', 'partial', 1) while true do end", nil).Err() }()
	waitFor(t, "the script to run", func() bool { return s.scripts.running.Load() != nil })
	shutdown(t, s)
	<-done
	s = startServer(t, func(c *Config) { c.Dir = dir })
	eq(t, "key written by the stopped script", newClient(t, s, 2, nil).Exists(ctx, "partial").Val(), int64(0))
}
