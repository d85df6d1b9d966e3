package luascript

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Caller runs the commands a script sends with redis.call and redis.pcall.
type Caller interface {
	// Call runs one command and returns its reply in RESP version proto
	// (2, or 3 after redis.setresp(3)). Every refusal — the command's own
	// error, or the server's refusal to run it from a script — is a reply
	// of type '-'.
	Call(args [][]byte, proto int) resp.Value
}

// ACLChecker is what a Caller implements to answer redis.acl_check_cmd;
// without it every known command is allowed.
type ACLChecker interface {
	// ACLCheck reports whether the user may run args, and whether the
	// command exists at all.
	ACLCheck(args [][]byte) (allowed, known bool)
}

// Errors a Caller returns, in Redis' words, for commands a script may not
// run.
const (
	ErrUnknownCommand = "ERR Unknown Redis command called from script"
	ErrWrongArity     = "ERR Wrong number of args calling Redis command from script"
	ErrNotAllowed     = "ERR This Redis command is not allowed from script"
	ErrWriteReadOnly  = "ERR Write commands are not allowed from read-only scripts."
)

// Options configure a VM. The zero value is valid.
type Options struct {
	// MemoryLimit bounds how far the Go heap may grow, above its size
	// when a script started, before the script is stopped with Lua's
	// "not enough memory". Zero means DefaultMemoryLimit.
	MemoryLimit int64
	// Version is the Redis version redis.REDIS_VERSION reports.
	Version string
	// Log receives redis.log's messages at Redis' log levels (LogDebug …
	// LogWarning); nil discards them.
	Log func(level int, msg string)
}

// DefaultMemoryLimit is the heap growth a script may cause by default.
// Redis scripts rarely hold more than a few megabytes; the bound exists so
// that a string or table bomb stops the script instead of the process.
const DefaultMemoryLimit = 512 << 20

// Redis' log levels, as redis.LOG_* expose them.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Limits of the Lua state. maxCallFrames is Lua 5.1's LUAI_MAXCALLS; the
// value stack grows on demand up to maxStackValues (16 bytes each), in
// steps of stackGrowStep: gopher-lua grows it by a fixed step, so a small
// step makes pushing n values cost O(n²) copies inside one Go call, where
// no instruction check can stop it.
const (
	maxCallFrames  = 20000
	initialStack   = 1024
	stackGrowStep  = 1 << 16
	maxStackValues = 1 << 20
)

// stopReason is why a script was stopped, worded as Redis words it.
type stopReason string

func (r stopReason) Error() string { return string(r) }

// ErrKilled is the reason Kill gives for SCRIPT KILL and FUNCTION KILL.
var ErrKilled error = stopReason("Script killed by user with SCRIPT KILL...")

// errNoMemory is the reason the memory watchdog stops a script with.
var errNoMemory error = stopReason("not enough memory")

// VM is one Lua state with Redis' environment. Scripts compiled into it
// stay cached by their SHA1 until Flush.
type VM struct {
	L    *lua.LState
	opts Options
	// globals is the real global table; scripts see it through the
	// read-only proxy that _G names.
	globals *lua.LTable
	// readonly maps each read-only proxy to the table behind it.
	readonly map[*lua.LTable]*lua.LTable
	// scripts holds every loaded script's body and, once compiled into
	// this state, its function.
	scripts map[string]*script
	rand    rand48
	// errHandler turns any error a script raises into Redis' error table
	// (err, source, line).
	errHandler *lua.LFunction
	cur        atomic.Pointer[call]
	// stopped records that the last call was stopped (Kill, the memory
	// watchdog) rather than returning or failing on its own.
	stopped bool
	// cjsonConfig is cjson's encode_* / decode_* settings.
	cjson cjsonConfig
	// globalsMeta and stringMeta are what getmetatable returns for _G
	// and for strings.
	globalsMeta, stringMeta *lua.LTable
	// funcs is the libraries of a VM serving functions; nil until the
	// first is loaded.
	funcs *functionState
	// watchdog bounds the memory of the running call.
	watchdog watchdog
	// args holds the arguments of the command redis.call runs.
	args [][]byte
}

type script struct {
	body []byte
	fn   *lua.LFunction
}

// New makes a VM.
func New(opts Options) *VM {
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	vm := &VM{opts: opts, scripts: map[string]*script{}}
	vm.watchdog.limit = opts.MemoryLimit
	vm.rand.seed(defaultSeed)
	vm.cjson = defaultCjsonConfig()
	vm.newState()
	return vm
}

