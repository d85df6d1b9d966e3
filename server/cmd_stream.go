package server

import (
	"fmt"
	"strconv"
	"time"
)

// The stream commands without consumer groups: they parse arguments in
// Redis 7's order (so the same bad input gets the same error) and reply;
// stream.go has the encoding.
func init() {
	const g = "stream"
	w, wf, rwf := flagWrite, flagWrite|flagFast, flagWrite|flagDenyOOM|flagFast
	register(
		spec{name: "xadd", arity: -5, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", run: cmdXAdd},
		spec{name: "xrange", arity: -4, flags: flagReadonly, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Returns the messages from a stream within a range of IDs.", run: xrange(false)},
		spec{name: "xrevrange", arity: -4, flags: flagReadonly, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Returns the messages from a stream within a range of IDs in reverse order.", run: xrange(true)},
		spec{name: "xlen", arity: 2, flags: flagReadonly | flagFast, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Return the number of messages in a stream.", run: cmdXLen},
		spec{name: "xdel", arity: -3, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Returns the number of messages after removing them from a stream.", run: cmdXDel},
		spec{name: "xtrim", arity: -4, flags: w, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "Deletes messages from the beginning of a stream.", run: cmdXTrim},
		spec{name: "xsetid", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "5.0.0",
			summary: "An internal command for replicating stream values.", run: cmdXSetID},
		spec{name: "xread", arity: -4, flags: flagReadonly | flagMovableKeys, group: g, since: "5.0.0",
			summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", run: cmdXRead},
	)
}

// writeStreamEntry replies with e as [id, [field, value, …]].
func (c *conn) writeStreamEntry(e streamEntry) {
	c.wr.ArrayHeader(2)
	c.writeStreamID(e.id)
	c.bulks(e.fields)
}

func (c *conn) writeStreamID(id streamID) {
	c.wr.BulkString(id.String())
}

// streamWrite runs a write of the stream at key under the key's lock: fn
// changes op (a new, empty stream's when the key is absent, with
// op.exists false) and adds its writes to c.batch; streamWrite then adds
// the changed records and metadata and commits. It replies nothing.
func (c *conn) streamWrite(key []byte, fn func(op *streamOp) error) error {
	held := c.lock([][]byte{key}, 1)
	defer c.unlock(held)
	op, err := c.openStreamWrite(key)
	if err != nil {
		return err
	}
	if err := fn(op); err != nil {
		c.batch.Reset()
		return err
	}
	op.flush(&c.scratch)
	if c.batch.Count() != 0 {
		if err := c.commit(); err != nil {
			return err
		}
	}
	c.notifyOp(op)
	return nil
}

// openStreamWrite opens the stream at key for a write, under the key's
// lock: one in the 96-byte layout is upgraded in c.batch first, so that
// the command sees and keeps node records (streamOp.upgrade).
func (c *conn) openStreamWrite(key []byte) (*streamOp, error) {
	op, err := c.s.ks.openStream(c.reader(), c.batch, &c.scratch, key)
	if err == nil {
		err = op.upgrade(c.nodeMaxEntries())
	}
	if err != nil {
		c.batch.Reset()
		return nil, err
	}
	return op, nil
}

// notifyOp fires the keyspace events op recorded; its write has
// committed.
func (c *conn) notifyOp(op *streamOp) {
	if op.dead[0] != nil && c.s.ks.reclaim != nil {
		c.s.ks.reclaim.add(op.dead[0], op.dead[1])
	}
	if op.created {
		c.notifyNew(op.key)
	}
	for _, e := range op.events {
		c.notify(notifyStream, e, op.key)
	}
}

// streamWriteCount is streamWrite for a command that replies with the
// count fn returns.
func (c *conn) streamWriteCount(key []byte, fn func(op *streamOp) (int64, error)) error {
	var n int64
	err := c.streamWrite(key, func(op *streamOp) error {
		var err error
		n, err = fn(op)
		return err
	})
	if err != nil {
		return err
	}
	c.wr.Int(n)
	return nil
}

// create makes op a new, empty stream at its key.
func (op *streamOp) create() error {
	m, err := op.ks.newStream(op.m.ns)
	if err != nil {
		return err
	}
	op.m, op.exists, op.metaDirty, op.created = m, true, true, true
	return nil
}

// nodeMaxEntries is stream-node-max-entries, the size of Redis' stream
// nodes, which decides what "~" trims.
func (c *conn) nodeMaxEntries() uint64 {
	n, _ := strconv.ParseUint(c.s.config().NoEffect[streamNodeEntriesSlot], 10, 64)
	if c.s.config().NoEffect[streamNodeEntriesSlot] == "" {
		n = 100
	}
	return n
}

// parseTrimArgs parses XADD's options up to the id (xadd) or XTRIM's
// arguments, from args[2] on, as Redis' streamParseAddOrTrimArgsOrReply:
// it returns the trim (maxLen -2: none) and the position of the id.
func (c *conn) parseTrimArgs(args [][]byte, xadd bool) (t streamTrim, noMk bool, idAt int, err error) {
	t.maxLen = -2
	limitGiven := false
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			return c.finishTrim(t, noMk, i, limitGiven, xadd)
		case (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0:
			if t.maxLen != -2 {
				return t, false, 0, redisError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
			}
			t.approx = false
			if next := args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				t.approx = next[0] == '~'
				i++
			}
			i++
			if is(opt, "MAXLEN") {
				n, ok := parseInt(args[i])
				if !ok {
					return t, false, 0, redisError(msgNotInteger)
				}
				if n < 0 {
					return t, false, 0, redisError("ERR The MAXLEN argument must be >= 0.")
				}
				t.maxLen = n
			} else {
				if t.minID, _, err = parseStreamID(args[i], true, false, 0); err != nil {
					return t, false, 0, err
				}
				t.maxLen = -1
			}
		case is(opt, "LIMIT") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				return t, false, 0, redisError(msgNotInteger)
			}
			if n < 0 {
				return t, false, 0, redisError("ERR The LIMIT argument must be >= 0.")
			}
			t.limit, limitGiven = n, true
			i++
		case xadd && is(opt, "NOMKSTREAM"):
			noMk = true
		case xadd:
			if _, _, err := parseStreamID(opt, true, true, 0); err != nil {
				return t, false, 0, err
			}
			return c.finishTrim(t, noMk, i, limitGiven, xadd)
		default:
			return t, false, 0, redisError(msgSyntax)
		}
	}
	return c.finishTrim(t, noMk, i, limitGiven, xadd)
}

func (c *conn) finishTrim(t streamTrim, noMk bool, idAt int, limitGiven, xadd bool) (streamTrim, bool, int, error) {
	if t.limit != 0 && t.maxLen == -2 {
		return t, false, 0, redisError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	}
	if !xadd && t.maxLen == -2 {
		return t, false, 0, redisError("ERR syntax error, XTRIM must be called with a trimming strategy")
	}
	switch {
	case limitGiven && !t.approx:
		return t, false, 0, redisError("ERR syntax error, LIMIT cannot be used without the special ~ option")
	case !limitGiven && t.approx:
		t.limit = 100 * int64(c.nodeMaxEntries())
		if t.limit <= 0 || t.limit > 1_000_000 {
			t.limit = 10_000
		}
	case !limitGiven:
		t.limit = 0
	}
	return t, noMk, idAt, nil
}

func cmdXAdd(c *conn, cmd *command, args [][]byte) error {
	t, noMk, idAt, err := c.parseTrimArgs(args, true)
	if err != nil {
		return err
	}
	if n := len(args) - idAt - 1; n < 2 || n%2 == 1 {
		return redisError(wrongArity(cmd))
	}
	var id streamID
	explicit, autoSeq := false, false
	if a := args[idAt]; len(a) != 1 || a[0] != '*' {
		// Already checked by parseTrimArgs, which stopped at it.
		id, autoSeq, _ = parseStreamID(a, true, true, 0)
		explicit = true
		if !autoSeq && id.isZero() {
			return redisError("ERR The ID specified in XADD must be greater than 0-0")
		}
	}
	fields := args[idAt+1:]
	var size int64
	for _, f := range fields {
		size += int64(len(f)) + 10
	}
	key := args[1]
	var added streamID
	created := false
	err = c.streamWrite(key, func(op *streamOp) error {
		if !op.exists {
			if noMk {
				return nil
			}
			if err := op.create(); err != nil {
				return err
			}
			created = true
		}
		m := &op.m
		if m.last == maxStreamID {
			return redisError("ERR The stream has exhausted the last possible ID, unable to add more items")
		}
		switch {
		case !explicit:
			now := uint64(c.clock().UnixMilli())
			if now > m.last.ms {
				added = streamID{now, 0}
			} else {
				added, _ = m.last.next()
			}
		case autoSeq && id.ms == m.last.ms:
			if m.last.seq == ^uint64(0) {
				return redisError(msgXAddTooSmall)
			}
			added = streamID{id.ms, m.last.seq + 1}
		default:
			added = id
		}
		if added.compare(m.last) <= 0 {
			return redisError(msgXAddTooSmall)
		}
		if size+int64(len(key))+64 > maxElem(key) {
			return redisError("ERR Elements are too large to be stored")
		}
		node := c.s.ks.streamAppend(c.batch, &c.elemBuf, key, m, added, fields, c.nodeMaxEntries())
		op.metaDirty = true
		op.fire("xadd")
		if t.maxLen == -2 {
			return nil
		}
		deleted, err := op.trim(c.reader(), t, &streamEntry{id: added, node: node})
		if deleted > 0 {
			op.fire("xtrim")
		}
		return err
	})
	if err != nil {
		return err
	}
	if !created && added.isZero() {
		c.wr.Null()
		return nil
	}
	c.signalReady(key)
	c.writeStreamID(added)
	return nil
}

const msgXAddTooSmall = "ERR The ID specified in XADD is equal or smaller than the target stream top item"

// parseRangeID parses an XRANGE bound: an id, "-", "+", or "(" and an
// id, exclusive.
func parseRangeID(arg []byte, end bool) (streamID, error) {
	missing := uint64(0)
	if end {
		missing = ^uint64(0)
	}
	if len(arg) > 1 && arg[0] == '(' {
		id, _, err := parseStreamID(arg[1:], true, false, missing)
		if err != nil {
			return id, err
		}
		var ok bool
		if end {
			id, ok = id.prev()
		} else {
			id, ok = id.next()
		}
		if !ok {
			if end {
				return id, redisError("ERR invalid end ID for the interval")
			}
			return id, redisError("ERR invalid start ID for the interval")
		}
		return id, nil
	}
	id, _, err := parseStreamID(arg, false, false, missing)
	return id, err
}

// xrange returns the handler of XRANGE key start end [COUNT n], or with
// rev of XREVRANGE key end start [COUNT n].
func xrange(rev bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		startArg, endArg := args[2], args[3]
		if rev {
			startArg, endArg = endArg, startArg
		}
		start, err := parseRangeID(startArg, false)
		if err != nil {
			return err
		}
		end, err := parseRangeID(endArg, true)
		if err != nil {
			return err
		}
		count := int64(-1)
		for j := 4; j < len(args); j++ {
			if !is(args[j], "COUNT") || j+1 == len(args) {
				return redisError(msgSyntax)
			}
			j++
			n, ok := parseInt(args[j])
			if !ok {
				return redisError(msgNotInteger)
			}
			count = max(n, 0)
		}
		key := args[1]
		defer c.pin()()
		m, exists, err := c.s.ks.getStream(c.reader(), &c.scratch, key)
		if err != nil {
			return err
		}
		c.countLookup(key, exists)
		switch {
		case !exists:
			c.wr.ArrayHeader(0)
			return nil
		case count == 0:
			c.wr.NullArray()
			return nil
		}
		entries, err := c.streamRange(key, &m, start, end, count, rev)
		if err != nil {
			return err
		}
		c.wr.ArrayHeader(len(entries))
		for _, e := range entries {
			c.writeStreamEntry(e)
		}
		return nil
	}
}

// streamRange reads up to count entries (-1 or 0: all) of m at key in
// [start, end], copied, so that a read error is the whole reply.
func (c *conn) streamRange(key []byte, m *streamMeta, start, end streamID, count int64, rev bool) ([]streamEntry, error) {
	var out []streamEntry
	err := c.s.ks.streamScan(c.reader(), key, m, start, end, rev, func(e streamEntry) bool {
		e.fields = cloneAll(e.fields)
		out = append(out, e)
		return count <= 0 || int64(len(out)) < count
	})
	return out, err
}

func cloneAll(bs [][]byte) [][]byte {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	flat := make([]byte, 0, n)
	out := make([][]byte, len(bs))
	for i, b := range bs {
		flat = append(flat, b...)
		out[i] = flat[len(flat)-len(b):]
	}
	return out
}

func cmdXLen(c *conn, _ *command, args [][]byte) error {
	m, _, err := c.s.ks.getStream(c.reader(), &c.scratch, args[1])
	if err != nil {
		return err
	}
	c.wr.Int(int64(m.length))
	return nil
}

func cmdXDel(c *conn, _ *command, args [][]byte) error {
	return c.streamWriteCount(args[1], func(op *streamOp) (int64, error) {
		if !op.exists {
			return 0, nil
		}
		ids, err := parseStrictIDs(args[2:])
		if err != nil {
			return 0, err
		}
		deleted, err := c.streamDelete(op, ids)
		if deleted > 0 {
			op.fire("xdel")
		}
		return deleted, err
	})
}

// streamDelete adds to the batch the deletion of the entries ids of op
// and returns how many there were: each entry's deletion, and the live
// counts of the nodes they were in.
func (c *conn) streamDelete(op *streamOp, ids []streamID) (int64, error) {
	var deleted int64
	m := &op.m
	gone := map[streamID]bool{}
	fromNode := map[uint64]uint64{} // node → entries deleted from it
	firstGone := false
	for _, id := range ids {
		if gone[id] {
			continue
		}
		e, ok, err := c.s.ks.streamGet(c.reader(), &c.elemBuf, op.key, m, id)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		gone[id] = true
		fromNode[e.node]++
		c.elemBuf = streamEntryKey(c.elemBuf, op.key, m, id)
		c.batch.Delete(c.elemBuf)
		m.length--
		deleted++
		firstGone = firstGone || id == m.first
		if id.compare(m.maxDeleted) > 0 {
			m.maxDeleted = id
		}
	}
	if deleted == 0 {
		return 0, nil
	}
	op.metaDirty = true
	nodes := &streamNodes{r: c.reader(), key: op.key, m: m}
	for n, k := range fromNode {
		node, err := nodes.get(n)
		if err == nil && node.live < k {
			err = op.corrupt(fmt.Sprintf("stream node %d's record", n))
		}
		if err != nil {
			nodes.close()
			return 0, err
		}
		node.live -= k
		nodes.put(c.batch, n, node)
	}
	// Redis frees a node when XDEL deletes its last live entry; when that
	// was the tail, the next XADD goes to the newest node left if it has
	// room. So the tail falls back to the newest node with live entries
	// (the nodes after it hold only deleted ones, and their numbers are
	// used again).
	for n := m.tailNode; m.length > 0 && m.tail.live == 0 && n > m.headNode; {
		n--
		node, err := nodes.get(n)
		if err != nil {
			return 0, err
		}
		if node.live > 0 {
			m.tailNode, m.tail = n, node
		}
	}
	if err := nodes.close(); err != nil {
		return 0, err
	}
	if m.length == 0 {
		m.first, m.tail = streamID{}, streamNode{} // Redis frees the last node too
		return deleted, nil
	}
	if !firstGone {
		return deleted, nil
	}
	return deleted, c.s.ks.streamScan(c.reader(), op.key, m, m.first, maxStreamID, false, func(e streamEntry) bool {
		if gone[e.id] {
			return true
		}
		m.first, m.headNode = e.id, e.node
		return false
	})
}

func cmdXTrim(c *conn, _ *command, args [][]byte) error {
	t, _, _, err := c.parseTrimArgs(args, false)
	if err != nil {
		return err
	}
	return c.streamWriteCount(args[1], func(op *streamOp) (int64, error) {
		if !op.exists {
			return 0, nil
		}
		deleted, err := op.trim(c.reader(), t, nil)
		if deleted > 0 {
			op.fire("xtrim")
		}
		return deleted, err
	})
}

// cmdXSetID is XSETID as Redis 7.0.15 has it, which lets the last id
// fall below the largest deleted one (later releases refuse that).
func cmdXSetID(c *conn, _ *command, args [][]byte) error {
	id, _, err := parseStreamID(args[2], true, false, 0)
	if err != nil {
		return err
	}
	entriesAdded := int64(-1)
	var maxDeleted streamID
	for i := 3; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case is(args[i], "ENTRIESADDED") && more:
			n, ok := parseInt(args[i+1])
			if !ok {
				return redisError(msgNotInteger)
			}
			if n < 0 {
				return redisError("ERR entries_added must be positive")
			}
			entriesAdded = n
		case is(args[i], "MAXDELETEDID") && more:
			if maxDeleted, _, err = parseStreamID(args[i+1], true, false, 0); err != nil {
				return err
			}
			if id.compare(maxDeleted) < 0 {
				return redisError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
			}
		default:
			return redisError(msgSyntax)
		}
	}
	err = c.streamWrite(args[1], func(op *streamOp) error {
		m := &op.m
		if !op.exists {
			return redisError(msgNoSuchKey)
		}
		// The newest entry left, which may be older than the last id.
		top, _, err := c.s.ks.streamEdge(c.reader(), op.key, m, true)
		if err != nil {
			return err
		}
		switch {
		case m.length > 0 && id.compare(top) < 0:
			return redisError("ERR The ID specified in XSETID is smaller than the target stream top item")
		case m.length > 0 && entriesAdded != -1 && m.length > uint64(entriesAdded):
			return redisError("ERR The entries_added specified in XSETID is smaller than the target stream length")
		}
		if m.length == 0 && id.compare(m.last) < 0 {
			// The entries up to the last id are dead because the stream
			// is empty; those above id would come back with the next
			// XADD, so delete the ones still stored.
			from, _ := id.next()
			err := c.s.ks.streamRawWalk(c.reader(), op.key, m, from, m.last, false, func(dead streamID, _ []byte) bool {
				c.elemBuf = streamEntryKey(c.elemBuf, op.key, m, dead)
				c.batch.Delete(c.elemBuf)
				return true
			})
			if err != nil {
				return err
			}
		}
		m.last = id
		if entriesAdded != -1 {
			m.entriesAdded = uint64(entriesAdded)
		}
		if !maxDeleted.isZero() {
			m.maxDeleted = maxDeleted
		}
		op.metaDirty = true
		op.fire("xsetid")
		return nil
	})
	if err != nil {
		return err
	}
	c.ok()
	return nil
}

