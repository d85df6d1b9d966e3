package server

import (
	"strings"
)

// cmdFlags are Redis' command flags, in the order COMMAND INFO lists
// them; the server itself acts on flagWrite, flagNoAuth, flagNoMulti and
// flagMovableKeys.
type cmdFlags uint16

const (
	flagWrite cmdFlags = 1 << iota
	flagReadonly
	flagDenyOOM
	flagAdmin
	flagLoading
	flagStale
	flagFast
	flagNoAuth
	// flagNoMandatoryKeys marks a command that may name no key although
	// it takes keys (EVAL … 0): COMMAND GETKEYS answers it with no keys
	// instead of an error.
	flagNoMandatoryKeys
	// flagNoMulti marks a command MULTI refuses to queue.
	flagNoMulti
	// flagMovableKeys marks a command whose keys firstKey, lastKey and
	// step do not locate (a numkeys argument says where they are): EXEC
	// then locks every stripe for it. COMMAND INFO also reports it for
	// every command whose key specs say so (command_keys.go).
	flagMovableKeys
)

var flagNames = []string{"write", "readonly", "denyoom", "admin", "loading", "stale", "fast", "no_auth",
	"no_mandatory_keys", "no_multi", "movablekeys"}

func (f cmdFlags) names() []string {
	var out []string
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// pipeFlags tell the connection loop how a command may share work with
// the commands pipelined around it. They are the loop's only knowledge of
// individual commands: a command gets the pipelined fast paths by its table
// entry, never by its name.
type pipeFlags uint8

const (
	// pipeView marks a read-only command that may read through the view
	// the connection holds for a run of pipelined reads (conn.reader):
	// every command it serves was received before the view was made, so
	// the view shows every write acknowledged before any of them. Running
	// any command without the flag closes the view first. A command that
	// writes must never have it: its reads must see the latest state.
	pipeView pipeFlags = 1 << iota
	// pipeNoQueue marks a command that runs at once inside MULTI instead
	// of being queued (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET).
	pipeNoQueue
	// pipeSubscribed marks a command a RESP2 client may send while
	// subscribed ((P)(UN)SUBSCRIBE, PING, QUIT, RESET).
	pipeSubscribed
)

// deferrable reports whether cmd's writes may join a pipeline's pending
// batch (pipeline.go): a write whose keys its table entry locates, so
// that the stripes it locks are those of every key it reads (a command
// that reads other keys, such as SORT … BY, must be flagMovableKeys, as
// in Redis). Inside a pipeline its handler
// runs deferring, and its reply is released once the batch commits,
// which happens before any other command runs and before the connection
// reads again.
func (cmd *command) deferrable() bool {
	return cmd.flags&flagWrite != 0 && cmd.firstKey > 0 && cmd.flags&flagMovableKeys == 0 && cmd.pipe&pipeNoQueue == 0
}

// handler runs a command: cmd is the table entry it runs as (a handler
// may serve several commands and tells them apart by the entry, never by
// args[0]), args the command's arguments, name first. It writes its reply,
// or returns the error that is its reply (a redisError, or an engine
// error that engineError words): conn.run writes that, once. A handler
// that returns an error has written nothing.
type handler func(c *conn, cmd *command, args [][]byte) error

// command is one entry of the command table.
type command struct {
	// name is the lower-case name Redis uses in errors and COMMAND
	// replies: "get", or "config|get" for a subcommand.
	name string
	// arity follows Redis: n means exactly n arguments including the
	// command name, -n means at least n.
	arity int
	flags cmdFlags
	pipe  pipeFlags
	// firstKey, lastKey and step locate the keys among the arguments
	// (lastKey -1: up to the last argument), as COMMAND INFO reports them.
	firstKey, lastKey, step int
	group                   string
	since                   string
	summary                 string
	run                     handler
	// subs holds the subcommands of a container command (CONFIG,
	// CLIENT …), keyed by lower-case name; parent is the container of a
	// subcommand.
	subs   map[string]*command
	parent *command
	// id indexes the server's per-command statistics and ACL
	// selectors' command bits.
	id int
	// acl holds the command's ACL categories and key specs (acl_table.go).
	acl aclInfo
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// commands is the command table, keyed by lower-case name. allCommands
// lists every command and subcommand in table order, indexed by id.
var (
	commands    = map[string]*command{}
	allCommands []*command
)

// spec describes a command for register.
type spec struct {
	name                    string
	arity                   int
	flags                   cmdFlags
	pipe                    pipeFlags
	firstKey, lastKey, step int
	group, since, summary   string
	run                     handler
	subs                    []spec
}

func register(specs ...spec) {
	for _, s := range specs {
		cmd := newCommand(s, nil)
		commands[cmd.name] = cmd
	}
}

func newCommand(s spec, parent *command) *command {
	name := s.name
	if parent != nil {
		name = parent.name + "|" + s.name
	}
	cmd := &command{
		name: name, arity: s.arity, flags: s.flags, pipe: s.pipe,
		firstKey: s.firstKey, lastKey: s.lastKey, step: s.step,
		group: s.group, since: s.since, summary: s.summary,
		run: s.run, parent: parent,
		id:  len(allCommands),
		acl: aclInfoFor(name, s.flags),
	}
	allCommands = append(allCommands, cmd)
	if len(s.subs) > 0 {
		cmd.subs = map[string]*command{}
		for _, sub := range s.subs {
			if sub.group == "" {
				sub.group = s.group
			}
			cmd.subs[sub.name] = newCommand(sub, cmd)
		}
	}
	return cmd
}

// lookup finds a command or subcommand by its case-insensitive name
// without allocating: the name is lowered into buf first.
func lookup(table map[string]*command, buf *[]byte, name []byte) *command {
	if len(name) > 64 {
		return nil
	}
	b := (*buf)[:0]
	for _, c := range name {
		b = append(b, toLower(c))
	}
	*buf = b
	return table[string(b)]
}

// Redis 7's error texts, which clients and test suites match on.
const (
	msgSyntax       = "ERR syntax error"
	msgNotInteger   = "ERR value is not an integer or out of range"
	msgNotFloat     = "ERR value is not a valid float"
	msgNoAuth       = "NOAUTH Authentication required."
	msgOverflow     = "ERR increment or decrement would overflow"
	msgNoSuchKey    = "ERR no such key"
	msgStringTooBig = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	msgMaxClients   = "ERR max number of clients reached"
)

func wrongArity(cmd *command) string {
	return "ERR wrong number of arguments for '" + cmd.name + "' command"
}

func invalidExpire(cmd *command) string {
	return "ERR invalid expire time in '" + cmd.name + "' command"
}

// unknownCommand builds Redis' reply for an unknown command: the name and
// then the arguments, quoted, until about 128 bytes of them are shown.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0][:min(len(args[0]), 128)])
	b.WriteString("', with args beginning with: ")
	shown := 0
	for _, a := range args[1:] {
		if shown >= 128 {
			break
		}
		a = a[:min(len(a), 128-shown)]
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
		shown += len(a) + 3
	}
	return b.String()
}

func unknownSubcommand(container string, sub []byte) string {
	return "ERR unknown subcommand '" + string(sub[:min(len(sub), 128)]) + "'. Try " + strings.ToUpper(container) + " HELP."
}