// newState builds the Lua state and its environment.
func (vm *VM) newState() {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       maxCallFrames,
		MinimizeStackMemory: true,
		RegistrySize:        initialStack,
		RegistryMaxSize:     maxStackValues,
		RegistryGrowStep:    stackGrowStep,
	})
	vm.L = L
	vm.readonly = map[*lua.LTable]*lua.LTable{}
	vm.openLibs()
	vm.errHandler = L.NewFunction(vm.handleError)
	L.G.Global.RawSetString("__redis__err__handler", vm.errHandler)
	vm.protectGlobals()
}

// rebuild replaces a Lua state that a Go panic left inconsistent. The
// scripts stay loaded; they compile again when next run.
func (vm *VM) rebuild() {
	vm.L.Close()
	vm.newState()
	for _, s := range vm.scripts {
		s.fn = nil
	}
	if vm.funcs != nil {
		libs := vm.funcs.libs
		vm.funcs = nil
		for _, lib := range libs {
			// They loaded into the old state; they load again.
			vm.LoadLibrary(lib.Code, true)
		}
	}
}

// Close releases the Lua state.
func (vm *VM) Close() { vm.L.Close() }

// SHA1Hex is the lower-case hex SHA1 of body, a script's name.
func SHA1Hex(body []byte) string {
	sum := sha1.Sum(body)
	return hex.EncodeToString(sum[:])
}

// Load compiles body and caches it under its SHA1, which it returns. A
// script that does not compile is not cached and the error is Redis'
// "Error compiling script" reply text.
func (vm *VM) Load(body []byte) (string, error) {
	sha := SHA1Hex(body)
	if _, ok := vm.scripts[sha]; ok {
		return sha, nil
	}
	fn, err := vm.compile(body, "user_script")
	if err != nil {
		return "", errors.New("ERR Error compiling script (new function): " + err.Error())
	}
	vm.scripts[sha] = &script{body: bytes.Clone(body), fn: fn}
	return sha, nil
}

// compile parses body as a chunk named name whose globals are the
// read-only proxy.
func (vm *VM) compile(body []byte, name string) (*lua.LFunction, error) {
	src := string(body)
	if strings.HasPrefix(src, "#!") {
		// A shebang line ("#!lua flags=…") is the server's; made a
		// comment, it keeps the lines numbered as Redis numbers them.
		src = "--" + src
	}
	fn, err := vm.L.Load(strings.NewReader(src), name)
	if err != nil {
		return nil, errors.New(compileErrorText(err))
	}
	fn.Env = vm.L.Env
	// A chunk is a vararg function, and gopher-lua's Lua 5.0
	// compatibility builds it an arg table on every call unless its body
	// uses "...": a map allocated per EVALSHA (8% of a short script's
	// CPU). A chunk has no local named arg (only nested vararg
	// functions do), so nothing can read the table: drop it.
	fn.Proto.IsVarArg &^= lua.VarArgNeedsArg
	return fn, nil
}

// compileErrorText words a syntax error as Lua does, "chunk:line: what
// near 'token'", from gopher-lua's "chunk line:L(column:C) near 'token':
// what". What it says is gopher-lua's own ("parse error" where Lua says
// what it expected).
func compileErrorText(err error) string {
	msg := err.Error()
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) {
		if s, ok := apiErr.Object.(lua.LString); ok {
			msg = string(s)
		}
	}
	if m := gopherSyntaxError.FindStringSubmatch(msg); m != nil {
		return m[1] + ":" + m[2] + ": " + strings.TrimSpace(m[4]) + " near " + m[3]
	}
	return msg
}

var gopherSyntaxError = regexp.MustCompile(`(?s)^(\S+) line:(\d+)\(column:\d+\) near (.*?):\s*(.*)$`)

// Exists reports whether a script with this SHA1 is cached.
func (vm *VM) Exists(sha string) bool {
	_, ok := vm.scripts[strings.ToLower(sha)]
	return ok
}

// ScriptCount is how many scripts are cached.
func (vm *VM) ScriptCount() int { return len(vm.scripts) }

// Flush forgets every cached script.
func (vm *VM) Flush() { clear(vm.scripts) }

// Eval runs the cached script sha with KEYS and ARGV set, writing its reply
// to w. It reports false, writing nothing, when no such script is cached.
func (vm *VM) Eval(w *resp.Writer, sha string, keys, argv [][]byte, caller Caller) bool {
	sha = strings.ToLower(sha)
	s, ok := vm.scripts[sha]
	if !ok {
		return false
	}
	if s.fn == nil {
		fn, err := vm.compile(s.body, "user_script")
		if err != nil { // it compiled when loaded; not reached
			w.Error(err.Error())
			return true
		}
		s.fn = fn
	}
	fn := s.fn
	vm.globals.RawSetString("KEYS", stringsTable(vm.L, keys))
	vm.globals.RawSetString("ARGV", stringsTable(vm.L, argv))
	vm.run(w, fn, sha, caller)
	return true
}

