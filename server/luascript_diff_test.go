package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// redisForwarder is a luascript.Caller that sends every redis.call to a
// real redis-server, so that a script run by the package and the same
// script run by EVAL on that server differ only in the Lua layer: the
// sandbox, the libraries and the conversions.
type redisForwarder struct {
	t     *testing.T
	d     *diffConn
	proto int
}

func (f *redisForwarder) Call(args [][]byte, proto int) resp.Value {
	if proto != f.proto {
		f.d.do(f.t, "HELLO", strconv.Itoa(proto))
		f.proto = proto
	}
	f.d.out = resp.AppendCommand(f.d.out, args...)
	vs, err := f.d.flushRead(1)
	if err != nil {
		f.t.Fatal(err)
	}
	return vs[0]
}

// luaDiff runs scripts both ways against one redis-server: EVAL on its
// database 0, the package on database 1 through a forwarder; each case
// starts from the same data in both.
type luaDiff struct {
	t      *testing.T
	vm     *luascript.VM
	eval   *diffConn
	fwd    *redisForwarder
	proto  int
	setups [][]string
	// compared counts the scripts checked, errors those Redis refused.
	compared, errors int
}

func newLuaDiff(t *testing.T, proto int) *luaDiff {
	sock := startRedis(t)
	eval := dialDiff(t, "unix", sock, proto)
	fwdConn := dialDiff(t, "unix", sock, 2)
	fwdConn.do(t, "SELECT", "1")
	eval.do(t, "INFO", "server")
	return &luaDiff{
		t: t, eval: eval, proto: proto,
		vm:  luascript.New(luascript.Options{Version: "7.0.15"}),
		fwd: &redisForwarder{t: t, d: fwdConn, proto: 2},
	}
}

// check runs body with keys and argv both ways and compares the replies.
func (ld *luaDiff) check(body string, keys, argv []string, n norm) {
	t := ld.t
	t.Helper()
	ld.eval.do(t, "FLUSHALL")
	for _, db := range []string{"0", "1"} {
		ld.eval.do(t, "SELECT", db)
		for _, s := range ld.setups {
			ld.eval.do(t, s...)
		}
	}
	ld.eval.do(t, "SELECT", "0")
	args := append([]string{"EVAL", body, strconv.Itoa(len(keys))}, keys...)
	ld.eval.send(append(args, argv...))
	want, err := ld.eval.flushRead(1)
	if err != nil {
		t.Fatal(err)
	}
	got := ld.run(body, keys, argv)
	ld.compared++
	if want[0].Type == '-' {
		ld.errors++
	}
	if g, w := render(got, n), render(want[0], n); g != w {
		t.Errorf("script %q keys %q argv %q:\n got %s\nwant %s", body, keys, argv, g, w)
	}
}

// run runs body in the package and parses what it wrote.
func (ld *luaDiff) run(body string, keys, argv []string) resp.Value {
	var buf bytes.Buffer
	w := resp.NewWriter(&buf)
	w.SetProtocol(ld.proto)
	sha, err := ld.vm.Load([]byte(body))
	if err != nil {
		w.Error(err.Error())
	} else {
		ld.vm.Eval(w, sha, toBytes(keys), toBytes(argv), ld.fwd)
	}
	w.Flush()
	v, err := resp.NewReader(&buf, resp.Limits{}).ReadValue()
	if err != nil {
		ld.t.Fatalf("script %q wrote an unreadable reply %q: %v", body, buf.String(), err)
	}
	return testutil.CloneValue(v)
}

