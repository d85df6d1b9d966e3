package luascript

import (
	"errors"
	"slices"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Functions (Redis 7): a library is Lua code whose first line is
// "#!lua name=<library>" and which, when loaded, calls
// redis.register_function for each function it offers. Loading runs the
// code with a globals table of its own, holding only redis, which holds only
// register_function, log and the constants; the registered functions then
// run with the ordinary globals. A VM serving functions serves nothing
// else, as Redis keeps them in a Lua state of their own.

// Library is a loaded library.
type Library struct {
	Name string
	Code []byte
	// Functions are in the order the code registered them.
	Functions []*Function
}

// Function is one registered function.
type Function struct {
	Name        string
	Description *string
	// Flags are as registered: no-writes, allow-oom, allow-stale,
	// no-cluster, allow-cross-slot-keys.
	Flags []string
	fn    *lua.LFunction
}

// NoWrites reports whether the function was registered with no-writes,
// which FCALL_RO requires.
func (f *Function) NoWrites() bool { return slices.Contains(f.Flags, "no-writes") }

var functionFlags = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// loadTimeout bounds the run of a library's code, as Redis' does.
const loadTimeout = 500 * time.Millisecond

var errLoadTimeout error = stopReason("FUNCTION LOAD timeout")

// functionState is a functions VM's libraries and the load environment.
type functionState struct {
	libs  map[string]*Library
	funcs map[string]*Function
	// loadEnv is the globals a library's code sees while it loads.
	loadEnv *lua.LTable
	// loading collects the functions of the library being loaded.
	loading *Library
}

// LoadLibrary loads code as a library: replacing a library of the same
// name only if replace is set. Errors are Redis' reply texts.
func (vm *VM) LoadLibrary(code []byte, replace bool) (string, error) {
	name, err := LibraryName(code)
	if err != nil {
		return "", err
	}
	fs := vm.functionState()
	old := fs.libs[strings.ToLower(name)]
	if old != nil && !replace {
		return "", errors.New("ERR Library '" + name + "' already exists")
	}
	lib, err := vm.runLibrary(name, code)
	if err != nil {
		return "", err
	}
	for _, f := range lib.Functions {
		if other, ok := fs.funcs[strings.ToLower(f.Name)]; ok && (old == nil || !slices.Contains(old.Functions, other)) {
			return "", errors.New("ERR Function " + f.Name + " already exists")
		}
	}
	vm.DeleteLibrary(name)
	fs.libs[strings.ToLower(name)] = lib
	for _, f := range lib.Functions {
		fs.funcs[strings.ToLower(f.Name)] = f
	}
	return name, nil
}

// LibraryName reads a library's name from its "#!lua name=<library>"
// line.
func LibraryName(code []byte) (string, error) {
	s := string(code)
	if !strings.HasPrefix(s, "#!") {
		return "", errors.New("ERR Missing library metadata")
	}
	line, _, _ := strings.Cut(s, "\n")
	fields := strings.Fields(line[2:])
	if len(fields) == 0 || !strings.EqualFold(fields[0], "lua") {
		engine, _, _ := strings.Cut(line[2:], " ")
		return "", errors.New("ERR Engine '" + engine + "' not found")
	}
	name := ""
	for _, f := range fields[1:] {
		v, ok := strings.CutPrefix(f, "name=")
		if !ok {
			return "", errors.New("ERR Invalid metadata value given: " + f)
		}
		if name != "" {
			return "", errors.New("ERR Invalid metadata value, name argument was given multiple times")
		}
		// Redis splits the line as its command line: quotes may
		// surround the name.
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		name = v
	}
	if name == "" {
		return "", errors.New("ERR Library name was not given")
	}
	if !validName(name) {
		return "", errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	return name, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// functionState makes the functions' state on first use.
func (vm *VM) functionState() *functionState {
	if vm.funcs != nil {
		return vm.funcs
	}
	L := vm.L
	fs := &functionState{libs: map[string]*Library{}, funcs: map[string]*Function{}}
	api := L.NewTable()
	L.SetFuncs(api, map[string]lua.LGFunction{
		"register_function": vm.registerFunction,
		"log":               vm.redisLog,
	})
	real := vm.backing(vm.globals.RawGetString("redis").(*lua.LTable))
	real.ForEach(func(k, v lua.LValue) {
		if _, isFn := v.(*lua.LFunction); !isFn {
			api.RawSet(k, v)
		}
	})
	L.SetMetatable(api, L.GetMetatable(vm.globals))
	// As in Redis, the load environment holds redis and nothing else:
	// not even the base functions or the libraries.
	fs.loadEnv = L.NewTable()
	fs.loadEnv.RawSetString("redis", vm.readonlyProxy(api))
	L.SetMetatable(fs.loadEnv, L.GetMetatable(vm.globals))
	vm.funcs = fs
	return fs
}

// runLibrary runs a library's code with the load environment and returns
// what it registered.
func (vm *VM) runLibrary(name string, code []byte) (*Library, error) {
	fs := vm.functionState()
	fn, err := vm.compile(code, "user_function")
	if err != nil {
		return nil, errors.New("ERR Error compiling function: " + err.Error())
	}
	lib := &Library{Name: name, Code: code}
	fs.loading = lib
	defer func() { fs.loading = nil }()
	proxyMeta := vm.L.GetMetatable(vm.L.Env).(*lua.LTable)
	proxyMeta.RawSetString("__index", fs.loadEnv)
	defer proxyMeta.RawSetString("__index", vm.globals)
	c := newCall(nil, "")
	timer := time.AfterFunc(loadTimeout, func() { c.stop(errLoadTimeout) })
	defer timer.Stop()
	var out strings.Builder
	w := resp.NewWriter(&out)
	ok := vm.runCall(w, c, fn)
	w.Flush()
	if !ok {
		reply := strings.TrimSuffix(strings.TrimPrefix(out.String(), "-"), "\r\n")
		if c.stopped() && c.reason() == errLoadTimeout {
			reply = errLoadTimeout.Error()
		}
		// Redis reports the failure without the script's name.
		reply, _, _ = strings.Cut(reply, " script: ")
		return nil, errors.New("ERR Error registering functions: " + reply)
	}
	if len(lib.Functions) == 0 {
		return nil, errors.New("ERR No functions registered")
	}
	return lib, nil
}

// registerFunction is redis.register_function(name, callback) and
// redis.register_function{function_name=, callback=, flags=, description=}.
func (vm *VM) registerFunction(L *lua.LState) int {
	fs := vm.functionState()
	if fs.loading == nil {
		raise(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &Function{}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		vm.namedRegistration(L, t, f)
	case 2:
		name, ok := L.Get(1).(lua.LString)
		if !ok {
			raise(L, "first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raise(L, "second argument to redis.register_function must be a function")
		}
		f.Name, f.fn = string(name), fn
	default:
		raise(L, "wrong number of arguments to redis.register_function")
	}
	if !validName(f.Name) {
		raise(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	for _, other := range fs.loading.Functions {
		if strings.EqualFold(other.Name, f.Name) {
			raise(L, "Function already exists in the library")
		}
	}
	fs.loading.Functions = append(fs.loading.Functions, f)
	return 0
}

func (vm *VM) namedRegistration(L *lua.LState, t *lua.LTable, f *Function) {
	t.ForEach(func(k, v lua.LValue) {
		key, ok := k.(lua.LString)
		if !ok {
			raise(L, "named argument key given to redis.register_function is not a string")
		}
		switch key {
		case "function_name":
			s, ok := v.(lua.LString)
			if !ok {
				raise(L, "function_name argument given to redis.register_function must be a string")
			}
			f.Name = string(s)
		case "description":
			s, ok := v.(lua.LString)
			if !ok {
				raise(L, "description argument given to redis.register_function must be a string")
			}
			d := string(s)
			f.Description = &d
		case "callback":
			fn, ok := v.(*lua.LFunction)
			if !ok {
				raise(L, "callback argument given to redis.register_function must be a function")
			}
			f.fn = fn
		case "flags":
			flags, ok := v.(*lua.LTable)
			if !ok {
				raise(L, "flags argument to redis.register_function must be a table representing function flags")
			}
			flags.ForEach(func(_, fv lua.LValue) {
				s, ok := fv.(lua.LString)
				if !ok || !slices.Contains(functionFlags, string(s)) {
					raise(L, "unknown flag given")
				}
				f.Flags = append(f.Flags, string(s))
			})
		default:
			raise(L, "unknown argument given to redis.register_function")
		}
	})
	if f.Name == "" {
		raise(L, "redis.register_function must get a function name argument")
	}
	if f.fn == nil {
		raise(L, "redis.register_function must get a callback argument")
	}
}

// DeleteLibrary forgets a library and its functions.
func (vm *VM) DeleteLibrary(name string) bool {
	fs := vm.functionState()
	lib, ok := fs.libs[strings.ToLower(name)]
	if !ok {
		return false
	}
	for _, f := range lib.Functions {
		delete(fs.funcs, strings.ToLower(f.Name))
	}
	delete(fs.libs, strings.ToLower(name))
	return true
}

// FlushLibraries forgets every library.
func (vm *VM) FlushLibraries() {
	fs := vm.functionState()
	clear(fs.libs)
	clear(fs.funcs)
}

// Libraries lists the loaded libraries by name.
func (vm *VM) Libraries() []*Library {
	fs := vm.functionState()
	out := make([]*Library, 0, len(fs.libs))
	for _, lib := range fs.libs {
		out = append(out, lib)
	}
	slices.SortFunc(out, func(a, b *Library) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Function finds a loaded function by name, which, like a library's, is
// case-insensitive as in Redis.
func (vm *VM) Function(name string) (*Function, bool) {
	f, ok := vm.functionState().funcs[strings.ToLower(name)]
	return f, ok
}

// Call runs function f with keys and args, writing its reply to w.
func (vm *VM) Call(w *resp.Writer, f *Function, keys, args [][]byte, caller Caller) {
	vm.run(w, f.fn, f.Name, caller, stringsTable(vm.L, keys), stringsTable(vm.L, args))
}
