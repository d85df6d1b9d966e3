package server

import (
	"strings"
	"testing"
)

// TestScriptingDiff sends EVAL, EVALSHA, EVAL_RO, SCRIPT and FCALL
// commands, errors included, to the server and to redis-server and
// compares the replies.
func TestScriptingDiff(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		for _, d := range []*diffConn{ours, theirs} {
			d.do(t, "FLUSHALL")
			d.do(t, "SCRIPT", "FLUSH")
		}
		for _, cmd := range scriptingDiffCmds {
			var replies []string
			for _, d := range []*diffConn{ours, theirs} {
				d.send(cmd)
				vs, err := d.flushRead(1)
				if err != nil {
					t.Fatal(err)
				}
				replies = append(replies, render(vs[0], exact))
			}
			if len(cmd) > 1 && cmd[0] == "EVAL" && cmd[1] == "syntax error here" || cmd[0] == "SCRIPT" && cmd[len(cmd)-1] == "syntax error" {
				// gopher-lua's parser words its errors its own way
				// (doc/server.md): the line must match.
				replies[0], replies[1] = cutAfter(replies[0], "user_script:1:"), cutAfter(replies[1], "user_script:1:")
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