// TestLuaScriptDiff compares hand-picked scripts, each aimed at one rule
// of the sandbox, the libraries or the conversions, with Redis' answers.
// Which commands a script may run is the server's rule, tested with EVAL
// against the server (TestScriptingDiff).
func TestLuaScriptDiff(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
			ld := newLuaDiff(t, proto)
			ld.setups = [][]string{
				{"SET", "s", "hello"}, {"SET", "n", "41"}, {"RPUSH", "l", "a", "b", "c"},
				{"HSET", "h", "f1", "v1"}, {"SADD", "set", "m1"}, {"ZADD", "z", "1.5", "a", "2", "b"},
			}
			for _, c := range append(luaCases, luaProtectionCases...) {
				ld.check(c.body, c.keys, c.argv, c.norm)
			}
		})
	}
}

type luaCase struct {
	body       string
	keys, argv []string
	norm       norm
}

func lc(body string, args ...string) luaCase {
	return luaCase{body: body, argv: args}
}

var luaCases = []luaCase{
	// Conversions, Lua to reply.
	lc("return 1"), lc("return -3.99"), lc("return 3.99"), lc("return 'x'"), lc("return true"),
	lc("return false"), lc("return nil"), lc("return {}"), lc("return {1,2,3,'x',nil,4}"),
	lc("return {1,{2,{3,{'deep'}}},'a'}"), lc("return {ok='FINE'}"), lc("return {err='MY error'}"),
	lc("return {err='x'}"), lc("return {ok='a\\r\\nb'}"), lc("return {1, false, true, 3}"),
	lc("return redis.status_reply('S')"), lc("return redis.error_reply('E msg')"),
	lc("return redis.error_reply('nocode')"), lc("return redis.error_reply('-X y')"),
	lc("return {double=1.5}"), lc("return {big_number='123456789012345678901234567890'}"),
	lc("return {map={a=1}}"), lc("return {set={a=true}}"), lc("return 2^53"), lc("return -0.5"),
	lc("return {err=3}"), lc("return print"),
	// Conversions, reply to Lua.
	lc("return redis.call('get','s')"), lc("return redis.call('get','nosuch')"),
	lc("return type(redis.call('get','nosuch'))"), lc("return redis.call('incr','n')"),
	lc("return redis.call('lrange','l',0,-1)"), lc("return redis.call('set','x','y')"),
	lc("return redis.call('type','l')"), lc("return redis.call('type','l').ok"),
	lc("return redis.call('zrange','z',0,-1,'withscores')"), lc("return redis.call('hgetall','h')"),
	lc("return redis.pcall('incr','s')"), lc("return redis.call('incr','s')"),
	lc("local r = redis.pcall('incr','s') return r.err"), lc("return redis.call('lpop','nosuch')"),
	lc("return redis.call('set','k',1.5)"), lc("redis.call('set','k',7) return redis.call('get','k')"),
	lc("return redis.call('zscore','z','a')"),
	lc("return redis.call('mget','s','nosuch','n')"),
	lc("return redis.call('exists', KEYS[1], ARGV[1])"),
	{body: "return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}", keys: []string{"k1", "k2"}, argv: []string{"a1"}},
	// RESP3 inside the script.
	lc("redis.setresp(3) return redis.call('hgetall','h')"),
	lc("redis.setresp(3) local r = redis.call('hgetall','h') return r.map.f1"),
	lc("redis.setresp(3) return redis.call('smembers','set')"),
	lc("redis.setresp(3) return redis.call('zscore','z','a')"),
	lc("redis.setresp(3) return redis.call('zscore','z','a').double"),
	lc("redis.setresp(3) return redis.call('get','nosuch')"),
	lc("redis.setresp(3) return type(redis.call('get','nosuch'))"),
	lc("redis.setresp(3) return true"), lc("redis.setresp(3) return false"),
	lc("redis.setresp(3) return {1,true,false}"),
	lc("return redis.setresp(4)"), lc("return redis.setresp()"),
	// Errors.
	lc("return redis.call()"), lc("return redis.call({})"),
	lc("error('boom')"), lc("error({err='x y'})"), lc("error(nil)"),
	lc("local ok, e = pcall(error, {err='T'}) return e"),
	lc("return redis.set_repl(99)"), lc("return redis.set_repl(redis.REPL_ALL)"),
	lc("return redis.replicate_commands()"), lc("return redis.log(redis.LOG_WARNING, 'x', 1)"),
	lc("return redis.log(99, 'x')"), lc("return redis.log(1)"),
	// The sandbox.
	lc("a = 1"), lc("return a"), lc("rawset(_G, 'a', 1)"), lc("redis.call = nil"),
	lc("string.x = 1"), lc("return os"), lc("return type(loadstring)"), lc("return type(load)"),
	lc("return type(dofile)"), lc("return type(print)"), lc("return type(getfenv)"),
	lc("return type(coroutine.create)"), lc("return type(unpack)"), lc("return _VERSION"),
	lc("local t = {} for k in pairs(redis) do t[#t+1] = k end table.sort(t) return t"),
	lc("local t = {} for k in pairs(_G) do t[#t+1] = k end table.sort(t) return t"),
	lc("return redis.REDIS_VERSION"), lc("return redis.REDIS_VERSION_NUM"),
	lc("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"),
	lc("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"),
	lc("return redis.sha1hex('')"), lc("return redis.sha1hex('abc')"),
	lc("local x = 0 for i = 1, 100 do x = x + i end return x"),
	// math.random, after a reseed (its state otherwise depends on
	// every script the server ran before).
	lc("math.randomseed(0) return {math.random(100), math.random(5, 10), tostring(math.random())}"),
	lc("math.randomseed(42) return tostring(math.random())"),
	// tostring follows Lua 5.1's %.14g.
	lc("return {tostring(1/3), tostring(2^53), tostring(1e15), tostring(-0.0), tostring(1e100), tostring(0.1)}"),
	lc("return tostring(1/0)"), lc("return tostring(-1/0)"),
	// bit.
	lc("return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(7, 2), bit.bnot(0), bit.tobit(2^32 + 5)}"),
	lc("return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x80000001, 1), bit.ror(1, 1)}"),
	lc("return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x1234, 2), bit.bswap(0x01020304), bit.tobit(-1.5), bit.tobit(2.5)}"),
	// struct.
	lc("return struct.pack('>i4<h', 1, -2)"), lc("return {struct.unpack('>i4<h', struct.pack('>i4<h', 1, -2))}"),
	lc("return struct.pack('bBhHlLTiI', -1, 255, -300, 65000, -5, 5, 7, -9, 9)"),
	lc("return {struct.unpack('bBhHlLiI', struct.pack('bBhHlLiI', -1, 255, -300, 65000, -5, 5, -9, 9))}"),
	lc("return struct.pack('!4 b i4 d', 1, 2, 3.5)"), lc("return struct.size('!4 b i4 d')"),
	lc("return {struct.unpack('s c3 c0', struct.pack('s c3 b c0', 'zt', 'abc', 2, 'xy'))}"),
	lc("return struct.pack('i3 I7', -2, 2^40)"), lc("return {struct.unpack('i3 I7', struct.pack('i3 I7', -2, 2^40))}"),
	lc("return struct.pack('f d', 1.5, 0.1)"), lc("return {struct.unpack('>f', struct.pack('>f', 0.25))}"),
	lc("return struct.size('s')"), lc("return struct.pack('z', 1)"), lc("return struct.unpack('i4', 'ab')"),
	// cmsgpack.
	lc("return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, 2^32, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1)"),
	lc("return cmsgpack.pack(1.5, 0.1, 'short', string.rep('x', 40), string.rep('y', 300), true, false, nil)"),
	lc("return cmsgpack.pack({1,2,3}, {}, {a=1}, {{{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}}})"),
	lc("return {cmsgpack.unpack(cmsgpack.pack(1, 'two', {3, {4}}, true))}"),
	lc("return cmsgpack.unpack(cmsgpack.pack({a=1}))['a']"),
	lc("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}"),
	lc("return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 0)}"),
	lc("return cmsgpack.unpack('\\217')"), lc("return cmsgpack.unpack('\\193')"), lc("return cmsgpack.pack()"),
	// cjson.
	lc("return cjson.encode({1, 2, 'three', {4, 5}, true, false})"),
	lc("return cjson.encode({a = 1})"), lc("return cjson.encode({})"), lc("return cjson.encode('a\"b\\\\c/d\\n\\1\\127')"),
	lc("return cjson.encode({1.5, 0.1, 1/3, 1e300, -0.0, 2^53})"), lc("return cjson.encode(1/0)"),
	lc("return cjson.encode({[1]=1, [5]=5})"), lc("return cjson.encode({[1]=1, [20]=5})"),
	lc("return cjson.encode(cjson.null)"), lc("return cjson.encode({cjson.null, 1})"),
	lc("return cjson.encode(print)"), lc("return cjson.encode({[true]=1})"),
	lc("local t = cjson.decode('[1, 2.5, \"x\", [true, false], {\"k\": \"v\"}]') return {t[1], t[2], t[3], t[4][1], t[5].k}"),
	lc("return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\"')"), lc("return type(cjson.decode('null'))"),
	lc("return cjson.decode('')"), lc("return cjson.decode('[1,]')"), lc("return cjson.decode('{\"a\" 1}')"),
	lc("return cjson.decode('[1] x')"), lc("return cjson.decode('{1:2}')"),
	lc("return cjson.encode(cjson.decode('[1e2, -3, 0.5]'))"),
	lc("return {cjson.encode_sparse_array(true), cjson.encode({[1]=1, [20]=5})}"),
	lc("return cjson.encode_max_depth(3)"),
}

