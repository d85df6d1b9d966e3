package luascript

import (
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// The conversions between RESP replies and Lua values, as Redis documents
// them ("Script data type conversion"); proto is the script's redis.setresp
// version.
//
// Reply to Lua: integer → number; bulk → string; null bulk or null array →
// false (RESP2) or nil (RESP3 null); array → array table; status →
// {ok=s}; error → {err=s}. RESP3 only: map → {map={k=v}}; set →
// {set={m=true}}; boolean → boolean; double → {double=n}; big number →
// {big_number=s}; verbatim → {verbatim_string={format=, string=}}.
//
// Lua to reply: number → integer (truncated); string → bulk; true → 1
// (a RESP3 boolean after setresp(3)); false and nil → null (false is a
// RESP3 boolean after setresp(3)); a table with err → error, ok →
// status, double, big_number, verbatim_string, map or set → that RESP3
// type; any other table → array of its elements up to the first nil.

// maxReplyDepth bounds the nesting of a reply built from Lua tables; past it
// the element is an error, as Redis' "reached lua stack limit".
const maxReplyDepth = 1000

func replyToLua(L *lua.LState, v resp.Value, proto int) lua.LValue {
	switch v.Type {
	case ':':
		return lua.LNumber(v.Int)
	case '$':
		if v.Null {
			return nullToLua(proto)
		}
		return lua.LString(v.Str)
	case '+':
		t := L.CreateTable(0, 1)
		if string(v.Str) == "OK" {
			t.RawSetString("ok", luaOK)
		} else {
			t.RawSetString("ok", lua.LString(v.Str))
		}
		return t
	case '-', '!':
		return errorTable(L, "-"+v.Err)
	case '*', '>':
		if v.Null {
			return nullToLua(proto)
		}
		t := L.CreateTable(len(v.Array), 0)
		for _, e := range v.Array {
			t.Append(replyToLua(L, e, proto))
		}
		return t
	case '_':
		return lua.LNil
	case '#':
		return lua.LBool(v.Int != 0)
	case ',':
		return wrap(L, "double", lua.LNumber(v.Float))
	case '(':
		return wrap(L, "big_number", lua.LString(v.Str))
	case '=':
		inner := L.CreateTable(0, 2)
		inner.RawSetString("format", lua.LString("txt"))
		inner.RawSetString("string", lua.LString(v.Str))
		return wrap(L, "verbatim_string", inner)
	case '%':
		m := L.CreateTable(0, len(v.Array)/2)
		for i := 0; i+1 < len(v.Array); i += 2 {
			m.RawSet(replyToLua(L, v.Array[i], proto), replyToLua(L, v.Array[i+1], proto))
		}
		return wrap(L, "map", m)
	case '~':
		s := L.CreateTable(0, len(v.Array))
		for _, e := range v.Array {
			s.RawSet(replyToLua(L, e, proto), lua.LTrue)
		}
		return wrap(L, "set", s)
	}
	return lua.LNil
}

// luaOK is the status most commands reply, boxed once.
var luaOK lua.LValue = lua.LString("OK")

// nullToLua is a null reply: false in RESP2 (Lua tables cannot hold nil),
// nil in RESP3.
func nullToLua(proto int) lua.LValue {
	if proto == 3 {
		return lua.LNil
	}
	return lua.LFalse
}

func wrap(L *lua.LState, field string, v lua.LValue) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(field, v)
	return t
}

// writeReply writes a script's return value to the client.
func (vm *VM) writeReply(w *resp.Writer, c *call, v lua.LValue) {
	writeLua(w, c.proto, v, 0)
}

func writeLua(w *resp.Writer, proto int, v lua.LValue, depth int) {
	switch v := v.(type) {
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LNumber:
		w.Int(luaNumberToInt(float64(v)))
	case lua.LBool:
		switch {
		case proto == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		if depth >= maxReplyDepth {
			w.Error("ERR reached lua stack limit")
			return
		}
		writeTable(w, proto, v, depth)
	default:
		w.Null()
	}
}

// luaNumberToInt is C's (long long) cast as Redis applies it; values it
// leaves undefined (NaN, out of range) saturate.
func luaNumberToInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MinInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func writeTable(w *resp.Writer, proto int, t *lua.LTable, depth int) {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error(sanitizeLine(string(s)))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.SimpleString(sanitizeLine(string(s)))
		return
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(n))
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		w.BigNumber(sanitizeLine(string(s)))
		return
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		format, fok := vt.RawGetString("format").(lua.LString)
		str, sok := vt.RawGetString("string").(lua.LString)
		if fok && sok && len(format) == 3 {
			w.Verbatim(string(format), string(str))
			return
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		n := 0
		m.ForEach(func(lua.LValue, lua.LValue) { n++ })
		w.MapHeader(n)
		m.ForEach(func(k, v lua.LValue) {
			writeLua(w, proto, k, depth+1)
			writeLua(w, proto, v, depth+1)
		})
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		n := 0
		s.ForEach(func(lua.LValue, lua.LValue) { n++ })
		w.SetHeader(n)
		s.ForEach(func(k, _ lua.LValue) { writeLua(w, proto, k, depth+1) })
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.ArrayHeader(n)
	for i := 1; i <= n; i++ {
		writeLua(w, proto, t.RawGetInt(i), depth+1)
	}
}
