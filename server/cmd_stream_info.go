package server

// XINFO STREAM [FULL [COUNT n]], GROUPS and CONSUMERS, with Redis 7.2's
// fields (7.0 lacks the consumers' active-time and inactive).
func init() {
	r := flagReadonly
	register(spec{name: "xinfo", arity: -2, group: "stream", since: "5.0.0", summary: "A container for stream introspection commands.",
		subs: []spec{
			{name: "stream", arity: -3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
				summary: "Returns information about a stream.", run: cmdXInfoStream},
			{name: "groups", arity: 3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
				summary: "Returns a list of the consumer groups of a stream.", run: cmdXInfoGroups},
			{name: "consumers", arity: 4, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
				summary: "Returns a list of the consumers in a consumer group.", run: cmdXInfoConsumers},
			{name: "help", arity: 2, flags: flagLoading | flagStale, since: "5.0.0",
				summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
		}})
}

// infoStream opens the stream of an XINFO subcommand: "no such key" when
// it is absent.
func (c *conn) infoStream(key []byte) (*streamOp, error) {
	op, err := c.s.ks.openStream(c.reader(), nil, &c.scratch, key)
	if err != nil {
		return nil, err
	}
	if !op.exists {
		return nil, redisError(msgNoSuchKey)
	}
	return op, nil
}

// infoGroup returns group of op or NOGROUP.
func (op *streamOp) infoGroup(group []byte) (*streamGroup, error) {
	g, err := op.group(group)
	if err == nil && g == nil {
		err = errNoGroup(group, op.key)
	}
	return g, err
}

func cmdXInfoConsumers(c *conn, _ *command, args [][]byte) error {
	defer c.pin()()
	op, err := c.infoStream(args[2])
	if err != nil {
		return err
	}
	g, err := op.infoGroup(args[3])
	if err != nil {
		return err
	}
	list, err := op.allConsumers(g)
	if err != nil {
		return err
	}
	now := c.clock().UnixMilli()
	c.wr.ArrayHeader(len(list))
	for _, cons := range list {
		c.wr.MapHeader(4)
		c.wr.BulkString("name")
		c.wr.Bulk(cons.name)
		c.wr.BulkString("pending")
		c.wr.Int(int64(cons.pending))
		c.wr.BulkString("idle")
		c.wr.Int(max(now-cons.seen, 0))
		c.wr.BulkString("inactive")
		if cons.active == -1 {
			c.wr.Int(-1)
		} else {
			c.wr.Int(max(now-cons.active, 0))
		}
	}
	return nil
}

// lag is a group's XINFO lag: the entries added that it has not read;
// ok is false (null) when that cannot be known.
func (op *streamOp) lag(g *streamGroup) (lag int64, ok bool) {
	m := &op.m
	switch {
	case m.entriesAdded == 0:
		return 0, true
	case g.entriesRead != invalidEntriesRead && !m.hasTombstones(g.lastID, maxStreamID):
		return int64(m.entriesAdded) - g.entriesRead, true
	}
	read := m.entriesBefore(g.lastID)
	if read == invalidEntriesRead {
		return 0, false
	}
	return int64(m.entriesAdded) - read, true
}

func (c *conn) writeLag(op *streamOp, g *streamGroup) {
	if lag, ok := op.lag(g); ok {
		c.wr.Int(lag)
	} else {
		c.wr.Null()
	}
}

func (c *conn) intOrNull(n int64) {
	if n == -1 {
		c.wr.Null()
	} else {
		c.wr.Int(n)
	}
}

func cmdXInfoGroups(c *conn, _ *command, args [][]byte) error {
	defer c.pin()()
	op, err := c.infoStream(args[2])
	if err != nil {
		return err
	}
	list, err := op.allGroups()
	if err != nil {
		return err
	}
	c.wr.ArrayHeader(len(list))
	for _, g := range list {
		c.wr.MapHeader(6)
		c.wr.BulkString("name")
		c.wr.Bulk(g.name)
		c.wr.BulkString("consumers")
		c.wr.Int(int64(g.consumers))
		c.wr.BulkString("pending")
		c.wr.Int(int64(g.pending))
		c.wr.BulkString("last-delivered-id")
		c.writeStreamID(g.lastID)
		c.wr.BulkString("entries-read")
		c.intOrNull(g.entriesRead)
		c.wr.BulkString("lag")
		c.writeLag(op, g)
	}
	return nil
}

func cmdXInfoStream(c *conn, _ *command, args [][]byte) error {
	defer c.pin()()
	op, err := c.infoStream(args[2])
	if err != nil {
		return err
	}
	full, count := false, int64(10)
	switch rest := args[3:]; {
	case len(rest) == 0:
	case is(rest[0], "FULL") && len(rest) == 1:
		full = true
	case is(rest[0], "FULL") && len(rest) == 3 && is(rest[1], "COUNT"):
		n, ok := parseInt(rest[2])
		if !ok {
			return redisError(msgNotInteger)
		}
		full, count = true, max(n, 0)
	default:
		return subcommandSyntax(args)
	}
	m := &op.m
	if !full {
		return c.streamSummary(op)
	}
	entries, err := c.streamRange(op.key, m, streamID{}, maxStreamID, count, false)
	if err != nil {
		return err
	}
	groups, err := op.allGroups()
	if err != nil {
		return err
	}
	var first *streamEntry
	if len(entries) > 0 {
		first = &entries[0]
	}
	c.wr.MapHeader(9)
	c.streamCounters(op, first)
	c.wr.BulkString("entries")
	c.wr.ArrayHeader(len(entries))
	for _, e := range entries {
		c.writeStreamEntry(e)
	}
	c.wr.BulkString("groups")
	c.wr.ArrayHeader(len(groups))
	now := c.clock().UnixMilli()
	for _, g := range groups {
		if err := c.fullGroup(op, g, count, now); err != nil {
			// Replies are under way: the connection cannot go on.
			c.replyErr(err)
			c.quit = true
			return nil
		}
	}
	return nil
}

// streamCounters writes XINFO STREAM's first fields; first is the first
// entry, if any. Redis' radix-tree counts are its internals: keys is the
// number of nodes the entries span, nodes one more.
func (c *conn) streamCounters(op *streamOp, first *streamEntry) {
	m := &op.m
	nodes := int64(0)
	if first != nil {
		nodes = int64(m.tailNode-first.node) + 1
	}
	c.wr.BulkString("length")
	c.wr.Int(int64(m.length))
	c.wr.BulkString("radix-tree-keys")
	c.wr.Int(nodes)
	c.wr.BulkString("radix-tree-nodes")
	c.wr.Int(nodes + 1)
	c.wr.BulkString("last-generated-id")
	c.writeStreamID(m.last)
	c.wr.BulkString("max-deleted-entry-id")
	c.writeStreamID(m.maxDeleted)
	c.wr.BulkString("entries-added")
	c.wr.Int(int64(m.entriesAdded))
	c.wr.BulkString("recorded-first-entry-id")
	c.writeStreamID(m.first)
}

func (c *conn) streamSummary(op *streamOp) error {
	m := &op.m
	var edges [2]*streamEntry
	for i, rev := range []bool{false, true} {
		es, err := c.streamRange(op.key, m, streamID{}, maxStreamID, 1, rev)
		if err != nil {
			return err
		}
		if len(es) > 0 {
			edges[i] = &es[0]
		}
	}
	c.wr.MapHeader(10)
	c.streamCounters(op, edges[0])
	c.wr.BulkString("groups")
	c.wr.Int(int64(m.groups))
	for i, name := range []string{"first-entry", "last-entry"} {
		c.wr.BulkString(name)
		if edges[i] == nil {
			c.wr.Null()
		} else {
			c.writeStreamEntry(*edges[i])
		}
	}
	return nil
}

// fullGroup writes one group of XINFO STREAM FULL, with up to count
// (0: all) pending entries of the group and of each consumer.
func (c *conn) fullGroup(op *streamOp, g *streamGroup, count, now int64) error {
	type pending struct {
		id streamID
		n  streamNack
	}
	var pel []pending
	if err := op.scanPending(g, streamID{}, func(id streamID, n *streamNack) bool {
		pel = append(pel, pending{id, *n})
		return count == 0 || int64(len(pel)) < count
	}); err != nil {
		return err
	}
	consumers, err := op.allConsumers(g)
	if err != nil {
		return err
	}
	owned := make([][]pending, len(consumers))
	for i, cons := range consumers {
		var ids []streamID
		if err := op.scanOwned(g, cons, streamID{}, func(id streamID) bool {
			ids = append(ids, id)
			return count == 0 || int64(len(ids)) < count
		}); err != nil {
			return err
		}
		for _, id := range ids {
			n, err := op.nack(g, id)
			if err != nil {
				return err
			}
			if n != nil {
				owned[i] = append(owned[i], pending{id, *n})
			}
		}
	}
	c.wr.MapHeader(7)
	c.wr.BulkString("name")
	c.wr.Bulk(g.name)
	c.wr.BulkString("last-delivered-id")
	c.writeStreamID(g.lastID)
	c.wr.BulkString("entries-read")
	c.intOrNull(g.entriesRead)
	c.wr.BulkString("lag")
	c.writeLag(op, g)
	c.wr.BulkString("pel-count")
	c.wr.Int(int64(g.pending))
	c.wr.BulkString("pending")
	c.wr.ArrayHeader(len(pel))
	for _, p := range pel {
		c.wr.ArrayHeader(4)
		c.writeStreamID(p.id)
		c.wr.Bulk(p.n.consumer)
		c.wr.Int(p.n.deliveryTime)
		c.wr.Int(int64(p.n.deliveryCount))
	}
	c.wr.BulkString("consumers")
	c.wr.ArrayHeader(len(consumers))
	for i, cons := range consumers {
		c.wr.MapHeader(5)
		c.wr.BulkString("name")
		c.wr.Bulk(cons.name)
		c.wr.BulkString("seen-time")
		c.wr.Int(cons.seen)
		c.wr.BulkString("active-time")
		c.wr.Int(cons.active)
		c.wr.BulkString("pel-count")
		c.wr.Int(int64(cons.pending))
		c.wr.BulkString("pending")
		c.wr.ArrayHeader(len(owned[i]))
		for _, p := range owned[i] {
			c.wr.ArrayHeader(3)
			c.writeStreamID(p.id)
			c.wr.Int(p.n.deliveryTime)
			c.wr.Int(int64(p.n.deliveryCount))
		}
	}
	return nil
}
