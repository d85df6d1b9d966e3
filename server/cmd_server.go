package server

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	const conn, srv = "connection", "server"
	fast := flagFast
	register(
		spec{name: "ping", arity: -1, flags: fast, pipe: pipeSubscribed, group: conn, since: "1.0.0",
			summary: "Returns the server's liveliness response.", run: cmdPing},
		spec{name: "echo", arity: 2, flags: fast, group: conn, since: "1.0.0",
			summary: "Returns the given string.", run: cmdEcho},
		spec{name: "hello", arity: -1, flags: flagNoAuth | fast, group: conn, since: "6.0.0",
			summary: "Handshakes with the Redis server.", run: cmdHello},
		spec{name: "auth", arity: -2, flags: flagNoAuth | fast, group: conn, since: "1.0.0",
			summary: "Authenticates the connection.", run: cmdAuth},
		spec{name: "quit", arity: -1, flags: flagNoAuth | fast, pipe: pipeNoQueue | pipeSubscribed, group: conn, since: "1.0.0",
			summary: "Closes the connection.", run: cmdQuit},
		spec{name: "reset", arity: 1, flags: flagNoAuth | fast, pipe: pipeNoQueue | pipeSubscribed, group: conn, since: "6.2.0",
			summary: "Resets the connection.", run: cmdReset},
		spec{name: "client", arity: -2, group: conn, since: "2.4.0", summary: "A container for client connection commands.",
			subs: []spec{
				{name: "id", arity: 2, since: "5.0.0", summary: "Returns the unique client ID of the connection.", run: cmdClientID},
				{name: "setname", arity: 3, since: "2.6.9", summary: "Sets the connection name.", run: cmdClientSetName},
				{name: "getname", arity: 2, since: "2.6.9", summary: "Returns the name of the connection.", run: cmdClientGetName},
				{name: "list", arity: -2, since: "2.4.0", summary: "Lists open connections.", run: cmdClientList},
				{name: "info", arity: 2, since: "6.2.0", summary: "Returns information about the connection.", run: cmdClientInfo},
				{name: "setinfo", arity: 4, since: "7.2.0", summary: "Sets information specific to the client or connection.", run: cmdClientSetInfo},
				{name: "kill", arity: -3, flags: flagAdmin | flagLoading | flagStale, since: "2.4.0", summary: "Terminates open connections.", run: cmdClientKill},
				{name: "no-evict", arity: 3, flags: flagAdmin | flagLoading | flagStale, since: "7.0.0", summary: "Sets the client eviction mode of the connection.", run: onOff(stateNoEvict)},
				{name: "no-touch", arity: 3, flags: flagLoading | flagStale, since: "7.2.0", summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", run: onOff(stateNoTouch)},
				{name: "pause", arity: -3, flags: flagAdmin | flagLoading | flagStale, since: "3.0.0", summary: "Suspends commands processing.", run: cmdClientPause},
				{name: "unpause", arity: 2, flags: flagAdmin | flagLoading | flagStale, since: "6.2.0", summary: "Resumes processing commands from paused clients.", run: cmdClientUnpause},
				{name: "unblock", arity: -3, flags: flagAdmin | flagLoading | flagStale, since: "5.0.0", summary: "Unblocks a client blocked by a blocking command from a different connection.", run: cmdClientUnblock},
				{name: "reply", arity: 3, since: "3.2.0", summary: "Instructs the server whether to reply to commands.", run: cmdClientReply},
				{name: "tracking", arity: -3, flags: flagLoading | flagStale, since: "6.0.0", summary: "Controls server-assisted client-side caching for the connection.", run: cmdClientTracking},
				{name: "caching", arity: 3, flags: flagLoading | flagStale, since: "6.0.0", summary: "Instructs the server whether to track the keys in the next request.", run: cmdClientCaching},
				{name: "getredir", arity: 2, flags: flagLoading | flagStale, since: "6.0.0", summary: "Returns the client ID to which the connection's tracking notifications are redirected.", run: cmdClientGetRedir},
				{name: "trackinginfo", arity: 2, flags: flagLoading | flagStale, since: "6.2.0", summary: "Returns information about server-assisted client-side caching for the connection.", run: cmdClientTrackingInfo},
				{name: "help", arity: 2, since: "5.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
		spec{name: "command", arity: -1, group: srv, since: "2.8.13", summary: "Returns detailed information about all commands.",
			run: cmdCommandInfo, subs: []spec{
				{name: "count", arity: 2, since: "2.8.13", summary: "Returns a count of commands.", run: cmdCommandCount},
				{name: "info", arity: -2, since: "2.8.13", summary: "Returns information about one, multiple or all commands.", run: cmdCommandInfo},
				{name: "docs", arity: -2, since: "7.0.0", summary: "Returns documentary information about one, multiple or all commands.", run: cmdCommandDocs},
				{name: "getkeys", arity: -4, since: "2.8.13", summary: "Extracts the key names from an arbitrary command.", run: cmdCommandGetKeys},
				{name: "getkeysandflags", arity: -4, since: "7.0.0", summary: "Extracts the key names and access flags for an arbitrary command.", run: cmdCommandGetKeys},
				{name: "list", arity: -2, since: "7.0.0", summary: "Returns a list of command names.", run: cmdCommandList},
				{name: "help", arity: 2, since: "5.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
		spec{name: "config", arity: -2, group: srv, since: "2.0.0", summary: "A container for server configuration commands.",
			subs: []spec{
				{name: "get", arity: -3, flags: flagAdmin | flagLoading | flagStale, since: "2.0.0", summary: "Returns the effective values of configuration parameters.", run: cmdConfigGet},
				{name: "set", arity: -4, flags: flagAdmin | flagLoading | flagStale, since: "2.0.0", summary: "Sets configuration parameters in-flight.", run: cmdConfigSet},
				{name: "resetstat", arity: 2, flags: flagAdmin | flagLoading | flagStale, since: "2.0.0", summary: "Resets the server's statistics.", run: cmdConfigResetStat},
				{name: "rewrite", arity: 2, flags: flagAdmin | flagLoading | flagStale, since: "2.8.0", summary: "Persists the effective configuration to file.", run: cmdConfigRewrite},
				{name: "help", arity: 2, since: "5.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
		spec{name: "slowlog", arity: -2, group: srv, since: "2.2.12", summary: "A container for slow log commands.",
			subs: []spec{
				{name: "get", arity: -2, flags: flagAdmin | flagLoading | flagStale, since: "2.2.12", summary: "Returns the slow log's entries.", run: cmdSlowlogGet},
				{name: "len", arity: 2, flags: flagAdmin | flagLoading | flagStale, since: "2.2.12", summary: "Returns the number of entries in the slow log.", run: cmdSlowlogLen},
				{name: "reset", arity: 2, flags: flagAdmin | flagLoading | flagStale, since: "2.2.12", summary: "Clears all entries from the slow log.", run: cmdSlowlogReset},
				{name: "help", arity: 2, since: "6.2.0", summary: "Show helpful text about the different subcommands.", run: cmdHelp},
			}},
		spec{name: "info", arity: -1, flags: flagLoading | flagStale, group: srv, since: "1.0.0",
			summary: "Returns information and statistics about the server.", run: cmdInfo},
		spec{name: "lsmgo.resume", arity: 1, flags: flagAdmin | flagLoading | flagStale, group: srv, since: "1.0.0",
			summary: "Makes a read-only engine accept writes again after a failed fsync (lsmgo's DB.Resume).", run: cmdResume},
		spec{name: "wait", arity: 3, group: "generic", since: "3.0.0",
			summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", run: cmdWait},
		spec{name: "time", arity: 1, flags: flagLoading | flagStale | fast, group: srv, since: "2.6.0",
			summary: "Returns the server time.", run: cmdTime},
	)
}

// cmdHelp answers a container's HELP subcommand with the container's
// subcommands and their summaries.
func cmdHelp(c *conn, cmd *command, _ [][]byte) error {
	container := cmd.parent
	subs := container.sortedSubs()
	up := strings.ToUpper(container.name)
	c.wr.ArrayHeader(1 + len(subs))
	c.wr.SimpleString(up + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, sub := range subs {
		c.wr.SimpleString(strings.ToUpper(sub.name[len(container.name)+1:]) + ": " + sub.summary)
	}
	return nil
}

func cmdPing(c *conn, cmd *command, args [][]byte) error {
	if len(args) <= 2 && c.subscribed() && c.wr.Protocol() == 2 {
		// Redis' subscribed-mode PING: an array, as a message is.
		c.wr.ArrayHeader(2)
		c.wr.BulkString("pong")
		if len(args) == 2 {
			c.wr.Bulk(args[1])
		} else {
			c.wr.BulkString("")
		}
		return nil
	}
	switch len(args) {
	case 1:
		c.wr.SimpleString("PONG")
	case 2:
		c.wr.Bulk(args[1])
	default:
		return redisError(wrongArity(cmd))
	}
	return nil
}

func cmdEcho(c *conn, _ *command, args [][]byte) error { c.wr.Bulk(args[1]); return nil }

func cmdQuit(c *conn, _ *command, _ [][]byte) error {
	c.ok()
	c.quit = true
	return nil
}

func cmdReset(c *conn, _ *command, _ [][]byte) error {
	// Heard under CLIENT REPLY OFF, which RESET ends, but not under SKIP,
	// as from Redis.
	w := c.wr
	if c.replies == replyOff {
		w = c.pushOut()
	}
	c.discard()
	c.unsubscribeAll()
	c.selectDB(0)
	c.unmonitor()
	c.s.disableTracking(c)
	c.replies = replyOn
	c.setState(stateNoEvict|stateNoTouch, false)
	c.setProtocol(2)
	c.user.Store(c.s.acl.byDefault)
	c.setAuthed(c.s.acl.authenticates())
	c.info.Lock()
	c.info.name = ""
	c.info.Unlock()
	w.SimpleString("RESET")
	return nil
}

func (c *conn) setProtocol(v int) {
	if v == 3 {
		// Where tracking pushes for this connection queue: made before
		// the protocol store that lets an invalidator use it.
		c.ensureSub()
	}
	c.wr.SetProtocol(v)
	c.proto.Store(int32(v))
}

func (c *conn) setAuthed(authed bool) {
	c.authed = authed
	c.rd.SetAuthRequired(!authed)
}

// checkPassword authenticates the connection as user with password: an
// enabled user that password opens. A failure is logged in ACL LOG.
func (c *conn) checkPassword(user, password []byte, userGiven bool) error {
	if !userGiven && c.s.acl.byDefault.perms.Load().nopass {
		return redisError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	}
	if u := c.s.acl.get(string(user)); u != nil {
		if p := u.perms.Load(); p.enabled && p.checkPassword(password) {
			c.user.Store(u)
			c.setAuthed(true)
			return nil
		}
	}
	c.s.acl.log.add(c, aclDeniedAuth, c.aclContext(), "AUTH", string(user))
	return redisError("WRONGPASS invalid username-password pair or user is disabled.")
}

func cmdAuth(c *conn, _ *command, args [][]byte) error {
	switch len(args) {
	case 2:
		if err := c.checkPassword([]byte("default"), args[1], false); err != nil {
			return err
		}
	case 3:
		if err := c.checkPassword(args[1], args[2], true); err != nil {
			return err
		}
	default:
		return redisError(msgSyntax)
	}
	c.ok()
	return nil
}

func cmdHello(c *conn, _ *command, args [][]byte) error {
	proto := int64(0)
	next := 1
	if len(args) >= 2 {
		var ok bool
		if proto, ok = parseInt(args[1]); !ok {
			return redisError("ERR Protocol version is not an integer or out of range")
		}
		if proto < 2 || proto > 3 {
			return redisError("NOPROTO unsupported protocol version")
		}
		next = 2
	}
	var user, pass, name []byte
	hasAuth, hasName := false, false
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case is(args[j], "AUTH") && more >= 2:
			user, pass, hasAuth = args[j+1], args[j+2], true
			j += 2
		case is(args[j], "SETNAME") && more >= 1:
			name, hasName = args[j+1], true
			j++
		default:
			return redisError("ERR Syntax error in HELLO option '" + string(args[j]) + "'")
		}
	}
	if hasAuth {
		if err := c.checkPassword(user, pass, true); err != nil {
			return err
		}
	}
	if !c.authed {
		return redisError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	}
	if hasName {
		if err := c.setName(name); err != nil {
			return err
		}
	}
	if proto != 0 {
		c.setProtocol(int(proto))
	}
	c.wr.MapHeader(7)
	c.wr.BulkString("server")
	c.wr.BulkString("redis")
	c.wr.BulkString("version")
	c.wr.BulkString(Version)
	c.wr.BulkString("proto")
	c.wr.Int(int64(c.wr.Protocol()))
	c.wr.BulkString("id")
	c.wr.Int(int64(c.id))
	c.wr.BulkString("mode")
	c.wr.BulkString("standalone")
	c.wr.BulkString("role")
	c.wr.BulkString("master")
	c.wr.BulkString("modules")
	c.wr.ArrayHeader(0)
	return nil
}

// validName is Redis' rule for client names and library info: printable
// ASCII without spaces.
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func (c *conn) setName(name []byte) error {
	if !validName(name) {
		return redisError("ERR Client names cannot contain spaces, newlines or special characters.")
	}
	c.info.Lock()
	c.info.name = string(name)
	c.info.Unlock()
	return nil
}

func cmdClientID(c *conn, _ *command, _ [][]byte) error { c.wr.Int(int64(c.id)); return nil }

func cmdClientSetName(c *conn, _ *command, args [][]byte) error {
	if err := c.setName(args[2]); err != nil {
		return err
	}
	c.ok()
	return nil
}

func cmdClientGetName(c *conn, _ *command, _ [][]byte) error {
	if name := c.clientName(); name != "" {
		c.wr.BulkString(name)
	} else {
		c.wr.Null()
	}
	return nil
}

func cmdClientSetInfo(c *conn, _ *command, args [][]byte) error {
	attr, value := args[2], args[3]
	var field *string
	switch {
	case is(attr, "LIB-NAME"):
		field = &c.info.libName
	case is(attr, "LIB-VER"):
		field = &c.info.libVer
	default:
		return redisError("ERR Unrecognized option '" + string(attr) + "'")
	}
	if !validName(value) {
		return redisError("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters.")
	}
	c.info.Lock()
	*field = string(value)
	c.info.Unlock()
	c.ok()
	return nil
}

// cmdClientList implements CLIENT LIST [TYPE normal] [ID id ...]. Every
// client is "normal": there are no replicas or subscribers.
func cmdClientList(c *conn, cmd *command, args [][]byte) error {
	clients := c.s.listedClients()
	switch {
	case len(args) == 2:
	case len(args) == 4 && is(args[2], "TYPE"):
		class, err := parseClientClass(args[3])
		if err != nil {
			return err
		}
		clients = slices.DeleteFunc(clients, func(o *conn) bool { return o.clientClass() != class })
	case len(args) >= 4 && is(args[2], "ID"):
		want := map[uint64]bool{}
		for _, a := range args[3:] {
			id, err := strconv.ParseUint(string(a), 10, 64)
			if err != nil || id == 0 {
				return redisError("ERR Invalid client ID")
			}
			want[id] = true
		}
		clients = slices.DeleteFunc(clients, func(o *conn) bool { return !want[o.id] })
	default:
		return redisError(msgSyntax)
	}
	var b strings.Builder
	for _, o := range clients {
		o.describe(&b, c, cmd, args)
	}
	c.wr.Verbatim("txt", b.String())
	return nil
}

func cmdClientInfo(c *conn, cmd *command, args [][]byte) error {
	var b strings.Builder
	c.describe(&b, c, cmd, args)
	c.wr.Verbatim("txt", b.String())
	return nil
}

// describe writes c's CLIENT LIST line. self is the client asking, whose
// command in progress, running with args, is the CLIENT command itself.
func (c *conn) describe(b *strings.Builder, self *conn, running *command, args [][]byte) {
	now := time.Now()
	c.info.Lock()
	name, libName, libVer, db := c.info.name, c.info.libName, c.info.libVer, c.info.db
	c.info.Unlock()
	cmd := "NULL"
	if last := c.lastCmd.Load(); last != nil {
		cmd = last.name
	}
	if c == self {
		cmd = running.name
	}
	idle := now.Sub(time.Unix(0, c.lastActive.Load()))
	multi := int64(-1)
	if c.state.Load()&stateMulti != 0 {
		multi = c.queued.Load()
	}
	f := c.bufferFields(self, args)
	flags, redir := c.trackingFields()
	fmt.Fprintf(b, "id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=0 multi=%d qbuf=%d qbuf-free=%d argv-mem=%d multi-mem=%d rbs=0 rbp=0 obl=%d oll=%d omem=%d tot-mem=%d events=r cmd=%s user=%s redir=%s resp=%d lib-name=%s lib-ver=%s\n",
		c.id, c.raddr, c.laddr, name, int64(now.Sub(c.created).Seconds()), int64(idle.Seconds()),
		flagLetters(c.state.Load(), flags, c.watchDirty.Load()), db, c.nsub.Load(), c.npsub.Load(), multi,
		f.qbuf, f.qbufFree, f.argvMem, f.multiMem, f.obl, f.oll, f.omem, f.totMem,
		cmd, c.user.Load().name, redir, c.proto.Load(), libName, libVer)
}

func cmdCommandCount(c *conn, _ *command, _ [][]byte) error {
	c.wr.Int(int64(len(commands)))
	return nil
}

// sortedCommands returns the top-level commands by name.
func sortedCommands() []*command {
	list := make([]*command, 0, len(commands))
	for _, cmd := range commands {
		list = append(list, cmd)
	}
	slices.SortFunc(list, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return list
}

// cmdCommandInfo implements COMMAND and COMMAND INFO [name ...]: Redis 7's
// ten-element description of each command, nil for unknown names.
func cmdCommandInfo(c *conn, _ *command, args [][]byte) error {
	if len(args) <= 2 {
		list := sortedCommands()
		c.wr.ArrayHeader(len(list))
		for _, cmd := range list {
			c.writeCommandInfo(cmd)
		}
		return nil
	}
	c.wr.ArrayHeader(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := c.lookupCommandName(name); cmd != nil {
			c.writeCommandInfo(cmd)
		} else {
			c.wr.Null()
		}
	}
	return nil
}

func (c *conn) writeCommandInfo(cmd *command) {
	c.wr.ArrayHeader(10)
	c.wr.BulkString(cmd.name)
	c.wr.Int(int64(cmd.arity))
	writeStatusSet(c, cmd.commandInfoFlags())
	c.wr.Int(int64(cmd.firstKey))
	c.wr.Int(int64(cmd.lastKey))
	c.wr.Int(int64(cmd.step))
	writeStatusSet(c, cmd.aclCategories())
	c.wr.ArrayHeader(0) // tips
	c.writeKeySpecs(cmd)
	subs := cmd.sortedSubs()
	c.wr.ArrayHeader(len(subs))
	for _, sub := range subs {
		c.writeCommandInfo(sub)
	}
}

func (cmd *command) sortedSubs() []*command {
	subs := make([]*command, 0, len(cmd.subs))
	for _, sub := range cmd.subs {
		subs = append(subs, sub)
	}
	slices.SortFunc(subs, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return subs
}

// aclCategories are the command's ACL categories, as Redis reports them.
func (cmd *command) aclCategories() []string { return cmd.acl.cats.names() }

// cmdCommandDocs implements COMMAND DOCS [name ...]: a map from command
// name to its summary, version and group (and subcommands), which is what
// redis-cli reads for its help.
func cmdCommandDocs(c *conn, _ *command, args [][]byte) error {
	var list []*command
	if len(args) == 2 {
		list = sortedCommands()
	} else {
		for _, name := range args[2:] {
			if cmd := c.lookupCommandName(name); cmd != nil {
				list = append(list, cmd)
			}
		}
	}
	c.wr.MapHeader(len(list))
	for _, cmd := range list {
		c.wr.BulkString(cmd.name)
		c.writeCommandDocs(cmd)
	}
	return nil
}

func (c *conn) writeCommandDocs(cmd *command) {
	subs := cmd.sortedSubs()
	n := 3
	if len(subs) > 0 {
		n++
	}
	c.wr.MapHeader(n)
	c.wr.BulkString("summary")
	c.wr.BulkString(cmd.summary)
	c.wr.BulkString("since")
	c.wr.BulkString(cmd.since)
	c.wr.BulkString("group")
	c.wr.BulkString(cmd.group)
	if len(subs) > 0 {
		c.wr.BulkString("subcommands")
		c.wr.MapHeader(len(subs))
		for _, sub := range subs {
			c.wr.BulkString(sub.name)
			c.writeCommandDocs(sub)
		}
	}
}

func cmdConfigGet(c *conn, _ *command, args [][]byte) error {
	cfg := c.s.config()
	var names []string
	for _, st := range settings {
		for _, p := range args[2:] {
			// As in Redis, a hidden setting answers only its own name.
			if globMatch(p, []byte(st.name), true) && (!st.hidden || !bytes.ContainsAny(p, "*?[")) {
				names = append(names, st.name)
				break
			}
		}
	}
	c.wr.MapHeader(len(names))
	for _, name := range names {
		c.wr.BulkString(name)
		c.wr.BulkString(lookupSetting(name).shown(cfg))
	}
	return nil
}

// cmdConfigSet implements CONFIG SET name value [name value ...]: all the
// settings change, or none.
func cmdConfigSet(c *conn, cmd *command, args [][]byte) error {
	if len(args)%2 != 0 {
		return redisError(wrongArity(cmd))
	}
	values := make([]settingValue, 0, len(args)/2-1)
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if lookupSetting(name) == nil {
			return redisError("ERR Unknown option or number of arguments for CONFIG SET - '" + string(args[i]) + "'")
		}
		if slices.ContainsFunc(values, func(v settingValue) bool { return v.name == name }) {
			return redisError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter")
		}
		values = append(values, settingValue{name, string(args[i+1])})
	}
	c.s.cfgMu.Lock()
	err := c.s.setLocked(values)
	c.s.cfgMu.Unlock()
	if err != nil {
		return redisError("ERR " + err.Error())
	}
	c.ok()
	return nil
}

// cmdConfigRewrite implements CONFIG REWRITE (config_rewrite.go).
func cmdConfigRewrite(c *conn, _ *command, _ [][]byte) error {
	switch err := c.s.rewriteConfig(); {
	case errors.Is(err, errNoConfigFile):
		return redisError("ERR The server is running without a config file")
	case err != nil:
		return redisError("ERR Rewriting config file: " + err.Error())
	}
	c.ok()
	return nil
}

func cmdConfigResetStat(c *conn, _ *command, _ [][]byte) error {
	c.publish()
	st := &c.s.stats
	// Other connections' tallies begun before now are dropped (tally).
	st.epoch.Add(1)
	for _, v := range []interface{ Store(int64) }{&st.connections, &st.rejected, &c.s.clientMem.evicted, &st.commands, &st.hits, &st.misses, &st.netIn, &st.netOut} {
		v.Store(0)
	}
	c.s.errors.reset()
	for _, st := range c.s.cmdStats {
		st.reset()
	}
	for i := range c.s.acl.log.denied {
		c.s.acl.log.denied[i].Store(0)
	}
	c.ok()
	return nil
}

func cmdTime(c *conn, _ *command, _ [][]byte) error {
	now := time.Now()
	c.wr.ArrayHeader(2)
	c.wr.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.wr.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
	return nil
}

// cmdResume runs DB.Resume: after a background error (a failed fsync
// above all) the engine stays read-only until an operator, having dealt
// with the cause, says so; a full disk needs no such call.
func cmdResume(c *conn, _ *command, _ [][]byte) error {
	if err := c.s.db.Resume(); err != nil {
		return err
	}
	c.ok()
	return nil
}
