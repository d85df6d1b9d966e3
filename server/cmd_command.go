package server

import "bytes"

// COMMAND GETKEYS, GETKEYSANDFLAGS and LIST, and the pieces of COMMAND
// INFO that come from Redis' key specs.

// lookupCommandPath finds a command as COMMAND GETKEYS names it, by its
// arguments: the container's subcommand when there is a second argument,
// as Redis dispatches.
func (c *conn) lookupCommandPath(args [][]byte) *command {
	cmd := lookup(commands, &c.nameBuf, args[0])
	if cmd == nil || cmd.subs == nil || len(args) == 1 {
		return cmd
	}
	return lookup(cmd.subs, &c.nameBuf, args[1])
}

// lookupCommandName finds a command by its full name, "config|get" for a
// subcommand, as COMMAND INFO and DOCS take it.
func (c *conn) lookupCommandName(name []byte) *command {
	parent, sub, isSub := bytes.Cut(name, []byte("|"))
	cmd := lookup(commands, &c.nameBuf, parent)
	if !isSub || cmd == nil {
		return cmd
	}
	if cmd.subs == nil {
		return nil
	}
	return lookup(cmd.subs, &c.nameBuf, sub)
}

// cmdCommandGetKeys implements COMMAND GETKEYS and GETKEYSANDFLAGS.
func cmdCommandGetKeys(c *conn, cmd *command, args [][]byte) error {
	withFlags := cmd.name == "command|getkeysandflags"
	target := args[2:]
	tc := c.lookupCommandPath(target)
	switch {
	case tc == nil:
		return redisError("ERR Invalid command specified")
	case !tc.acl.hasKeys():
		return redisError("ERR The command has no key arguments")
	case !tc.arityOK(len(target)):
		return redisError("ERR Invalid number of arguments specified for command")
	}
	keys := commandKeys(tc, target, nil)
	if len(keys) == 0 && tc.flags&flagNoMandatoryKeys == 0 {
		return redisError("ERR Invalid arguments specified for command")
	}
	c.wr.ArrayHeader(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.wr.Bulk(target[k.pos])
			continue
		}
		c.wr.ArrayHeader(2)
		c.wr.Bulk(target[k.pos])
		writeStatusSet(c, k.flags.names())
	}
	return nil
}

// cmdCommandList implements COMMAND LIST [FILTERBY MODULE name | ACLCAT
// category | PATTERN pattern]: the names of every command and subcommand
// that passes the filter. lsmgo has no modules, so FILTERBY MODULE
// matches nothing.
func cmdCommandList(c *conn, _ *command, args [][]byte) error {
	match := func(*command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && is(args[2], "FILTERBY"):
		arg := args[4]
		switch {
		case is(args[3], "MODULE"):
			match = func(*command) bool { return false }
		case is(args[3], "ACLCAT"):
			cat, _ := aclCategory(string(arg))
			match = func(cmd *command) bool { return cmd.acl.cats&cat != 0 }
		case is(args[3], "PATTERN"):
			match = func(cmd *command) bool { return globMatch(arg, []byte(cmd.name), true) }
		default:
			return redisError(msgSyntax)
		}
	default:
		return redisError(msgSyntax)
	}
	var names []string
	for _, cmd := range allCommands {
		if match(cmd) {
			names = append(names, cmd.name)
		}
	}
	c.wr.ArrayHeader(len(names))
	for _, n := range names {
		c.wr.BulkString(n)
	}
	return nil
}

// commandInfoFlags are the flags COMMAND INFO reports: the table's, and
// movablekeys wherever Redis' key specs make the keys move.
func (cmd *command) commandInfoFlags() []string {
	f := cmd.flags
	if cmd.acl.movable() {
		f |= flagMovableKeys
	}
	return f.names()
}

// writeKeySpecs writes COMMAND INFO's key specifications. Redis' notes,
// prose about a few specs, are not kept in the table and are left out.
func (c *conn) writeKeySpecs(cmd *command) {
	w := c.wr
	w.ArrayHeader(len(cmd.acl.specs))
	for _, ks := range cmd.acl.specs {
		w.MapHeader(3)
		w.BulkString("flags")
		writeStatusSet(c, ks.flags.names())
		w.BulkString("begin_search")
		w.MapHeader(2)
		w.BulkString("type")
		switch {
		case ks.index > 0:
			w.BulkString("index")
			w.BulkString("spec")
			w.MapHeader(1)
			w.BulkString("index")
			w.Int(int64(ks.index))
		case ks.keyword != "":
			w.BulkString("keyword")
			w.BulkString("spec")
			w.MapHeader(2)
			w.BulkString("keyword")
			w.BulkString(ks.keyword)
			w.BulkString("startfrom")
			w.Int(int64(ks.startFrom))
		default:
			w.BulkString("unknown")
			w.BulkString("spec")
			w.MapHeader(0)
		}
		w.BulkString("find_keys")
		w.MapHeader(2)
		w.BulkString("type")
		var names []string
		var values []int
		switch {
		case ks.keyNumIdx >= 0:
			w.BulkString("keynum")
			names, values = []string{"keynumidx", "firstkey", "keystep"}, []int{ks.keyNumIdx, ks.firstKey, ks.step}
		case ks.step != 0:
			w.BulkString("range")
			names, values = []string{"lastkey", "keystep", "limit"}, []int{ks.lastKey, ks.step, ks.limit}
		default:
			w.BulkString("unknown")
		}
		w.BulkString("spec")
		w.MapHeader(len(names))
		for i, n := range names {
			w.BulkString(n)
			w.Int(int64(values[i]))
		}
	}
}

// writeStatusSet writes names as a set of simple strings, as Redis
// writes flags.
func writeStatusSet(c *conn, names []string) {
	c.wr.SetHeader(len(names))
	for _, n := range names {
		c.wr.SimpleString(n)
	}
}
