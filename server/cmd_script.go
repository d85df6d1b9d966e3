package server

import (
	"bytes"
	"strings"

	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

func init() {
	const g = "scripting"
	// EVAL's keys follow its numkeys argument: movable keys, so EXEC
	// holding a queued EVAL takes every stripe (txLocks).
	f := flagMovableKeys | flagStale | flagNoMandatoryKeys
	register(
		spec{name: "eval", arity: -3, flags: f, group: g, since: "2.6.0",
			summary: "Executes a server-side Lua script.", run: cmdEval},
		spec{name: "evalsha", arity: -3, flags: f, group: g, since: "2.6.0",
			summary: "Executes a server-side Lua script by SHA1 digest.", run: cmdEval},
		spec{name: "eval_ro", arity: -3, flags: f | flagReadonly, group: g, since: "7.0.0",
			summary: "Executes a read-only server-side Lua script.", run: cmdEval},
		spec{name: "evalsha_ro", arity: -3, flags: f | flagReadonly, group: g, since: "7.0.0",
			summary: "Executes a read-only server-side Lua script by SHA1 digest.", run: cmdEval},
		spec{name: "script", arity: -2, group: g, since: "2.6.0", summary: "A container for Lua scripts management commands.",
			subs: []spec{
				{name: "load", arity: 3, flags: flagStale, since: "2.6.0", summary: "Loads a server-side Lua script to the script cache.", run: cmdScriptLoad},
				{name: "exists", arity: -3, flags: flagStale, since: "2.6.0", summary: "Determines whether server-side Lua scripts exist in the script cache.", run: cmdScriptExists},
				{name: "flush", arity: -2, flags: flagStale, since: "2.6.0", summary: "Removes all server-side Lua scripts from the script cache.", run: cmdScriptFlush},
				{name: "kill", arity: 2, flags: flagStale, since: "2.6.0", summary: "Terminates a server-side Lua script during execution.", run: cmdScriptKill},
				{name: "help", arity: 2, since: "5.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
	)
}

// scriptArgs splits numkeys keys... args... as EVAL and FCALL take them.
// notInt is the error for a numkeys that is not an integer, which differs
// between the two.
func scriptArgs(rest [][]byte, notInt string) (keys, argv [][]byte, err error) {
	n, isInt := parseInt(rest[0])
	switch {
	case !isInt:
		return nil, nil, redisError(notInt)
	case n < 0:
		return nil, nil, redisError("ERR Number of keys can't be negative")
	case n > int64(len(rest)-1):
		return nil, nil, redisError("ERR Number of keys can't be greater than number of args")
	}
	return rest[1 : 1+n], rest[1+n:], nil
}

// cmdEval serves EVAL, EVALSHA and their _RO forms, told apart by name.
func cmdEval(c *conn, cmd *command, args [][]byte) error {
	keys, argv, err := scriptArgs(args[2:], msgNotInteger)
	if err != nil {
		return err
	}
	bySHA := strings.HasPrefix(cmd.name, "evalsha")
	body := args[1]
	readOnly := cmd.flags&flagReadonly != 0
	if !bySHA {
		flags, err := shebangFlags(body)
		if err != nil {
			return err
		}
		readOnly = readOnly || flags.noWrites
		// A script that declares itself (a shebang) and may write is
		// refused before it runs, as Redis refuses a write command.
		if flags.shebang && !readOnly {
			if msg := c.s.writeRefusal(); msg != "" {
				return redisError(msg)
			}
		}
	}
	r := &runningScript{conn: c, command: cmd.name}
	if bySHA {
		r.name = string(body)
	}
	return c.runScript(r, readOnly, func(w *resp.Writer, caller luascript.Caller) {
		vm := r.vm
		sha := r.name
		if !bySHA {
			var err error
			if sha, err = vm.Load(body); err != nil {
				w.Error(err.Error())
				return
			}
			r.name = sha
		}
		c.s.scripts.cachedScripts.Store(int64(vm.ScriptCount()))
		if !vm.Eval(w, sha, keys, argv, caller) {
			w.Error("NOSCRIPT No matching script. Please use EVAL.")
		}
	})
}

// scriptFlags are a script's shebang flags ("#!lua flags=no-writes,…").
type scriptFlags struct {
	shebang  bool // the script has a "#!lua" line
	noWrites bool
}

// shebangFlags reads a script's "#!lua" first line, if it has one. Of
// Redis' flags only no-writes changes anything in lsmgo; allow-oom,
// allow-stale, no-cluster and allow-cross-slot-keys are accepted.
func shebangFlags(body []byte) (scriptFlags, error) {
	var f scriptFlags
	if !bytes.HasPrefix(body, []byte("#!")) {
		return f, nil
	}
	f.shebang = true
	line, _, _ := bytes.Cut(body, []byte("\n"))
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 || fields[0] != "lua" {
		engine, _, _ := strings.Cut(string(line), " ")
		return f, redisError("ERR Unexpected engine in script shebang: " + engine)
	}
	for _, field := range fields[1:] {
		value, ok := strings.CutPrefix(field, "flags=")
		if !ok {
			return f, redisError("ERR Unknown lua shebang option: " + field)
		}
		for _, flag := range strings.Split(value, ",") {
			switch flag {
			case "no-writes":
				f.noWrites = true
			case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys", "":
			default:
				return f, redisError("ERR Unexpected flag in script shebang: " + flag)
			}
		}
	}
	return f, nil
}

func cmdScriptLoad(c *conn, _ *command, args [][]byte) error {
	if _, err := shebangFlags(args[2]); err != nil {
		return err
	}
	c.s.scripts.mu.Lock()
	sha, err := c.s.evalVM().Load(args[2])
	c.s.scripts.cachedScripts.Store(int64(c.s.evalVM().ScriptCount()))
	c.s.scripts.mu.Unlock()
	if err != nil {
		return redisError(err.Error())
	}
	c.wr.BulkString(sha)
	return nil
}

func cmdScriptExists(c *conn, _ *command, args [][]byte) error {
	c.s.scripts.mu.Lock()
	defer c.s.scripts.mu.Unlock()
	vm := c.s.evalVM()
	c.wr.ArrayHeader(len(args) - 2)
	for _, sha := range args[2:] {
		if vm.Exists(string(sha)) {
			c.wr.Int(1)
		} else {
			c.wr.Int(0)
		}
	}
	return nil
}

func cmdScriptFlush(c *conn, _ *command, args [][]byte) error {
	if len(args) > 3 || len(args) == 3 && !is(args[2], "SYNC") && !is(args[2], "ASYNC") {
		return redisError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
	}
	c.s.scripts.mu.Lock()
	c.s.evalVM().Flush()
	c.s.scripts.cachedScripts.Store(0)
	c.s.scripts.mu.Unlock()
	c.ok()
	return nil
}

func cmdScriptKill(c *conn, _ *command, _ [][]byte) error { return c.killScript(false) }
