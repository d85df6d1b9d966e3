package luascript

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// noCalls is a Caller for scripts that send no commands.
type noCalls struct{}

func (noCalls) Call([][]byte, int) resp.Value {
	return resp.Value{Type: '-', Err: "ERR no commands here"}
}

// eval runs body and returns the reply it wrote.
func eval(t *testing.T, vm *VM, body string) string {
	t.Helper()
	var buf bytes.Buffer
	w := resp.NewWriter(&buf)
	sha, err := vm.Load([]byte(body))
	if err != nil {
		return err.Error()
	}
	vm.Eval(w, sha, nil, nil, noCalls{})
	w.Flush()
	return buf.String()
}

// TestHostileScripts runs scripts that try to exhaust the process; each
// must end with an error and leave the VM usable.
func TestHostileScripts(t *testing.T) {
	vm := New(Options{MemoryLimit: 64 << 20})
	defer vm.Close()
	for _, c := range []struct{ body, want string }{
		{"local s = 'x' while true do s = s .. s end", "not enough memory"},
		{"local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i} end", "not enough memory"},
		{"return string.rep('x', 2^40)", "resulting string too large"},
		{"local function f(n) return 1 + f(n + 1) end return f(1)", "stack overflow"},
		{"return unpack({}, 1, 2^24)", "too many results to unpack"},
		{"return string.byte(string.rep('x', 2^21), 1, -1)", "overflow"},
		{"local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x", "overflow"},
	} {
		done := make(chan string, 1)
		go func() { done <- eval(t, vm, c.body) }()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-") || !strings.Contains(got, c.want) {
				t.Errorf("%q: got %q, want an error with %q", c.body, got, c.want)
			}
		case <-time.After(5 * time.Minute): // a hang, not a slow machine (the race detector at load 40 took over 30 s)
			t.Fatalf("%q did not stop", c.body)
		}
		if got := eval(t, vm, "return 1"); got != ":1\r\n" {
			t.Fatalf("after %q the VM answers %q", c.body, got)
		}
	}
}

// TestKill stops looping scripts, including one that catches errors with
// pcall and one looping inside a coroutine.
func TestKill(t *testing.T) {
	vm := New(Options{})
	defer vm.Close()
	for _, body := range []string{
		"while true do end",
		"while true do pcall(function() while true do end end) end",
		"local co = coroutine.create(function() while true do end end) coroutine.resume(co) return 1",
	} {
		done := make(chan string, 1)
		go func() { done <- eval(t, vm, body) }()
		for !vm.Running() {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		vm.Kill(ErrKilled)
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
				t.Errorf("%q: got %q", body, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q was not killed", body)
		}
	}
}

// TestRand48 checks the first math.random() after randomseed(0) against
// the value Redis 7.0.15 returns (the differential test compares more).
func TestRand48(t *testing.T) {
	vm := New(Options{})
	defer vm.Close()
	if got := eval(t, vm, "math.randomseed(0) return tostring(math.random())"); got != "$16\r\n0.17082803611217\r\n" {
		t.Fatalf("got %q", got)
	}
}

// TestChunkVarargs checks what dropping the chunk's arg table (compile)
// must keep: "..." in a script is still empty, arg is still a missing
// global, and nested vararg functions still get their arg table.
func TestChunkVarargs(t *testing.T) {
	vm := New(Options{})
	defer vm.Close()
	for _, c := range []struct{ body, want string }{
		{"return select('#', ...)", ":0\r\n"},
		{"local f = function(...) return arg.n end return f(1, 2, 3)", ":3\r\n"},
		{"local f = function(...) return arg[2] end return f('a', 'b')", "$1\r\nb\r\n"},
		{"return arg", "nonexistent global variable 'arg'"},
	} {
		for range 2 { // compiled on Load, then run from the cache
			if got := eval(t, vm, c.body); !strings.Contains(got, c.want) {
				t.Errorf("%q: got %q, want %q", c.body, got, c.want)
			}
		}
	}
}

// fixedReplies is a Caller answering GET, SET and EXPIRE as a server
// would, for BenchmarkEvalReadModifyWrite.
type fixedReplies struct{}

func (fixedReplies) Call(args [][]byte, _ int) resp.Value {
	switch strings.ToLower(string(args[0])) {
	case "get":
		return resp.Value{Type: '$', Str: []byte("41")}
	case "set":
		return resp.Value{Type: '+', Str: []byte("OK")}
	default:
		return resp.Value{Type: ':', Int: 1}
	}
}

// BenchmarkEvalReadModifyWrite is the VM's share of issue 19's EVALSHA
// benchmark: the GET/SET/EXPIRE script of bench-results/hotkey, with
// the commands answered by fixedReplies.
func BenchmarkEvalReadModifyWrite(b *testing.B) {
	vm := New(Options{})
	defer vm.Close()
	sha, err := vm.Load([]byte("local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	w := resp.NewWriter(&buf)
	keys := [][]byte{[]byte("hot:script")}
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		vm.Eval(w, sha, keys, nil, fixedReplies{})
		w.Flush()
	}
	if buf.String() != ":1\r\n" {
		b.Fatalf("reply %q", buf.String())
	}
}
