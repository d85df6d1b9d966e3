package server

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// The consumer group commands; stream_group.go has the encoding. Errors
// and their order follow Redis 7's t_stream.c.
func init() {
	const g = "stream"
	w, wf, rw := flagWrite, flagWrite|flagFast, flagWrite|flagDenyOOM
	register(
		spec{name: "xgroup", arity: -2, group: g, since: "5.0.0", summary: "A container for consumer groups commands.",
			subs: []spec{
				{name: "create", arity: -5, flags: rw, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
					summary: "Creates a consumer group.", run: cmdXGroupCreate},
				{name: "setid", arity: -5, flags: w, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
					summary: "Sets the last-delivered ID of a consumer group.", run: cmdXGroupSetID},
				{name: "destroy", arity: 4, flags: w, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
					summary: "Destroys a consumer group.", run: cmdXGroupDestroy},
				{name: "createconsumer", arity: 5, flags: rw, firstKey: 2, lastKey: 2, step: 1, since: "6.2.0",
					summary: "Creates a consumer in a consumer group.", run: cmdXGroupCreateConsumer},
				{name: "delconsumer", arity: 5, flags: w, firstKey: 2, lastKey: 2, step: 1, since: "5.0.0",
					summary: "Deletes a consumer from a consumer group.", run: cmdXGroupDelConsumer},
				{name: "help", arity: 2, flags: flagLoading | flagStale, since: "5.0.0",
					summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
		spec{name: "xreadgroup", arity: -7, flags: w | flagMovableKeys, group: g, since: "5.0.0",
			summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", run: cmdXReadGroup},
		spec{name: "xack", arity: -4, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", run: cmdXAck},
		spec{name: "xpending", arity: -3, flags: flagReadonly, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Returns the information and entries from a stream consumer group's pending entries list.", run: cmdXPending},
		spec{name: "xclaim", arity: -6, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", run: cmdXClaim},
		spec{name: "xautoclaim", arity: -6, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.2.0",
			summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", run: cmdXAutoClaim},
	)
}

func errNoGroup(group, key []byte) error {
	return redisError("NOGROUP No such consumer group '" + string(group) + "' for key name '" + string(key) + "'")
}

func errNoKeyOrGroup(key, group []byte) error {
	return redisError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'")
}

const msgXGroupNoKey = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."

// subcommandSyntax is Redis' error for bad arguments to a subcommand.
func subcommandSyntax(args [][]byte) error {
	return redisError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

// parseEntriesRead parses ENTRIESREAD's value.
func parseEntriesRead(arg []byte) (int64, error) {
	n, ok := parseInt(arg)
	if !ok {
		return 0, redisError(msgNotInteger)
	}
	if n < 0 && n != invalidEntriesRead {
		return 0, redisError("ERR value for ENTRIESREAD must be positive or -1")
	}
	return n, nil
}

func cmdXGroupCreate(c *conn, _ *command, args [][]byte) error {
	mkStream := false
	entriesRead := int64(invalidEntriesRead)
	for i := 5; i < len(args); {
		switch {
		case is(args[i], "MKSTREAM"):
			mkStream = true
			i++
		case is(args[i], "ENTRIESREAD") && i+1 < len(args):
			n, err := parseEntriesRead(args[i+1])
			if err != nil {
				return err
			}
			entriesRead = n
			i += 2
		default:
			return subcommandSyntax(args)
		}
	}
	return c.streamWrite(args[2], func(op *streamOp) error {
		if !op.exists && !mkStream {
			return redisError(msgXGroupNoKey)
		}
		if len(args) > 8 {
			return subcommandSyntax(args)
		}
		var id streamID
		if a := args[4]; len(a) == 1 && a[0] == '$' {
			id = op.m.last
		} else {
			var err error
			if id, _, err = parseStreamID(a, true, false, 0); err != nil {
				return err
			}
		}
		if !op.exists {
			if err := op.create(); err != nil {
				return err
			}
		}
		g, err := op.createGroup(args[3], id, entriesRead)
		if err != nil {
			return err
		}
		if g == nil {
			return redisError("BUSYGROUP Consumer Group name already exists")
		}
		op.fire("xgroup-create")
		c.ok()
		return nil
	})
}

// groupWrite runs an XGROUP subcommand that needs the key and the group.
func (c *conn) groupWrite(args [][]byte, fn func(op *streamOp, g *streamGroup) error) error {
	return c.groupWriteMaybe(args, func(op *streamOp, g *streamGroup) error {
		if g == nil {
			return errNoGroup(args[3], args[2])
		}
		return fn(op, g)
	})
}

// groupWriteMaybe runs an XGROUP subcommand that needs the key; g is nil
// when the group does not exist.
func (c *conn) groupWriteMaybe(args [][]byte, fn func(op *streamOp, g *streamGroup) error) error {
	return c.streamWrite(args[2], func(op *streamOp) error {
		if !op.exists {
			return redisError(msgXGroupNoKey)
		}
		g, err := op.group(args[3])
		if err != nil {
			return err
		}
		return fn(op, g)
	})
}

func cmdXGroupSetID(c *conn, _ *command, args [][]byte) error {
	entriesRead := int64(invalidEntriesRead)
	for i := 5; i < len(args); i += 2 {
		if !is(args[i], "ENTRIESREAD") || i+1 == len(args) {
			return subcommandSyntax(args)
		}
		var err error
		if entriesRead, err = parseEntriesRead(args[i+1]); err != nil {
			return err
		}
	}
	return c.groupWrite(args, func(op *streamOp, g *streamGroup) error {
		if len(args) != 5 && len(args) != 7 {
			return subcommandSyntax(args)
		}
		id := op.m.last
		if a := args[4]; len(a) != 1 || a[0] != '$' {
			var err error
			if id, _, err = parseStreamID(a, false, false, 0); err != nil {
				return err
			}
		}
		g.lastID, g.entriesRead, g.dirty = id, entriesRead, true
		op.fire("xgroup-setid")
		c.ok()
		return nil
	})
}

func cmdXGroupDestroy(c *conn, _ *command, args [][]byte) error {
	return c.groupWriteMaybe(args, func(op *streamOp, g *streamGroup) error {
		if g == nil {
			c.wr.Int(0)
			return nil
		}
		if err := op.destroyGroup(g); err != nil {
			return err
		}
		op.fire("xgroup-destroy")
		c.wr.Int(1)
		return nil
	})
}

func cmdXGroupCreateConsumer(c *conn, _ *command, args [][]byte) error {
	return c.groupWrite(args, func(op *streamOp, g *streamGroup) error {
		_, created, err := op.consumer(g, args[4], true, c.clock().UnixMilli())
		if err != nil {
			return err
		}
		c.wr.Int(int64(boolInt(created)))
		return nil
	})
}

func cmdXGroupDelConsumer(c *conn, _ *command, args [][]byte) error {
	return c.groupWrite(args, func(op *streamOp, g *streamGroup) error {
		cons, _, err := op.consumer(g, args[4], false, 0)
		if err != nil {
			return err
		}
		var pending uint64
		if cons != nil {
			pending = cons.pending
			if err := op.deleteConsumer(g, cons); err != nil {
				return err
			}
			op.fire("xgroup-delconsumer")
		}
		c.wr.Int(int64(pending))
		return nil
	})
}

// hasTombstones reports whether an entry between start and end (inclusive)
// may have been deleted: Redis' streamRangeHasTombstones.
func (m *streamMeta) hasTombstones(start, end streamID) bool {
	if m.length == 0 || m.maxDeleted.isZero() || m.first.compare(m.maxDeleted) > 0 {
		return false
	}
	return start.compare(m.maxDeleted) <= 0 && m.maxDeleted.compare(end) <= 0
}

// entriesBefore estimates the number of entries added up to id: Redis'
// streamEstimateDistanceFromFirstEverEntry, -1 when it cannot know.
func (m *streamMeta) entriesBefore(id streamID) int64 {
	if m.entriesAdded == 0 {
		return 0
	}
	if m.length == 0 && id.compare(m.last) < 1 {
		return int64(m.entriesAdded)
	}
	switch c := id.compare(m.last); {
	case c == 0:
		return int64(m.entriesAdded)
	case c > 0:
		return invalidEntriesRead
	}
	if m.maxDeleted.isZero() || m.maxDeleted.compare(m.first) < 0 {
		switch c := id.compare(m.first); {
		case c < 0:
			return int64(m.entriesAdded - m.length)
		case c == 0:
			return int64(m.entriesAdded - m.length + 1)
		}
	}
	return invalidEntriesRead
}

// deliver records that g delivered entry id: the group's last id and
// read counter move past it.
func (op *streamOp) deliver(g *streamGroup, id streamID) {
	if id.compare(g.lastID) <= 0 {
		return
	}
	if g.entriesRead != invalidEntriesRead && !op.m.hasTombstones(id, maxStreamID) {
		g.entriesRead++
	} else if op.m.entriesAdded != 0 {
		g.entriesRead = op.m.entriesBefore(id)
	}
	g.lastID = id
	g.dirty = true
}

// streamRead is what XREADGROUP read from one stream, to reply with.
type streamRead struct {
	key     []byte
	entries []streamEntry
	missing []bool // history: the entry was deleted
}

func (c *conn) writeStreamReads(reads []streamRead) {
	c.streamsHeader(len(reads))
	for _, r := range reads {
		if c.wr.Protocol() == 2 {
			c.wr.ArrayHeader(2)
		}
		c.wr.Bulk(r.key)
		c.wr.ArrayHeader(len(r.entries))
		for i, e := range r.entries {
			if r.missing != nil && r.missing[i] {
				c.wr.ArrayHeader(2)
				c.writeStreamID(e.id)
				c.wr.NullArray()
				continue
			}
			c.writeStreamEntry(e)
		}
	}
}

func cmdXReadGroup(c *conn, _ *command, args [][]byte) error {
	a, err := parseStreamRead(args, true, c.inScript())
	if err != nil {
		return err
	}
	// Checked before anything is read or written, in Redis' order.
	history := make([]bool, len(a.keys))
	after := make([]streamID, len(a.keys))
	for i, key := range a.keys {
		op, err := c.s.ks.openStream(c.reader(), nil, &c.scratch, key)
		if err != nil {
			return err
		}
		g, err := op.group(a.group)
		if err != nil {
			return err
		}
		if g == nil {
			return redisError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.group) + "' in XREADGROUP with GROUP option")
		}
		switch arg := a.ids[i]; {
		case len(arg) == 1 && arg[0] == '$':
			return redisError("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
		case len(arg) == 1 && arg[0] == '>':
		default:
			if after[i], _, err = parseStreamID(arg, true, false, 0); err != nil {
				return err
			}
			history[i] = true
		}
	}
	c.streamRead(a, func(ready []byte) bool { return c.xreadGroupTry(a, history, after, ready) })
	return nil
}

// xreadGroupTry serves XREADGROUP from every stream (ready nil) or from
// ready only; it replies and returns true when it served anything.
func (c *conn) xreadGroupTry(a streamReadArgs, history []bool, after []streamID, ready []byte) bool {
	held := c.lock(a.keys, 1)
	defer c.unlock(held)
	now := time.Now().UnixMilli()
	var reads []streamRead
	var ops []*streamOp
	fail := func(err error) bool {
		c.batch.Reset()
		c.replyErr(err)
		return true
	}
	for i, key := range a.keys {
		if ready != nil && (string(key) != string(ready) || len(ops) > 0) {
			continue
		}
		op, err := c.openStreamWrite(key)
		switch {
		case ready != nil && (errors.Is(err, errWrongType) || err == nil && !op.exists):
			return fail(redisError("UNBLOCKED the stream key no longer exists"))
		case err != nil:
			return fail(err)
		}
		g, err := op.group(a.group)
		if err != nil {
			return fail(err)
		}
		if g == nil {
			if ready != nil {
				return fail(redisError("NOGROUP the consumer group this client was blocked on no longer exists"))
			}
			return fail(redisError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.group) + "' in XREADGROUP with GROUP option"))
		}
		ops = append(ops, op)
		// As in Redis 7.0, the consumer is created, and seen, only by a
		// read that serves it: its history, or new entries.
		consumer := func() (*streamConsumer, error) {
			cons, _, err := op.consumer(g, a.consumer, true, now)
			if err == nil {
				cons.seen, cons.dirty = now, true
			}
			return cons, err
		}
		var read streamRead
		var served bool
		if history[i] {
			var cons *streamConsumer
			if cons, err = consumer(); err == nil {
				read, err = op.readHistory(g, cons, after[i], a.count, now)
			}
			served = true
		} else if op.m.length > 0 && op.m.last.compare(g.lastID) > 0 {
			read, err = op.readNew(g, consumer, a.count, a.noAck, now)
			served = len(read.entries) > 0
		}
		if err != nil {
			return fail(err)
		}
		if served {
			read.key = key
			reads = append(reads, read)
		}
	}
	for _, op := range ops {
		op.flush(&c.scratch)
	}
	if err := c.commit(); err != nil {
		c.replyErr(err)
		return true
	}
	for _, op := range ops {
		c.notifyOp(op)
	}
	if len(reads) == 0 {
		return false
	}
	c.writeStreamReads(reads)
	return true
}

// readNew delivers up to count (0: all) entries after g's last id to
// the consumer that consumer returns, adding them to the PEL unless noAck.
func (op *streamOp) readNew(g *streamGroup, consumer func() (*streamConsumer, error), count int64, noAck bool, now int64) (streamRead, error) {
	var read streamRead
	start, _ := g.lastID.next()
	err := op.ks.streamScan(op.r, op.key, &op.m, start, maxStreamID, false, func(e streamEntry) bool {
		e.fields = cloneAll(e.fields)
		read.entries = append(read.entries, e)
		return count <= 0 || int64(len(read.entries)) < count
	})
	if err != nil || len(read.entries) == 0 {
		return read, err
	}
	cons, err := consumer()
	if err != nil {
		return read, err
	}
	for _, e := range read.entries {
		op.deliver(g, e.id)
		if noAck {
			continue
		}
		old, err := op.nack(g, e.id)
		if err != nil {
			return read, err
		}
		if err := op.putNack(g, cons, e.id, &streamNack{deliveryTime: now, deliveryCount: 1}, old); err != nil {
			return read, err
		}
		cons.active, cons.dirty = now, true
	}
	return read, nil
}

// readHistory returns up to count (0: all) entries pending for cons
// after id, counting a delivery of each that still exists.
func (op *streamOp) readHistory(g *streamGroup, cons *streamConsumer, after streamID, count int64, now int64) (streamRead, error) {
	var read streamRead
	start, ok := after.next()
	if !ok {
		return read, nil
	}
	var ids []streamID
	if err := op.scanOwned(g, cons, start, func(id streamID) bool {
		ids = append(ids, id)
		return count <= 0 || int64(len(ids)) < count
	}); err != nil {
		return read, err
	}
	var buf []byte
	for _, id := range ids {
		e, ok, err := op.ks.streamGet(op.r, &buf, op.key, &op.m, id)
		if err != nil {
			return read, err
		}
		e.id = id
		e.fields = cloneAll(e.fields)
		read.entries = append(read.entries, e)
		read.missing = append(read.missing, !ok)
		if !ok {
			continue
		}
		n, err := op.nack(g, id)
		if err != nil {
			return read, err
		}
		if n == nil {
			return read, op.corrupt("consumer's pending entry " + id.String())
		}
		n.deliveryTime = now
		n.deliveryCount++
		if err := op.putNack(g, cons, id, n, n); err != nil {
			return read, err
		}
	}
	return read, nil
}

// parseStrictIDs parses ids as XACK and XCLAIM do.
func parseStrictIDs(args [][]byte) ([]streamID, error) {
	ids := make([]streamID, len(args))
	for i, a := range args {
		var err error
		if ids[i], _, err = parseStreamID(a, true, false, 0); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func cmdXAck(c *conn, _ *command, args [][]byte) error {
	return c.streamWriteCount(args[1], func(op *streamOp) (int64, error) {
		g, err := op.group(args[2])
		if err != nil || g == nil {
			return 0, err
		}
		ids, err := parseStrictIDs(args[3:])
		if err != nil {
			return 0, err
		}
		var acked int64
		for _, id := range ids {
			ok, err := op.ackOne(g, id)
			if err != nil {
				return 0, err
			}
			acked += int64(boolInt(ok))
		}
		return acked, nil
	})
}

func cmdXPending(c *conn, _ *command, args [][]byte) error {
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		return redisError(msgSyntax)
	}
	var start, end streamID
	var count, minIdle int64
	var consumer []byte
	if len(args) >= 6 {
		at := 3
		if is(args[3], "IDLE") {
			n, ok := parseInt(args[4])
			if !ok {
				return redisError(msgNotInteger)
			}
			minIdle = n
			if len(args) < 8 {
				return redisError(msgSyntax)
			}
			at += 2
		}
		n, ok := parseInt(args[at+2])
		if !ok {
			return redisError(msgNotInteger)
		}
		count = max(n, 0)
		var err error
		if start, err = parseRangeID(args[at], false); err != nil {
			return err
		}
		if end, err = parseRangeID(args[at+1], true); err != nil {
			return err
		}
		if at+3 < len(args) {
			consumer = args[at+3]
		}
	}
	defer c.pin()()
	op, err := c.s.ks.openStream(c.reader(), nil, &c.scratch, args[1])
	if err != nil {
		return err
	}
	g, err := op.group(args[2])
	if err != nil {
		return err
	}
	if g == nil {
		return errNoKeyOrGroup(args[1], args[2])
	}
	if len(args) == 3 {
		return c.pendingSummary(op, g)
	}
	now := c.clock().UnixMilli()
	type row struct {
		id streamID
		n  *streamNack
	}
	var rows []row
	add := func(id streamID, n *streamNack) bool {
		if id.compare(end) > 0 || count == 0 {
			return false
		}
		if minIdle != 0 && now-n.deliveryTime < minIdle {
			return true
		}
		rows = append(rows, row{id, n})
		count--
		return true
	}
	if consumer != nil {
		cons, _, err := op.consumer(g, consumer, false, 0)
		if err != nil {
			return err
		}
		if cons != nil {
			var ids []streamID
			if err := op.scanOwned(g, cons, start, func(id streamID) bool {
				if id.compare(end) > 0 {
					return false
				}
				ids = append(ids, id)
				return true
			}); err != nil {
				return err
			}
			for _, id := range ids {
				n, err := op.nack(g, id)
				if err != nil {
					return err
				}
				if n != nil && !add(id, n) {
					break
				}
			}
		}
	} else if err := op.scanPending(g, start, add); err != nil {
		return err
	}
	c.wr.ArrayHeader(len(rows))
	for _, r := range rows {
		c.wr.ArrayHeader(4)
		c.writeStreamID(r.id)
		c.wr.Bulk(r.n.consumer)
		c.wr.Int(max(now-r.n.deliveryTime, 0))
		c.wr.Int(int64(r.n.deliveryCount))
	}
	return nil
}

// pendingSummary replies to XPENDING key group.
func (c *conn) pendingSummary(op *streamOp, g *streamGroup) error {
	if g.pending == 0 {
		c.wr.ArrayHeader(4)
		c.wr.Int(0)
		c.wr.Null()
		c.wr.Null()
		c.wr.NullArray()
		return nil
	}
	var first, last streamID
	seen := false
	if err := op.scanPending(g, streamID{}, func(id streamID, _ *streamNack) bool {
		first, seen = id, true
		return false
	}); err != nil {
		return err
	}
	lastID, err := op.lastPending(g)
	if err != nil {
		return err
	}
	last = lastID
	if !seen {
		return op.corrupt("pending entries list")
	}
	type pair struct {
		name    []byte
		pending uint64
	}
	var owners []pair
	if err := op.scanConsumers(g, func(cons *streamConsumer) bool {
		if cons.pending > 0 {
			owners = append(owners, pair{cons.name, cons.pending})
		}
		return true
	}); err != nil {
		return err
	}
	c.wr.ArrayHeader(4)
	c.wr.Int(int64(g.pending))
	c.writeStreamID(first)
	c.writeStreamID(last)
	c.wr.ArrayHeader(len(owners))
	for _, o := range owners {
		c.wr.ArrayHeader(2)
		c.wr.Bulk(o.name)
		c.wr.BulkString(strconv.FormatUint(o.pending, 10))
	}
	return nil
}

// lastPending returns the largest id in g's PEL.
func (op *streamOp) lastPending(g *streamGroup) (streamID, error) {
	prefix := op.groupPrefix(streamPendingSub, g.name)
	it, err := op.r.NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return streamID{}, err
	}
	var id streamID
	if it.Last() && len(it.Key()) == len(prefix)+16 {
		id = decodeStreamID(it.Key()[len(prefix):])
	}
	return id, closeIter(it, nil)
}

// claimArgs are XCLAIM's options.
type claimArgs struct {
	minIdle      int64
	retryCount   int64 // -1: not given
	deliveryTime int64 // -1: not given
	force        bool
	justID       bool
	lastID       streamID
}

func cmdXClaim(c *conn, _ *command, args [][]byte) error {
	key, group := args[1], args[2]
	return c.streamWrite(key, func(op *streamOp) error {
		g, err := op.group(group)
		if err != nil {
			return err
		}
		if g == nil {
			return errNoKeyOrGroup(key, group)
		}
		ca := claimArgs{retryCount: -1, deliveryTime: -1}
		var ok bool
		if ca.minIdle, ok = parseInt(args[4]); !ok {
			return redisError("ERR Invalid min-idle-time argument for XCLAIM")
		}
		ca.minIdle = max(ca.minIdle, 0)
		j := 5
		var ids []streamID
		for ; j < len(args); j++ {
			id, _, err := parseStreamID(args[j], true, false, 0)
			if err != nil {
				break
			}
			ids = append(ids, id)
		}
		now := c.clock().UnixMilli()
		for ; j < len(args); j++ {
			more := j+1 < len(args)
			opt := args[j]
			num := func(msg string) (int64, error) {
				j++
				n, ok := parseInt(args[j])
				if !ok {
					return 0, redisError("ERR Invalid " + msg + " option argument for XCLAIM")
				}
				return n, nil
			}
			switch {
			case is(opt, "FORCE"):
				ca.force = true
			case is(opt, "JUSTID"):
				ca.justID = true
			case is(opt, "IDLE") && more:
				n, err := num("IDLE")
				if err != nil {
					return err
				}
				ca.deliveryTime = now - n
			case is(opt, "TIME") && more:
				if ca.deliveryTime, err = num("TIME"); err != nil {
					return err
				}
			case is(opt, "RETRYCOUNT") && more:
				if ca.retryCount, err = num("RETRYCOUNT"); err != nil {
					return err
				}
			case is(opt, "LASTID") && more:
				j++
				if ca.lastID, _, err = parseStreamID(args[j], true, false, 0); err != nil {
					return err
				}
			default:
				return redisError("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			}
		}
		if ca.lastID.compare(g.lastID) > 0 {
			g.lastID, g.dirty = ca.lastID, true
		}
		if ca.deliveryTime == -1 || ca.deliveryTime < 0 || ca.deliveryTime > now {
			ca.deliveryTime = now
		}
		return c.claim(op, g, args[3], ids, ca, now)
	})
}

// claim moves the pending entries ids of g to consumer name and replies
// with them: XCLAIM.
func (c *conn) claim(op *streamOp, g *streamGroup, name []byte, ids []streamID, ca claimArgs, now int64) error {
	var cons *streamConsumer
	var claimed []streamEntry
	for _, id := range ids {
		n, err := op.nack(g, id)
		if err != nil {
			return err
		}
		e, exists, err := op.ks.streamGet(op.r, &c.elemBuf, op.key, &op.m, id)
		if err != nil {
			return err
		}
		if !exists {
			if n != nil {
				if _, err := op.ackOne(g, id); err != nil {
					return err
				}
			}
			continue
		}
		fresh := false
		if ca.force && n == nil {
			n, fresh = &streamNack{deliveryTime: now, deliveryCount: 1}, true
		}
		if n == nil {
			continue
		}
		if !fresh && ca.minIdle != 0 && now-n.deliveryTime < ca.minIdle {
			continue
		}
		if cons == nil {
			if cons, _, err = op.consumer(g, name, true, now); err != nil {
				return err
			}
		}
		old := n
		if fresh {
			old = nil
		}
		upd := *n
		upd.deliveryTime = ca.deliveryTime
		switch {
		case ca.retryCount >= 0:
			upd.deliveryCount = uint64(ca.retryCount)
		case !ca.justID:
			upd.deliveryCount++
		}
		if err := op.putNack(g, cons, id, &upd, old); err != nil {
			return err
		}
		cons.active, cons.dirty = now, true
		e.id = id
		e.fields = cloneAll(e.fields)
		claimed = append(claimed, e)
	}
	c.writeClaimed(claimed, ca.justID)
	return nil
}

// writeClaimed replies with the entries XCLAIM or XAUTOCLAIM claimed, or
// with their ids only.
func (c *conn) writeClaimed(claimed []streamEntry, justID bool) {
	c.wr.ArrayHeader(len(claimed))
	for _, e := range claimed {
		if justID {
			c.writeStreamID(e.id)
		} else {
			c.writeStreamEntry(e)
		}
	}
}

func cmdXAutoClaim(c *conn, _ *command, args [][]byte) error {
	key, group := args[1], args[2]
	minIdle, ok := parseInt(args[4])
	if !ok {
		return redisError("ERR Invalid min-idle-time argument for XAUTOCLAIM")
	}
	minIdle = max(minIdle, 0)
	start, err := parseRangeID(args[5], false)
	if err != nil {
		return err
	}
	count, justID := int64(100), false
	for j := 6; j < len(args); j++ {
		switch {
		case is(args[j], "COUNT") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				return redisError("ERR COUNT must be > 0")
			}
			count = n
			j++
		case is(args[j], "JUSTID"):
			justID = true
		default:
			return redisError(msgSyntax)
		}
	}
	return c.streamWrite(key, func(op *streamOp) error {
		g, err := op.group(group)
		if err != nil {
			return err
		}
		if g == nil {
			return errNoKeyOrGroup(key, group)
		}
		now := c.clock().UnixMilli()
		attempts := count * 10
		// The PEL ids from start that the walk may look at, and one more:
		// the cursor of the next call.
		var ids []streamID
		var nacks []*streamNack
		if err := op.scanPending(g, start, func(id streamID, n *streamNack) bool {
			ids = append(ids, id)
			nacks = append(nacks, n)
			return int64(len(ids)) <= attempts
		}); err != nil {
			return err
		}
		var cons *streamConsumer
		var claimed []streamEntry
		var deleted []streamID
		i := 0
		for ; attempts > 0 && count > 0 && i < len(ids); i++ {
			attempts--
			id, n := ids[i], nacks[i]
			e, exists, err := op.ks.streamGet(op.r, &c.elemBuf, op.key, &op.m, id)
			if err != nil {
				return err
			}
			if !exists {
				if _, err := op.ackOne(g, id); err != nil {
					return err
				}
				deleted = append(deleted, id)
				count--
				continue
			}
			if minIdle != 0 && now-n.deliveryTime < minIdle {
				continue
			}
			if cons == nil {
				if cons, _, err = op.consumer(g, args[3], true, now); err != nil {
					return err
				}
			}
			upd := *n
			upd.deliveryTime = now
			if !justID {
				upd.deliveryCount++
			}
			if err := op.putNack(g, cons, id, &upd, n); err != nil {
				return err
			}
			cons.active, cons.dirty = now, true
			e.id = id
			e.fields = cloneAll(e.fields)
			claimed = append(claimed, e)
			count--
		}
		var cursor streamID
		if i < len(ids) {
			cursor = ids[i]
		}
		c.wr.ArrayHeader(3)
		c.writeStreamID(cursor)
		c.writeClaimed(claimed, justID)
		c.wr.ArrayHeader(len(deleted))
		for _, id := range deleted {
			c.writeStreamID(id)
		}
		return nil
	})
}
