package luascript

import (
	lua "github.com/yuin/gopher-lua"
)

// The sandbox, as Redis 7 builds it: the base, table, string, math and
// coroutine libraries without anything that reaches the file system, the
// process or the debugger; the redis, cjson, cmsgpack, bit and struct
// libraries; and every one of these tables, and the globals, read-only.

const (
	msgReadonly     = "Attempt to modify a readonly table"
	msgNoSuchGlobal = "Script attempted to access nonexistent global variable '"
)

// removedGlobals are what gopher-lua's base library defines and Redis'
// sandbox does not have.
var removedGlobals = []string{
	"dofile", "loadfile", "print", "getfenv", "setfenv", "module", "require",
	"newproxy", "_printregs", "_GOPHER_LUA_VERSION",
}

// libraries are the global tables made read-only.
var libraries = []string{"string", "math", "table", "coroutine", "redis", "cjson", "cmsgpack", "bit", "struct"}

func (vm *VM) openLibs() {
	L := vm.L
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range removedGlobals {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("tostring", L.NewFunction(luaTostring))
	g.RawSetString("gcinfo", L.NewFunction(luaGcinfo))
	g.RawSetString("pcall", L.NewFunction(vm.luaPcall))
	g.RawSetString("rawset", L.NewFunction(vm.luaRawset))
	g.RawSetString("setmetatable", L.NewFunction(vm.luaSetmetatable))
	g.RawSetString("pairs", L.NewFunction(vm.luaPairs))
	g.RawSetString("next", L.NewFunction(vm.luaNext))
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	g.RawSetString("getmetatable", L.NewFunction(vm.luaGetmetatable))
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("rep", L.NewFunction(luaStringRep))
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(vm.luaRandom))
	math.RawSetString("randomseed", L.NewFunction(vm.luaRandomseed))
	g.RawSetString("redis", vm.redisLib())
	g.RawSetString("cjson", vm.cjsonLib())
	g.RawSetString("cmsgpack", cmsgpackLib(L))
	g.RawSetString("bit", bitLib(L))
	g.RawSetString("struct", structLib(L))
}

// protectGlobals replaces the global table and each library with a
// read-only proxy. Reads go through __index to the real table, whose own
// metatable makes reading a missing global an error; writes hit
// __newindex, since the proxy stays empty.
func (vm *VM) protectGlobals() {
	L := vm.L
	real := L.G.Global
	vm.globals = real
	for _, name := range libraries {
		t := real.RawGetString(name).(*lua.LTable)
		real.RawSetString(name, vm.readonlyProxy(t))
	}
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s%s'", msgNoSuchGlobal, luaToString(L.Get(2)))
		return 0
	}))
	L.SetMetatable(real, missing)
	proxy := vm.readonlyProxy(real)
	real.RawSetString("_G", proxy)
	L.Env = proxy
	// What getmetatable shows of _G and of strings: read-only stand-ins
	// that give no way to the real tables, as Redis' read-only
	// metatables do not.
	gmeta := L.NewTable()
	gmeta.RawSetString("__index", missing.RawGetString("__index"))
	vm.globalsMeta = vm.readonlyProxy(gmeta)
	smeta := L.NewTable()
	smeta.RawSetString("__index", real.RawGetString("string"))
	vm.stringMeta = vm.readonlyProxy(smeta)
}

// luaGetmetatable hides the metatables of the read-only proxies and of
// strings, through which a script could reach and change the real
// globals or the string library.
func (vm *VM) luaGetmetatable(L *lua.LState) int {
	v := L.CheckAny(1)
	switch t := v.(type) {
	case lua.LString:
		L.Push(vm.stringMeta)
		return 1
	case *lua.LTable:
		if t == vm.L.Env {
			L.Push(vm.globalsMeta)
			return 1
		}
		if _, ok := vm.readonly[t]; ok {
			L.Push(lua.LNil)
			return 1
		}
	}
	mt := L.GetMetatable(v)
	if t, ok := mt.(*lua.LTable); ok {
		if protected := t.RawGetString("__metatable"); protected != lua.LNil {
			mt = protected
		}
	}
	L.Push(mt)
	return 1
}