// Stopped reports whether the last script was stopped by Kill or for
// using too much memory: its writes should be dropped, as it did not
// finish.
func (vm *VM) Stopped() bool { return vm.stopped }

// Running reports whether a script is running now.
func (vm *VM) Running() bool { return vm.cur.Load() != nil }

// Kill stops the running script, if any, with reason (ErrKilled for
// SCRIPT KILL). The script sees an error it cannot catch.
func (vm *VM) Kill(reason error) bool {
	c := vm.cur.Load()
	if c == nil {
		return false
	}
	c.stop(reason)
	return true
}

// run calls fn with args and writes its result or error.
func (vm *VM) run(w *resp.Writer, fn *lua.LFunction, name string, caller Caller, args ...lua.LValue) {
	vm.runCall(w, newCall(caller, name), fn, args...)
}

// runCall is run with the call made; it reports whether fn returned
// without error.
func (vm *VM) runCall(w *resp.Writer, c *call, fn *lua.LFunction, args ...lua.LValue) (ok bool) {
	name := c.name
	vm.cur.Store(c)
	L := vm.L
	defer func() {
		// gopher-lua fails to catch an error raised while it calls the
		// error handler of a call whose value stack is full; the panic
		// reaches here with the state's stacks wound up.
		if r := recover(); r != nil {
			vm.cur.Store(nil)
			vm.rebuild()
			w.Error("ERR Error running script " + name + ", " + truncate(fmt.Sprint(r), 100))
			ok = false
		}
	}()
	L.SetContext(c)
	vm.watchdog.start(c)
	defer vm.watchdog.finish()
	top := L.GetTop()
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), 1, vm.errHandler)
	vm.stopped = c.stopped()
	L.RemoveContext()
	vm.cur.Store(nil)
	if err != nil {
		writeError(w, name, err)
	} else {
		vm.writeReply(w, c, L.Get(-1))
	}
	L.SetTop(top)
	return err == nil
}

// handleError is the error handler of every script call: like Redis' own
// (__redis__err__handler) it turns the error into a table with err (a
// Redis error, "ERR " added to a plain message), source and line, the
// position of the Lua code that raised it.
func (vm *VM) handleError(L *lua.LState) int {
	v := L.Get(1)
	if c := vm.cur.Load(); c != nil && c.stopped() {
		v = lua.LString(c.reason().Error())
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+luaToString(v)))
	}
	if source, line, ok := luaPosition(L); ok {
		t.RawSetString("source", lua.LString(source))
		t.RawSetString("line", lua.LNumber(line))
	}
	L.Push(t)
	return 1
}

// luaPosition finds the innermost Lua function on the stack and its
// current line, as "@chunk" and the line number.
func luaPosition(L *lua.LState) (string, int, bool) {
	for level := 0; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return "", 0, false
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return "", 0, false
		}
		if dbg.What != "G" && dbg.CurrentLine > 0 {
			return "@" + dbg.Source, dbg.CurrentLine, true
		}
	}
}

// writeError writes a script's failure as Redis does: the err field, then
// " script: name, on source:line." when the position is known.
func writeError(w *resp.Writer, name string, err error) {
	var apiErr *lua.ApiError
	var obj lua.LValue = lua.LString(err.Error())
	if errors.As(err, &apiErr) {
		obj = apiErr.Object
	}
	t, ok := obj.(*lua.LTable)
	if !ok {
		w.Error("ERR Error running script " + name + ", " + truncate(luaToString(obj), 100))
		return
	}
	msg := luaToString(t.RawGetString("err"))
	source, line := t.RawGetString("source"), t.RawGetString("line")
	if source != lua.LNil && line != lua.LNil {
		msg += " script: " + name + ", on " + luaToString(source) + ":" + luaToString(line) + "."
	}
	w.Error(sanitizeLine(msg))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sanitizeLine replaces CR and LF, which cannot appear in a status or
// error line, with spaces, as Redis does.
func sanitizeLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// stringsTable makes a Lua array of strings.
func stringsTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for _, it := range items {
		t.Append(lua.LString(it))
	}
	return t
}

// luaToString converts a value as Lua's tostring does for strings and
// numbers (numbers as Lua 5.1's "%.14g").
func luaToString(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return formatNumber(float64(v))
	case lua.LBool:
		if v {
			return "true"
		}
		return "false"
	case *lua.LNilType:
		return "nil"
	}
	return v.String()
}

// formatNumber prints a number as Lua 5.1 does ("%.14g").
func formatNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	}
	return formatG(f, 14)
}
