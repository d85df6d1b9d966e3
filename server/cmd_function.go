package server

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Functions (Redis 7.0): libraries of Lua functions, loaded with FUNCTION
// LOAD and called with FCALL. Each library's code is stored in the engine
// under functionPrefix + its name, written in the batch that loads it, so
// libraries survive restarts and are in backups; FLUSHALL, which deletes
// keys, leaves them, as in Redis. The functions VM loads them from the
// engine when first needed.
const (
	functionPrefix = 'f'
	functionEnd    = functionPrefix + 1
)

func init() {
	const g = "scripting"
	register(
		spec{name: "fcall", arity: -3, flags: flagMovableKeys | flagStale | flagNoMandatoryKeys, group: g, since: "7.0.0",
			summary: "Invokes a function.", run: cmdFcall},
		spec{name: "fcall_ro", arity: -3, flags: flagMovableKeys | flagStale | flagReadonly | flagNoMandatoryKeys, group: g, since: "7.0.0",
			summary: "Invokes a read-only function.", run: cmdFcall},
		spec{name: "function", arity: -2, group: g, since: "7.0.0", summary: "A container for function commands.",
			subs: []spec{
				{name: "load", arity: -3, flags: flagWrite | flagDenyOOM, since: "7.0.0", summary: "Creates a library.", run: cmdFunctionLoad},
				{name: "delete", arity: 3, flags: flagWrite, since: "7.0.0", summary: "Deletes a library and its functions.", run: cmdFunctionDelete},
				{name: "flush", arity: -2, flags: flagWrite, since: "7.0.0", summary: "Deletes all libraries and functions.", run: cmdFunctionFlush},
				{name: "list", arity: -2, since: "7.0.0", summary: "Returns information about all libraries.", run: cmdFunctionList},
				{name: "dump", arity: 2, since: "7.0.0", summary: "Dumps all libraries into a serialized binary payload.", run: cmdFunctionDump},
				{name: "restore", arity: -3, flags: flagWrite | flagDenyOOM, since: "7.0.0", summary: "Restores all libraries from a payload.", run: cmdFunctionRestore},
				{name: "stats", arity: 2, since: "7.0.0", summary: "Returns information about a function during execution.", run: cmdFunctionStats},
				{name: "kill", arity: 2, since: "7.0.0", summary: "Terminates a function during execution.", run: cmdFunctionKill},
				{name: "help", arity: 2, since: "7.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
	)
}

// functionVM returns the functions VM, made and filled from the engine on
// first use; s.scripts.mu is held.
func (s *Server) functionVM() (*luascript.VM, error) {
	if s.scripts.functions != nil {
		return s.scripts.functions, nil
	}
	vm := luascript.New(s.vmOptions())
	it, err := s.ks.latest().NewIter(&lsmgo.IterOptions{LowerBound: []byte{functionPrefix}, UpperBound: []byte{functionEnd}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if _, err := vm.LoadLibrary(bytes.Clone(it.Value()), true); err != nil {
			// Only code that loaded is stored; a library that no
			// longer loads (a future incompatibility) is reported
			// and left in the engine.
			s.log.Error("stored function library does not load", "library", string(it.Key()[1:]), "err", err)
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	s.scripts.functions = vm
	return vm, nil
}

// withFunctions runs f with the functions VM under the scripting mutex.
func (c *conn) withFunctions(f func(vm *luascript.VM) error) error {
	c.s.scripts.mu.Lock()
	defer c.s.scripts.mu.Unlock()
	vm, err := c.s.functionVM()
	if err != nil {
		return err
	}
	err = f(vm)
	c.s.scripts.recount()
	return err
}

func functionKey(name string) []byte { return append([]byte{functionPrefix}, name...) }

func cmdFcall(c *conn, cmd *command, args [][]byte) error {
	ix := c.s.scripts.functionIndex.Load()
	if ix == nil {
		// The functions VM is made, and indexed, on first use.
		if err := c.withFunctions(func(*luascript.VM) error { return nil }); err != nil {
			return err
		}
		ix = c.s.scripts.functionIndex.Load()
	}
	vm := ix.vm
	f, found := ix.lookup(args[1])
	if !found {
		return redisError("ERR Function not found")
	}
	keys, argv, err := scriptArgs(args[2:], "ERR Bad number of keys provided")
	switch {
	case err != nil:
		return err
	case cmd.flags&flagReadonly != 0 && !f.NoWrites():
		return redisError("ERR Can not execute a script with write flag using *_ro command.")
	}
	r := &runningScript{conn: c, vm: vm, name: f.Name, command: cmd.name, function: true, args: args}
	return c.runScript(r, f.NoWrites(), func(w *resp.Writer, caller luascript.Caller) {
		// The library may have been replaced while this call waited
		// for the stripes.
		if f, found = vm.Function(f.Name); !found {
			w.Error("ERR Function not found")
			return
		}
		vm.Call(w, f, keys, argv, caller)
	})
}

func cmdFunctionLoad(c *conn, _ *command, args [][]byte) error {
	replace := false
	rest := args[2:]
	for len(rest) > 1 {
		if !is(rest[0], "REPLACE") {
			return redisError("ERR Unknown option given: " + string(rest[0]))
		}
		replace = true
		rest = rest[1:]
	}
	code := bytes.Clone(rest[0])
	return c.withFunctions(func(vm *luascript.VM) error {
		old := libraryCode(vm)
		name, err := vm.LoadLibrary(code, replace)
		if err != nil {
			return redisError(err.Error())
		}
		c.batch.Set(functionKey(name), code)
		if err := c.commitLibraries(vm, old); err != nil {
			return err
		}
		c.wr.BulkString(name)
		return nil
	})
}

// libraryCode is every library's code by name, what restoreLibraries
// puts back when the engine refuses a change.
func libraryCode(vm *luascript.VM) map[string][]byte {
	out := map[string][]byte{}
	for _, lib := range vm.Libraries() {
		out[lib.Name] = lib.Code
	}
	return out
}

func restoreLibraries(vm *luascript.VM, libs map[string][]byte) {
	vm.FlushLibraries()
	for _, code := range libs {
		vm.LoadLibrary(code, true)
	}
}

// commitLibraries commits the batch holding a change of the libraries;
// when the engine refuses it, the VM gets back the libraries old held.
func (c *conn) commitLibraries(vm *luascript.VM, old map[string][]byte) error {
	if err := c.commit(); err != nil {
		restoreLibraries(vm, old)
		return err
	}
	return nil
}

func cmdFunctionDelete(c *conn, _ *command, args [][]byte) error {
	return c.withFunctions(func(vm *luascript.VM) error {
		name := string(args[2])
		old := libraryCode(vm)
		if !vm.DeleteLibrary(name) {
			return redisError("ERR Library not found")
		}
		c.batch.Delete(functionKey(name))
		if err := c.commitLibraries(vm, old); err != nil {
			return err
		}
		c.ok()
		return nil
	})
}

func cmdFunctionFlush(c *conn, _ *command, args [][]byte) error {
	switch {
	case len(args) > 3:
		return redisError("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
	case len(args) == 3 && !is(args[2], "SYNC") && !is(args[2], "ASYNC"):
		return redisError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
	}
	return c.withFunctions(func(vm *luascript.VM) error {
		old := libraryCode(vm)
		vm.FlushLibraries()
		for name := range old {
			c.batch.Delete(functionKey(name))
		}
		if err := c.commitLibraries(vm, old); err != nil {
			return err
		}
		c.ok()
		return nil
	})
}

func cmdFunctionList(c *conn, _ *command, args [][]byte) error {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		switch {
		case is(args[i], "WITHCODE") && !withCode:
			withCode = true
		case is(args[i], "LIBRARYNAME") && pattern == nil:
			if i+1 >= len(args) {
				return redisError("ERR library name argument was not given")
			}
			i++
			pattern = args[i]
		default:
			return redisError("ERR Unknown argument " + string(args[i]))
		}
	}
	return c.withFunctions(func(vm *luascript.VM) error {
		var libs []*luascript.Library
		for _, lib := range vm.Libraries() {
			if pattern == nil || globMatch(pattern, []byte(lib.Name), false) {
				libs = append(libs, lib)
			}
		}
		c.wr.ArrayHeader(len(libs))
		for _, lib := range libs {
			c.writeLibrary(lib, withCode)
		}
		return nil
	})
}

func (c *conn) writeLibrary(lib *luascript.Library, withCode bool) {
	w := c.wr
	if withCode {
		w.MapHeader(4)
	} else {
		w.MapHeader(3)
	}
	w.BulkString("library_name")
	w.BulkString(lib.Name)
	w.BulkString("engine")
	w.BulkString("LUA")
	w.BulkString("functions")
	w.ArrayHeader(len(lib.Functions))
	for _, f := range lib.Functions {
		w.MapHeader(3)
		w.BulkString("name")
		w.BulkString(f.Name)
		w.BulkString("description")
		if f.Description != nil {
			w.BulkString(*f.Description)
		} else {
			w.Null()
		}
		w.BulkString("flags")
		w.SetHeader(len(f.Flags))
		for _, flag := range f.Flags {
			w.SimpleString(flag)
		}
	}
	if withCode {
		w.BulkString("library_code")
		w.Bulk(lib.Code)
	}
}

func cmdFunctionStats(c *conn, _ *command, _ [][]byte) error {
	w := c.wr
	w.MapHeader(2)
	w.BulkString("running_script")
	if r := c.s.scripts.running.Load(); r != nil && r.function {
		w.MapHeader(3)
		w.BulkString("name")
		w.BulkString(r.name)
		w.BulkString("command")
		w.ArrayHeader(len(r.args))
		for _, a := range r.args {
			w.Bulk(a)
		}
		w.BulkString("duration_ms")
		w.Int(time.Since(r.start).Milliseconds())
	} else {
		w.Null()
	}
	// The counts need the functions VM, which a running function holds:
	// then they are those of its last change.
	if c.s.scripts.mu.TryLock() {
		c.s.functionVM()
		c.s.scripts.recount()
		c.s.scripts.mu.Unlock()
	}
	libs, funcs := c.s.scripts.libraries.Load(), c.s.scripts.functionCount.Load()
	w.BulkString("engines")
	w.MapHeader(1)
	w.BulkString("LUA")
	w.MapHeader(2)
	w.BulkString("libraries_count")
	w.Int(libs)
	w.BulkString("functions_count")
	w.Int(funcs)
	return nil
}

func cmdFunctionKill(c *conn, _ *command, _ [][]byte) error { return c.killScript(true) }

func cmdFunctionDump(c *conn, _ *command, _ [][]byte) error {
	return c.withFunctions(func(vm *luascript.VM) error {
		var codes [][]byte
		for _, lib := range vm.Libraries() {
			codes = append(codes, lib.Code)
		}
		c.wr.Bulk(dumpFunctions(codes))
		return nil
	})
}

func cmdFunctionRestore(c *conn, _ *command, args [][]byte) error {
	policy := "APPEND"
	if len(args) > 4 {
		return redisError("ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.")
	}
	if len(args) == 4 {
		policy = strings.ToUpper(string(args[3]))
		if policy != "FLUSH" && policy != "APPEND" && policy != "REPLACE" {
			return redisError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	codes, err := undumpFunctions(args[2])
	if err != nil {
		return err
	}
	return c.withFunctions(func(vm *luascript.VM) error {
		old := libraryCode(vm)
		if policy == "FLUSH" {
			vm.FlushLibraries()
			for name := range old {
				c.batch.Delete(functionKey(name))
			}
		}
		for _, code := range codes {
			var name string
			var err error
			if n, nerr := luascript.LibraryName(code); nerr == nil && policy == "APPEND" &&
				slices.ContainsFunc(vm.Libraries(), func(l *luascript.Library) bool { return strings.EqualFold(l.Name, n) }) {
				// RESTORE words the clash differently from LOAD.
				err = redisError("ERR Library " + n + " already exists")
			} else {
				name, err = vm.LoadLibrary(code, policy != "APPEND")
			}
			if err != nil {
				c.batch.Reset()
				restoreLibraries(vm, old)
				return redisError(err.Error())
			}
			c.batch.Set(functionKey(name), code)
		}
		if err := c.commitLibraries(vm, old); err != nil {
			return err
		}
		c.ok()
		return nil
	})
}