func (vm *VM) readonlyProxy(t *lua.LTable) *lua.LTable {
	L := vm.L
	proxy := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", t)
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(msgReadonly)
		return 0
	}))
	L.SetMetatable(proxy, meta)
	vm.readonly[proxy] = t
	return proxy
}

// backing is the table behind a read-only proxy, or t itself.
func (vm *VM) backing(t *lua.LTable) *lua.LTable {
	if real, ok := vm.readonly[t]; ok {
		return real
	}
	return t
}

// luaRawset refuses read-only tables, which would otherwise take the raw
// write.
func (vm *VM) luaRawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if _, ok := vm.readonly[t]; ok {
		L.Error(lua.LString(msgReadonly), 0)
	}
	L.CheckAny(2)
	L.RawSet(t, L.Get(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

func (vm *VM) luaSetmetatable(L *lua.LState) int {
	t := L.CheckTable(1)
	if _, ok := vm.readonly[t]; ok {
		L.Error(lua.LString(msgReadonly), 0)
	}
	mt := L.Get(2)
	if _, ok := mt.(*lua.LTable); !ok && mt != lua.LNil {
		L.ArgError(2, "nil or table expected")
	}
	if cur, ok := L.GetMetatable(t).(*lua.LTable); ok && cur.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	L.SetMetatable(t, mt)
	L.SetTop(1)
	return 1
}

// luaNext and luaPairs walk the table behind a read-only proxy, so that
// pairs(_G) and pairs(redis) list their contents as in Redis.
func (vm *VM) luaNext(L *lua.LState) int {
	t := vm.backing(L.CheckTable(1))
	k, v := t.Next(L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func (vm *VM) luaPairs(L *lua.LState) int {
	t := L.CheckTable(1)
	L.Push(vm.globals.RawGetString("next"))
	L.Push(t)
	L.Push(lua.LNil)
	return 3
}

// luaPcall is Redis' pcall: an error that is a table with an err field
// (what redis.call raises) is returned as that string.
func (vm *VM) luaPcall(L *lua.LState) int {
	L.CheckAny(1)
	nargs := L.GetTop() - 1
	if err := L.PCall(nargs, lua.MultRet, nil); err != nil {
		obj := lua.LValue(lua.LString(err.Error()))
		if apiErr, ok := err.(*lua.ApiError); ok {
			obj = apiErr.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			if msg, ok := t.RawGetString("err").(lua.LString); ok {
				obj = msg
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaTostring prints numbers as Lua 5.1 does ("%.14g"); gopher-lua's own
// prints the shortest round-trip form.
func luaTostring(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(formatNumber(float64(n))))
		return 1
	}
	L.Push(L.ToStringMeta(v))
	return 1
}

// luaGcinfo reports the Lua heap in kilobytes; the Go heap is shared, so
// this is the process's.
func luaGcinfo(L *lua.LState) int {
	L.Push(lua.LNumber(heapKB()))
	return 1
}

// argError raises Lua 5.1's "bad argument" error for argument n of the
// library function fn.
func argError(L *lua.LState, n int, fn, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fn, msg)
}

// maxResults is Lua 5.1's LUAI_MAXCSTACK: the most values a C function
// such as unpack may push.
const maxResults = 8000

func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt(2, 1)
	e := L.OptInt(3, t.Len())
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n >= maxResults {
		L.RaiseError("too many results to unpack")
	}
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(i))
	}
	return n
}

// maxStringLen bounds string.rep, whose result Lua would otherwise try to
// allocate whole: Redis' proto-max-bulk-len default.
const maxStringLen = 512 << 20

func luaStringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > maxStringLen {
		L.RaiseError("resulting string too large")
	}
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	L.Push(lua.LString(out))
	return 1
}