// TestLuaScriptDiffErrorsTrimmed compares scripts whose Lua-level error
// text differs between gopher-lua and Lua 5.1 by their error code only.
func TestLuaScriptDiffErrorsTrimmed(t *testing.T) {
	ld := newLuaDiff(t, 2)
	for _, body := range []string{"return nil + 1", "local t = nil return t.x", "return x.y.z", "syntax error here"} {
		want := ld.evalRedis(body)
		got := ld.run(body, nil, nil)
		if got.Type != '-' || want.Type != '-' || strings.Fields(got.Err)[0] != strings.Fields(want.Err)[0] {
			t.Errorf("%q: got %q, want %q", body, got.Err, want.Err)
		}
	}
}

func (ld *luaDiff) evalRedis(body string) resp.Value {
	ld.eval.send([]string{"EVAL", body, "0"})
	vs, err := ld.eval.flushRead(1)
	if err != nil {
		ld.t.Fatal(err)
	}
	return vs[0]
}

// TestLuaScriptDiffRandom compares seeded random scripts: nested returns
// of every Lua type, redis.call and redis.pcall replies of every type,
// and round trips through cjson, cmsgpack, struct and bit, in both
// protocols and with setresp(3).
func TestLuaScriptDiffRandom(t *testing.T) {
	const scripts = 300
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
			ld := newLuaDiff(t, proto)
			ld.setups = [][]string{
				{"SET", "s", "hello"}, {"SET", "n", "41"}, {"RPUSH", "l", "a", "b", "c"},
				{"HSET", "h", "f1", "v1"}, {"ZADD", "z", "1.5", "a", "2", "b"},
			}
			rng := newRand(int64(proto))
			for range scripts {
				g := &luaGen{rng: rng}
				body := "return " + g.expr(3)
				if rng.IntN(4) == 0 {
					body = "redis.setresp(3) " + body
				}
				ld.check(body, nil, nil, exact)
			}
			// Most scripts must run: a generator that wrote broken Lua
			// would compare only error texts.
			if ld.errors > ld.compared/3 {
				t.Fatalf("%d of %d scripts failed on Redis", ld.errors, ld.compared)
			}
			t.Logf("%d scripts, %d errors", ld.compared, ld.errors)
		})
	}
}

