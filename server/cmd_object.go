package server

func init() {
	r := flagReadonly
	register(spec{name: "object", arity: -2, group: "generic", since: "1.2.3", summary: "A container for object introspection commands.",
		subs: []spec{
			{name: "encoding", arity: 3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "2.2.3",
				summary: "Returns the internal encoding Redis would give the value of a key (doc/server.md).", run: cmdObjectEncoding},
			{name: "freq", arity: 3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "4.0.0",
				summary: "Returns the logarithmic access frequency counter of a Redis object.", run: cmdObjectFreq},
			{name: "idletime", arity: 3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "2.2.3",
				summary: "Returns the seconds since the last access to a key (a lower bound; doc/server.md).", run: cmdObjectIdleTime},
			{name: "refcount", arity: 3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "2.2.3",
				summary: "Returns 1: values are never shared.", run: cmdObjectRefcount},
			{name: "help", arity: 2, since: "6.2.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
		}})
}

// collEncodings name, by type, the encoding OBJECT ENCODING reports for a
// collection: the one Redis gives a big collection of the type, whose
// elements it stores one by one, as this server does at every size
// (doc/server.md, "OBJECT").
var collEncodings = map[string]string{"hash": "hashtable", "set": "hashtable", "list": "quicklist", "zset": "skiplist", "stream": "stream"}

// objectEntry reads the key of an OBJECT subcommand; for a missing key
// it writes the null reply and returns done.
func (c *conn) objectEntry(key []byte) (e entry, done bool, err error) {
	e, exists, err := c.getEntry(key)
	if err == nil && !exists {
		c.wr.Null()
		return e, true, nil
	}
	return e, false, err
}

// cmdObjectEncoding answers a string's encoding as Redis would after SET:
// "int" for a decimal integer Redis parses, "embstr" up to 44 bytes,
// "raw" beyond. Redis says "raw" for a short string that APPEND or
// SETRANGE changed in place; the store keeps no such history.
func cmdObjectEncoding(c *conn, _ *command, args [][]byte) error {
	e, done, err := c.objectEntry(args[2])
	if err != nil || done {
		return err
	}
	switch e.typ {
	case typeFragString:
		c.wr.BulkString("raw")
		return nil
	case typeString:
	default:
		c.wr.BulkString(collEncodings[typeNames[e.typ]])
		return nil
	}
	switch _, isInt := parseInt(e.payload); {
	case isInt:
		c.wr.BulkString("int")
	case len(e.payload) <= 44:
		c.wr.BulkString("embstr")
	default:
		c.wr.BulkString("raw")
	}
	return nil
}

// cmdObjectFreq answers the key's LFU counter (lfu.go) under an LFU
// maxmemory-policy, and fails as Redis does under another.
func cmdObjectFreq(c *conn, _ *command, args [][]byte) error {
	if _, done, err := c.objectEntry(args[2]); err != nil || done {
		return err
	}
	lfu := c.s.lfu()
	if lfu == nil {
		return redisError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
	c.wr.Int(int64(lfu.freq(args[2], c.clock().Unix(), c.s.config().LFUDecayTime)))
	return nil
}

// cmdObjectIdleTime answers the seconds since the key was last used, as
// the access clock (accessclock.go) knows them: a lower bound, exact
// unless another key sharing its clock slot was used since. Under an LFU
// policy it fails, as in Redis.
func cmdObjectIdleTime(c *conn, _ *command, args [][]byte) error {
	if _, done, err := c.objectEntry(args[2]); err != nil || done {
		return err
	}
	if isLFUPolicy(c.s.config().MaxMemoryPolicy) {
		return redisError("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
	c.wr.Int(c.s.access.idle(args[2], c.clock().Unix(), c.s.startTime))
	return nil
}

// cmdObjectRefcount answers 1 for an existing key: each value is stored
// once under its key, never shared (Redis shares small integers and says
// 2147483647 for them).
func cmdObjectRefcount(c *conn, _ *command, args [][]byte) error {
	if _, done, err := c.objectEntry(args[2]); err != nil || done {
		return err
	}
	c.wr.Int(1)
	return nil
}