// streamReadArgs are XREAD's and XREADGROUP's parsed arguments.
type streamReadArgs struct {
	block    time.Duration
	blocks   bool
	count    int64
	noAck    bool
	group    []byte
	consumer []byte
	keys     [][]byte
	ids      [][]byte
}

// parseStreamRead parses XREAD [COUNT n] [BLOCK ms] STREAMS key … id …
// and XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS ….
// A script may not ask to block (inScript): Redis refuses BLOCK there
// outright, naming the command as the script spelled it, where MULTI
// merely runs the read without blocking.
func parseStreamRead(args [][]byte, readGroup, inScript bool) (a streamReadArgs, err error) {
	name := "XREAD"
	if readGroup {
		name = "XREADGROUP"
	}
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		more := len(args) - 1 - i
		switch o := args[i]; {
		case is(o, "BLOCK") && more > 0:
			if inScript {
				return a, redisError("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
			}
			i++
			ms, ok := parseInt(args[i])
			if !ok {
				return a, redisError("ERR timeout is not an integer or out of range")
			}
			if ms < 0 {
				return a, redisError("ERR timeout is negative")
			}
			a.block, a.blocks = time.Duration(ms)*time.Millisecond, true
		case is(o, "COUNT") && more > 0:
			i++
			n, ok := parseInt(args[i])
			if !ok {
				return a, redisError(msgNotInteger)
			}
			a.count = max(n, 0)
		case is(o, "STREAMS") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				which := "'$'"
				if readGroup {
					which = "'>'"
				}
				return a, redisError("ERR Unbalanced '" + name + "' list of streams: for each stream key an ID or " + which + " must be specified.")
			}
		case is(o, "GROUP") && more >= 2:
			if !readGroup {
				return a, redisError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.group, a.consumer = args[i+1], args[i+2]
			i += 2
		case is(o, "NOACK"):
			if !readGroup {
				return a, redisError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.noAck = true
		default:
			return a, redisError(msgSyntax)
		}
	}
	if streamsAt == 0 {
		return a, redisError(msgSyntax)
	}
	if readGroup && a.group == nil {
		return a, redisError("ERR Missing GROUP option for XREADGROUP")
	}
	n := (len(args) - streamsAt) / 2
	a.keys, a.ids = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return a, nil
}

func cmdXRead(c *conn, _ *command, args [][]byte) error {
	a, err := parseStreamRead(args, false, c.inScript())
	if err != nil {
		return err
	}
	after, err := c.xreadIDs(a)
	if err != nil {
		return err
	}
	c.streamRead(a, func(ready []byte) bool { return c.xreadTry(a, after, ready) })
	return nil
}

// streamRead runs XREAD's or XREADGROUP's try once, or with BLOCK as a
// blocking command; both answer a null array when nothing came.
func (c *conn) streamRead(a streamReadArgs, try func(ready []byte) bool) {
	if !a.blocks {
		if !try(nil) {
			c.wr.NullArray()
		}
		return
	}
	c.blockingCommand(a.keys, a.block, try, c.wr.NullArray)
}

// xreadIDs resolves XREAD's ids: "$" is the stream's last id now.
func (c *conn) xreadIDs(a streamReadArgs) ([]streamID, error) {
	defer c.pin()()
	after := make([]streamID, len(a.keys))
	for i, key := range a.keys {
		m, exists, err := c.s.ks.getStream(c.reader(), &c.scratch, key)
		if err != nil {
			return nil, err
		}
		switch arg := a.ids[i]; {
		case len(arg) == 1 && arg[0] == '$':
			if exists {
				after[i] = m.last
			}
		case len(arg) == 1 && arg[0] == '>':
			return nil, redisError("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
		default:
			if after[i], _, err = parseStreamID(arg, true, false, 0); err != nil {
				return nil, err
			}
		}
	}
	return after, nil
}

// xreadTry serves XREAD from every stream (ready nil) or from ready
// only: it replies and returns true when any has entries after its id.
func (c *conn) xreadTry(a streamReadArgs, after []streamID, ready []byte) bool {
	defer c.pin()()
	var reads []streamRead
	for i, key := range a.keys {
		if ready != nil && (string(key) != string(ready) || len(reads) > 0) {
			continue
		}
		m, exists, err := c.s.ks.getStream(c.reader(), &c.scratch, key)
		if err != nil {
			if ready != nil {
				return false
			}
			c.replyErr(err)
			return true
		}
		if !exists || m.length == 0 || m.last.compare(after[i]) <= 0 {
			continue
		}
		start, _ := after[i].next()
		entries, err := c.streamRange(key, &m, start, maxStreamID, a.count, false)
		if err != nil {
			c.replyErr(err)
			return true
		}
		if len(entries) > 0 {
			reads = append(reads, streamRead{key: key, entries: entries})
		}
	}
	if len(reads) == 0 {
		return false
	}
	c.writeStreamReads(reads)
	return true
}

// streamsHeader starts XREAD's reply: an array of [key, entries] pairs in
// RESP2, a map from key to entries in RESP3.
func (c *conn) streamsHeader(n int) {
	if c.wr.Protocol() == 2 {
		c.wr.ArrayHeader(n)
	} else {
		c.wr.MapHeader(n)
	}
}