// luaGen writes random Lua expressions whose value does not depend on
// table iteration order.
type luaGen struct{ rng interface{ IntN(int) int } }

func (g *luaGen) expr(depth int) string {
	if depth == 0 {
		return g.scalar()
	}
	switch g.rng.IntN(8) {
	case 0, 1:
		n := g.rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.expr(depth - 1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case 2:
		return g.call()
	case 3:
		return "cjson.decode(cjson.encode(" + g.array(depth-1) + "))"
	case 4:
		return "cmsgpack.unpack(cmsgpack.pack(" + g.expr(depth-1) + "))"
	case 5:
		return "{struct.unpack('>i4 <h d B c3', struct.pack('>i4 <h d B c3', " +
			g.integer() + ", " + g.integer() + ", " + g.number() + ", 7, 'abc'))}"
	case 6:
		ops := []string{"band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror"}
		return "bit." + ops[g.rng.IntN(len(ops))] + "(" + g.number() + ", " + g.integer() + ")"
	}
	return "tostring(" + g.number() + ")"
}

// array is a table expression cjson encodes as an array: no nil holes.
func (g *luaGen) array(depth int) string {
	n := 1 + g.rng.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		if depth > 0 && g.rng.IntN(3) == 0 {
			parts[i] = g.array(depth - 1)
		} else {
			parts[i] = []string{g.number(), g.str(), "true", "false"}[g.rng.IntN(4)]
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (g *luaGen) scalar() string {
	switch g.rng.IntN(6) {
	case 0:
		return g.number()
	case 1:
		return g.str()
	case 2:
		return []string{"true", "false", "nil"}[g.rng.IntN(3)]
	case 3:
		return "{ok=" + g.str() + "}"
	case 4:
		return "{err=" + g.str() + "}"
	}
	return g.call()
}

func (g *luaGen) call() string {
	calls := []string{
		"redis.call('get','s')", "redis.call('get','nosuch')", "redis.call('incr','n')",
		"redis.call('lrange','l',0,-1)", "redis.call('hgetall','h')", "redis.call('type','z')",
		"redis.call('zrange','z',0,-1,'withscores')", "redis.call('zscore','z','a')",
		"redis.pcall('incr','s')", "redis.pcall('lpush','s','x')", "redis.call('exists','s','l','x')",
		"redis.call('set','t'," + g.number() + ")", "redis.call('hget','h','f1')", "redis.call('lpop','nosuch')",
	}
	return calls[g.rng.IntN(len(calls))]
}

func (g *luaGen) integer() string {
	return strconv.Itoa(g.rng.IntN(2001) - 1000)
}

func (g *luaGen) number() string {
	switch g.rng.IntN(4) {
	case 0:
		return g.integer()
	case 1:
		return strconv.Itoa(g.rng.IntN(2001)-1000) + "." + strconv.Itoa(g.rng.IntN(100))
	case 2:
		return "(" + g.integer() + "/7)"
	}
	return "2^" + strconv.Itoa(g.rng.IntN(70))
}

func (g *luaGen) str() string {
	return []string{"''", "'x'", "'a b'", "'\\255\\t'", "'{}'", "'1'", "'-ERR no'"}[g.rng.IntN(7)]
}

// luaProtectionCases try to get around the read-only globals and
// libraries through metatables.
var luaProtectionCases = []luaCase{
	lc("return type(getmetatable(_G))"), lc("return type(getmetatable(_G).__index)"),
	lc("local g = getmetatable(_G) g.__index = {}"), lc("setmetatable(_G, {})"), lc("_G = {}"),
	lc("return type(getmetatable(redis))"), lc("return type(getmetatable(''))"),
	lc("return type(getmetatable('').__index)"), lc("getmetatable('').__index = {}"),
	lc("getmetatable('').__index.upper = nil"), lc("return ('x'):upper()"),
	lc("cjson.encode = function() return 1 end"), lc("bit.lshift = nil"),
}
