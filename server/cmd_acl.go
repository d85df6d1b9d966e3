package server

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

func init() {
	const adm = flagAdmin | flagLoading | flagStale
	const info = flagLoading | flagStale
	register(spec{name: "acl", arity: -2, group: "server", since: "6.0.0", summary: "A container for Access List Control commands.",
		subs: []spec{
			{name: "cat", arity: -2, flags: info, since: "6.0.0", summary: "Lists the ACL categories, or the commands inside a category.", run: cmdACLCat},
			{name: "deluser", arity: -3, flags: adm, since: "6.0.0", summary: "Deletes ACL users, and terminates their connections.", run: cmdACLDelUser},
			{name: "dryrun", arity: -4, flags: adm, since: "7.0.0", summary: "Simulates the execution of a command by a user, without executing the command.", run: cmdACLDryRun},
			{name: "genpass", arity: -2, flags: info, since: "6.0.0", summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", run: cmdACLGenPass},
			{name: "getuser", arity: 3, flags: adm, since: "6.0.0", summary: "Lists the ACL rules of a user.", run: cmdACLGetUser},
			{name: "list", arity: 2, flags: adm, since: "6.0.0", summary: "Dumps the effective rules in ACL file format.", run: cmdACLList},
			{name: "load", arity: 2, flags: adm, since: "6.0.0", summary: "Reloads the rules from the configured ACL file.", run: cmdACLLoad},
			{name: "log", arity: -2, flags: adm, since: "6.0.0", summary: "Lists recent security events generated due to ACL rules.", run: cmdACLLog},
			{name: "save", arity: 2, flags: adm, since: "6.0.0", summary: "Saves the effective ACL rules in the configured ACL file.", run: cmdACLSave},
			{name: "setuser", arity: -3, flags: adm, since: "6.0.0", summary: "Creates and modifies an ACL user and its rules.", run: cmdACLSetUser},
			{name: "users", arity: 2, flags: adm, since: "6.0.0", summary: "Lists all ACL users.", run: cmdACLUsers},
			{name: "whoami", arity: 2, flags: info, since: "6.0.0", summary: "Returns the authenticated username of the current connection.", run: cmdACLWhoAmI},
			{name: "help", arity: 2, since: "6.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
		}})
}

func cmdACLCat(c *conn, _ *command, args [][]byte) error {
	if len(args) == 2 {
		c.bulkStrings(aclCategoryNames)
		return nil
	}
	if len(args) > 3 {
		return aclSyntaxError(args)
	}
	cat, ok := aclCategory(string(args[2]))
	if !ok {
		return redisError("ERR Unknown category '" + string(args[2]) + "'")
	}
	var names []string
	for _, cmd := range allCommands {
		if cmd.acl.cats&cat != 0 {
			names = append(names, cmd.name)
		}
	}
	c.bulkStrings(names)
	return nil
}

// bulkStrings replies with list as an array of bulk strings.
func (c *conn) bulkStrings(list []string) {
	c.wr.ArrayHeader(len(list))
	for _, s := range list {
		c.wr.BulkString(s)
	}
}

// validUserName refuses what Redis refuses: a name the ACL file format
// could not hold.
func validUserName(name []byte) error {
	if strings.ContainsAny(string(name), " \x00") {
		return redisError("ERR Usernames can't contain spaces or null characters")
	}
	return nil
}

func cmdACLSetUser(c *conn, _ *command, args [][]byte) error {
	if err := validUserName(args[2]); err != nil {
		return err
	}
	rules := make([]string, len(args)-3)
	for i, a := range args[3:] {
		rules[i] = string(a)
	}
	if err := c.s.acl.setUser(string(args[2]), rules, c.s.config().ACLPubsubDefault == "allchannels"); err != nil {
		return redisError(err.Error())
	}
	c.s.closeRevokedSubscribers(c, c.s.acl.get(string(args[2])))
	c.ok()
	return nil
}

func cmdACLGetUser(c *conn, _ *command, args [][]byte) error {
	u := c.s.acl.get(string(args[2]))
	if u == nil {
		c.wr.Null()
		return nil
	}
	p := u.perms.Load()
	c.wr.MapHeader(6)
	c.wr.BulkString("flags")
	flags := []string{"off"}
	if p.enabled {
		flags[0] = "on"
	}
	if p.nopass {
		flags = append(flags, "nopass")
	}
	if p.sanitize != "" {
		flags = append(flags, p.sanitize)
	}
	c.wr.SetHeader(len(flags))
	for _, f := range flags {
		c.wr.BulkString(f)
	}
	c.wr.BulkString("passwords")
	c.bulkStrings(p.passwords)
	c.writeSelector(p.selectors[0])
	c.wr.BulkString("selectors")
	c.wr.ArrayHeader(len(p.selectors) - 1)
	for _, s := range p.selectors[1:] {
		c.wr.MapHeader(3)
		c.writeSelector(s)
	}
	return nil
}

// writeSelector writes a selector's commands, keys and channels fields.
func (c *conn) writeSelector(s *aclSelector) {
	c.wr.BulkString("commands")
	c.wr.BulkString(s.describeCommands())
	c.wr.BulkString("keys")
	c.wr.BulkString(s.describeKeys())
	c.wr.BulkString("channels")
	c.wr.BulkString(s.describeChannels())
}

func cmdACLDelUser(c *conn, _ *command, args [][]byte) error {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		if string(a) == "default" {
			return redisError("ERR The 'default' user cannot be removed")
		}
		names[i] = string(a)
	}
	deleted := c.s.acl.delete(names)
	c.wr.Int(int64(len(deleted)))
	c.s.disconnectUsers(c, deleted)
	return nil
}

// disconnectUsers closes the connections authenticated as the deleted
// users, as Redis does; self, if among them, closes after its reply.
func (s *Server) disconnectUsers(self *conn, deleted []*aclUser) {
	if len(deleted) == 0 {
		return
	}
	for _, o := range s.clientList() {
		u := o.user.Load()
		for _, d := range deleted {
			if u != d {
				continue
			}
			if o == self {
				o.quit = true
			} else {
				o.closeSocket()
			}
		}
	}
}

func cmdACLList(c *conn, _ *command, _ [][]byte) error {
	c.bulkStrings(c.s.acl.list())
	return nil
}

func cmdACLUsers(c *conn, _ *command, _ [][]byte) error {
	c.bulkStrings(c.s.acl.names())
	return nil
}

func cmdACLWhoAmI(c *conn, _ *command, _ [][]byte) error {
	c.wr.BulkString(c.user.Load().name)
	return nil
}

func cmdACLGenPass(c *conn, _ *command, args [][]byte) error {
	bits := int64(256)
	if len(args) > 3 {
		return aclSyntaxError(args)
	}
	if len(args) == 3 {
		var ok bool
		if bits, ok = parseInt(args[2]); !ok || bits <= 0 || bits > 4096 {
			return redisError("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		}
	}
	chars := int((bits + 3) / 4)
	buf := make([]byte, (chars+1)/2)
	rand.Read(buf)
	c.wr.BulkString(hex.EncodeToString(buf)[:chars])
	return nil
}

func cmdACLDryRun(c *conn, _ *command, args [][]byte) error {
	u := c.s.acl.get(string(args[2]))
	if u == nil {
		return redisError("ERR User '" + string(args[2]) + "' not found")
	}
	cargs := args[3:]
	cmd := lookup(commands, &c.nameBuf, cargs[0])
	if cmd != nil && cmd.subs != nil && len(cargs) > 1 {
		cmd = lookup(cmd.subs, &c.nameBuf, cargs[1])
	}
	if cmd == nil {
		return redisError("ERR Command '" + string(cargs[0]) + "' not found")
	}
	if !cmd.arityOK(len(cargs)) {
		return redisError(wrongArity(cmd))
	}
	d, pos, _ := u.perms.Load().check(cmd, cargs, nil)
	if d != aclAllowed {
		c.wr.BulkString(aclDenialMessage(d, u.name, cmd, cargs[pos], true))
		return nil
	}
	c.ok()
	return nil
}

func cmdACLLog(c *conn, _ *command, args [][]byte) error {
	n := 10
	switch {
	case len(args) > 3:
		return aclSyntaxError(args)
	case len(args) == 3 && is(args[2], "RESET"):
		c.s.acl.log.reset()
		c.ok()
		return nil
	case len(args) == 3:
		v, ok := parseInt(args[2])
		if !ok {
			return redisError(msgNotInteger)
		}
		n = int(max(0, min(v, 1<<20)))
	}
	entries := c.s.acl.log.latest(n)
	now := time.Now()
	c.wr.ArrayHeader(len(entries))
	for _, e := range entries {
		c.wr.MapHeader(10)
		c.wr.BulkString("count")
		c.wr.Int(e.count)
		for _, kv := range [][2]string{{"reason", e.reason}, {"context", e.context}, {"object", e.object}, {"username", e.user}} {
			c.wr.BulkString(kv[0])
			c.wr.BulkString(kv[1])
		}
		c.wr.BulkString("age-seconds")
		c.wr.Double(float64(now.Sub(e.created).Milliseconds()) / 1000)
		c.wr.BulkString("client-info")
		c.wr.BulkString(e.clientInfo)
		c.wr.BulkString("entry-id")
		c.wr.Int(e.id)
		c.wr.BulkString("timestamp-created")
		c.wr.Int(e.created.UnixMilli())
		c.wr.BulkString("timestamp-last-updated")
		c.wr.Int(e.updated.UnixMilli())
	}
	return nil
}

// aclSyntaxError is Redis' reply to an ACL subcommand given more
// arguments than it takes.
func aclSyntaxError(args [][]byte) error {
	return redisError("ERR unknown subcommand or wrong number of arguments for '" + strings.ToLower(string(args[1])) + "'. Try ACL HELP.")
}
