package luascript

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Replication flags of redis.set_repl. lsmgo has no replication; the
// flags are checked as Redis checks them and otherwise ignored.
const (
	replNone    = 0
	replAOF     = 1
	replReplica = 2
	replAll     = replAOF | replReplica
)

func (vm *VM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return vm.redisCall(L, false) },
		"error_reply":        redisErrorReply,
		"status_reply":       redisStatusReply,
		"sha1hex":            redisSha1hex,
		"log":                vm.redisLog,
		"setresp":            vm.redisSetresp,
		"set_repl":           redisSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      vm.redisACLCheck,
	})
	for name, v := range map[string]int{
		"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice, "LOG_WARNING": LogWarning,
		"REPL_NONE": replNone, "REPL_AOF": replAOF, "REPL_SLAVE": replReplica, "REPL_REPLICA": replReplica, "REPL_ALL": replAll,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(vm.opts.Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(vm.opts.Version)))
	return t
}

// versionNum packs "7.2.4" as Redis' 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	parts := strings.SplitN(v, ".", 3)
	for i := range 3 {
		x := 0
		if i < len(parts) {
			x, _ = strconv.Atoi(parts[i])
		}
		n = n<<8 | x&0xff
	}
	return n
}

// raise fails the running Lua code with a Redis error table {err=msg}, as
// Redis' luaPushError + luaError do.
func raise(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// errorTable is Redis' Lua error: a table with err holding "CODE message";
// a message without a code gets ERR.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(withErrorCode(msg)))
	return t
}

// withErrorCode gives a reply error without its "-" its code, as Redis'
// luaPushErrorBuff: "-CODE msg" keeps CODE, anything else gets ERR.
func withErrorCode(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "-"); ok {
		code, text, found := strings.Cut(rest, " ")
		if !found {
			return "ERR " + strings.TrimRight(code, "\r\n")
		}
		return code + " " + strings.TrimRight(text, "\r\n")
	}
	return "ERR " + strings.TrimRight(msg, "\r\n")
}

// redisCall is redis.call (raise true) and redis.pcall.
func (vm *VM) redisCall(L *lua.LState, raiseErrors bool) int {
	c := vm.cur.Load()
	fail := func(msg string) int {
		if raiseErrors {
			raise(L, msg)
		}
		L.Push(errorTable(L, msg))
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("Please specify at least one argument for this redis lib call")
	}
	// The arguments' bytes are copied into one buffer, fresh for each
	// command, since a command may keep its key until the script ends
	// (a key it signals to blocked clients); the slice of them is the
	// VM's, as a command's arguments are only valid while it runs.
	size := 0
	for i := range n {
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			size += len(v)
		case lua.LNumber:
			size += 24
		default:
			return fail("Lua redis lib command arguments must be strings or integers")
		}
	}
	if c == nil {
		return fail("redis.call can only be called inside a script invocation")
	}
	buf := make([]byte, 0, size)
	args := vm.args[:0]
	for i := range n {
		start := len(buf)
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = resp.AppendDouble(buf, float64(v))
		}
		args = append(args, buf[start:len(buf):len(buf)])
	}
	vm.args = args
	reply := c.caller.Call(args, c.proto)
	clear(args)
	if reply.Type == '-' || reply.Type == '!' {
		msg := "-" + reply.Err
		if raiseErrors {
			raise(L, msg)
		}
		L.Push(errorTable(L, msg))
		return 1
	}
	L.Push(replyToLua(L, reply, c.proto))
	return 1
}

// oneString is the single string argument of error_reply and
// status_reply.
func oneString(L *lua.LState) lua.LString {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		raise(L, "wrong number or type of arguments")
	}
	return s
}

func redisErrorReply(L *lua.LState) int {
	msg := string(oneString(L))
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func redisStatusReply(L *lua.LState) int {
	t := L.NewTable()
	t.RawSetString("ok", oneString(L))
	L.Push(t)
	return 1
}

func redisSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("wrong number of arguments")
	}
	L.Push(lua.LString(SHA1Hex([]byte(L.ToString(1)))))
	return 1
}

func (vm *VM) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raise(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		raise(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < LogDebug || level > LogWarning {
		raise(L, "Invalid debug level.")
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		parts = append(parts, luaToString(L.Get(i)))
	}
	if vm.opts.Log != nil {
		vm.opts.Log(level, strings.Join(parts, " "))
	}
	return 0
}

func (vm *VM) redisSetresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.setresp() requires one argument.")
	}
	v := int(L.CheckNumber(1))
	if v != 2 && v != 3 {
		raise(L, "RESP version must be 2 or 3.")
	}
	if c := vm.cur.Load(); c != nil {
		c.proto = v
	}
	return 0
}

func redisSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.set_repl() requires one argument.")
	}
	flags := int(L.CheckNumber(1))
	if flags&^replAll != 0 {
		raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

func (vm *VM) redisACLCheck(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		raise(L, "Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := range n {
		args[i] = []byte(L.CheckString(i + 1))
	}
	allowed := true
	if c := vm.cur.Load(); c != nil {
		if checker, ok := c.caller.(ACLChecker); ok {
			var known bool
			if allowed, known = checker.ACLCheck(args); !known {
				raise(L, "Invalid command passed to redis.acl_check_cmd()")
			}
		}
	}
	L.Push(lua.LBool(allowed))
	return 1
}
