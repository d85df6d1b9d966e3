package server

import (
	"bytes"
	"math"
	"slices"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

func init() {
	const g = "sorted-set"
	rw, rwf, w, ro, rof := flagWrite|flagDenyOOM, flagWrite|flagDenyOOM|flagFast, flagWrite, flagReadonly, flagReadonly|flagFast
	key1 := func(s spec) spec {
		s.firstKey, s.lastKey, s.step, s.group = 1, 1, 1, g
		return s
	}
	register(
		key1(spec{name: "zadd", arity: -4, flags: rwf, since: "1.2.0", run: zadd(false),
			summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."}),
		key1(spec{name: "zincrby", arity: 4, flags: rwf, since: "1.2.0", run: zadd(true),
			summary: "Increments the score of a member in a sorted set."}),
		key1(spec{name: "zrem", arity: -3, flags: w | flagFast, since: "1.2.0", run: cmdZRem,
			summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."}),
		key1(spec{name: "zscore", arity: 3, flags: rof, pipe: pipeView, since: "1.2.0", run: zscore(false),
			summary: "Returns the score of a member in a sorted set."}),
		key1(spec{name: "zmscore", arity: -3, flags: rof, pipe: pipeView, since: "6.2.0", run: zscore(true),
			summary: "Returns the score of one or more members in a sorted set."}),
		key1(spec{name: "zcard", arity: 2, flags: rof, pipe: pipeView, since: "1.2.0", run: cmdZCard,
			summary: "Returns the number of members in a sorted set."}),
		key1(spec{name: "zcount", arity: 4, flags: rof, pipe: pipeView, since: "2.0.0", run: zcount(zByScore),
			summary: "Returns the count of members in a sorted set that have scores within a range."}),
		key1(spec{name: "zlexcount", arity: 4, flags: rof, pipe: pipeView, since: "2.8.9", run: zcount(zByLex),
			summary: "Returns the number of members in a sorted set within a lexicographical range."}),
		key1(spec{name: "zrange", arity: -4, flags: ro, pipe: pipeView, since: "1.2.0", run: zrange(zrangeArgs{auto: true}),
			summary: "Returns members in a sorted set within a range of indexes."}),
		spec{name: "zrangestore", arity: -5, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "6.2.0",
			run: zrange(zrangeArgs{auto: true, store: true}), summary: "Stores a range of members from sorted set in a key."},
		key1(spec{name: "zrangebyscore", arity: -4, flags: ro, pipe: pipeView, since: "1.0.5", run: zrange(zrangeArgs{by: zByScore}),
			summary: "Returns members in a sorted set within a range of scores."}),
		key1(spec{name: "zrevrangebyscore", arity: -4, flags: ro, pipe: pipeView, since: "2.2.0", run: zrange(zrangeArgs{by: zByScore, rev: true}),
			summary: "Returns members in a sorted set within a range of scores in reverse order."}),
		key1(spec{name: "zrangebylex", arity: -4, flags: ro, pipe: pipeView, since: "2.8.9", run: zrange(zrangeArgs{by: zByLex}),
			summary: "Returns members in a sorted set within a lexicographical range."}),
		key1(spec{name: "zrevrangebylex", arity: -4, flags: ro, pipe: pipeView, since: "2.8.9", run: zrange(zrangeArgs{by: zByLex, rev: true}),
			summary: "Returns members in a sorted set within a lexicographical range in reverse order."}),
		key1(spec{name: "zrevrange", arity: -4, flags: ro, pipe: pipeView, since: "1.2.0", run: zrange(zrangeArgs{by: zByRank, rev: true}),
			summary: "Returns members in a sorted set within a range of indexes in reverse order."}),
		key1(spec{name: "zrank", arity: -3, flags: rof, pipe: pipeView, since: "2.0.0", run: zrank(false),
			summary: "Returns the index of a member in a sorted set ordered by ascending scores."}),
		key1(spec{name: "zrevrank", arity: -3, flags: rof, pipe: pipeView, since: "2.0.0", run: zrank(true),
			summary: "Returns the index of a member in a sorted set ordered by descending scores."}),
		key1(spec{name: "zpopmin", arity: -2, flags: w | flagFast, since: "5.0.0", run: zpop(false),
			summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		key1(spec{name: "zpopmax", arity: -2, flags: w | flagFast, since: "5.0.0", run: zpop(true),
			summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		spec{name: "zmpop", arity: -4, flags: w, group: g, since: "7.0.0", run: cmdZMPop,
			summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped."},
		spec{name: "bzpopmin", arity: -3, flags: w | flagFast, firstKey: 1, lastKey: -2, step: 1, group: g, since: "5.0.0", run: bzpop(false),
			summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
		spec{name: "bzpopmax", arity: -3, flags: w | flagFast, firstKey: 1, lastKey: -2, step: 1, group: g, since: "5.0.0", run: bzpop(true),
			summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
		spec{name: "bzmpop", arity: -5, flags: w, group: g, since: "7.0.0", run: cmdBZMPop,
			summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
		key1(spec{name: "zremrangebyrank", arity: 4, flags: w, since: "2.0.0", run: zremRange(zByRank),
			summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."}),
		key1(spec{name: "zremrangebyscore", arity: 4, flags: w, since: "1.2.0", run: zremRange(zByScore),
			summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."}),
		key1(spec{name: "zremrangebylex", arity: 4, flags: w, since: "2.8.9", run: zremRange(zByLex),
			summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."}),
		spec{name: "zunion", arity: -3, flags: ro, group: g, since: "6.2.0", run: zalgebra(setUnion, zReplyMembers),
			summary: "Returns the union of multiple sorted sets."},
		spec{name: "zinter", arity: -3, flags: ro, group: g, since: "6.2.0", run: zalgebra(setInter, zReplyMembers),
			summary: "Returns the intersect of multiple sorted sets."},
		spec{name: "zdiff", arity: -3, flags: ro, group: g, since: "6.2.0", run: zalgebra(setDiff, zReplyMembers),
			summary: "Returns the difference between multiple sorted sets."},
		key1(spec{name: "zunionstore", arity: -4, flags: rw, since: "2.0.0", run: zalgebra(setUnion, zStore),
			summary: "Stores the union of multiple sorted sets in a key."}),
		key1(spec{name: "zinterstore", arity: -4, flags: rw, since: "2.0.0", run: zalgebra(setInter, zStore),
			summary: "Stores the intersect of multiple sorted sets in a key."}),
		key1(spec{name: "zdiffstore", arity: -4, flags: rw, since: "6.2.0", run: zalgebra(setDiff, zStore),
			summary: "Stores the difference of multiple sorted sets in a key."}),
		spec{name: "zintercard", arity: -3, flags: ro, group: g, since: "7.0.0", run: zalgebra(setInter, zCard),
			summary: "Returns the number of members of the intersect of multiple sorted sets."},
		key1(spec{name: "zrandmember", arity: -2, flags: ro, since: "6.2.0", run: cmdZRandMember,
			summary: "Returns one or more random members from a sorted set."}),
		key1(spec{name: "zscan", arity: -3, flags: ro, since: "2.8.0", run: cmdZScan,
			summary: "Iterates over members and scores of a sorted set."}),
	)
}

const (
	msgNotFloatRange = "ERR min or max is not a float"
	msgNotLexRange   = "ERR min or max not valid string range item"
	msgNaNScore      = "ERR resulting score is not a number (NaN)"
	msgNotPositive   = "ERR value is out of range, must be positive"
)

// zrangeBy names what a range of a sorted set is given by.
type zrangeBy uint8

const (
	zByRank zrangeBy = iota
	zByScore
	zByLex
)

// zedit stages the changes of one write command to a sorted set: it
// remembers each member's score before the command and after, so that a
// member named twice sees its first change, and writes only the net
// change of each member when done.
type zedit struct {
	c       *conn
	key     []byte
	m       *collMeta
	existed bool
	// touched holds the members in the order first touched; index finds
	// them once there are more than a few (a ZADD of one member, the
	// common case, then costs no map).
	touched []zchange
	index   map[string]int
}

type zchange struct {
	member        string
	before, after zstate
}

type zstate struct {
	score float64
	in    bool
}

// zeditIndexed is the number of touched members from which zedit finds
// them through a map rather than by a linear search.
const zeditIndexed = 8

func (c *conn) newZEdit(key []byte, m *collMeta, existed bool) *zedit {
	return &zedit{c: c, key: key, m: m, existed: existed}
}

// find returns the index in touched of member, or -1.
func (e *zedit) find(member []byte) int {
	if e.index != nil {
		if i, ok := e.index[string(member)]; ok {
			return i
		}
		return -1
	}
	for i := range e.touched {
		if e.touched[i].member == string(member) {
			return i
		}
	}
	return -1
}

// get returns member's current score.
func (e *zedit) get(member []byte) (score float64, in bool, err error) {
	if i := e.find(member); i >= 0 {
		st := e.touched[i].after
		return st.score, st.in, nil
	}
	var st zstate
	if e.existed {
		if st.score, st.in, err = e.c.s.ks.zscore(e.c.reader(), &e.c.elemBuf, e.key, *e.m, member); err != nil {
			return 0, false, err
		}
	}
	e.add(string(member), st)
	return st.score, st.in, nil
}

// seen records the state of a member read by a walk of the set.
func (e *zedit) seen(member string, st zstate) {
	if e.find([]byte(member)) < 0 {
		e.add(member, st)
	}
}

// add records member, not touched yet, in state st.
func (e *zedit) add(member string, st zstate) {
	e.touched = append(e.touched, zchange{member: member, before: st, after: st})
	switch n := len(e.touched); {
	case n == zeditIndexed:
		e.index = make(map[string]int, 2*n)
		for i, t := range e.touched {
			e.index[t.member] = i
		}
	case n > zeditIndexed:
		e.index[member] = n - 1
	}
}

// set gives member, which get or seen has read, a score.
func (e *zedit) set(member []byte, score float64) {
	e.touched[e.find(member)].after = zstate{score: score, in: true}
}

// remove deletes member, which get or seen has read.
func (e *zedit) remove(member []byte) { e.touched[e.find(member)].after = zstate{} }

// flush adds the net changes to the command's batch and to the count,
// and widens the set's pop mark past any entry it adds (reading the mark
// only then); it replies itself when reading the mark fails.
func (e *zedit) flush() error {
	ks, b, buf := &e.c.s.ks, e.c.batch, &e.c.elemBuf
	var mark popMark
	markRead, markChanged := !e.existed, false
	for _, t := range e.touched {
		was, now := t.before, t.after
		mb := []byte(t.member)
		switch {
		case was == now:
		case was.in && !now.in:
			ks.zdelete(b, buf, e.key, *e.m, mb, was.score)
			e.m.count--
		default:
			if was.in {
				*buf = zScoreKey(*buf, e.key, *e.m, was.score, mb)
				b.Delete(*buf)
			} else {
				e.m.count++
			}
			ks.zput(b, buf, e.key, *e.m, mb, now.score)
			if !markRead {
				var err error
				if mark, err = ks.popMark(e.c.reader(), e.key, *e.m); err != nil {
					return err
				}
				markRead = true
			}
			var changed bool
			mark, changed = mark.widen(now.score, mb)
			markChanged = markChanged || changed
		}
	}
	if markChanged {
		ks.putPopMark(b, buf, e.key, *e.m, mark)
	}
	return nil
}

// editZSet runs fn on the sorted set at key under editCollEvent, with a
// zedit whose changes it writes when fn succeeds, firing event if they
// change anything.
func (c *conn) editZSet(key []byte, event string, fn func(e *zedit) error) error {
	return c.editCollEvent(key, typeZSet, event, func(m *collMeta, existed bool) error {
		e := c.newZEdit(key, m, existed)
		if err := fn(e); err != nil {
			return err
		}
		return e.flush()
	})
}

// zadd returns the handler of ZADD, or of ZINCRBY when incrBy: Redis
// parses both alike (ZINCRBY is ZADD INCR with no room for options).
func zadd(incrBy bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		var nx, xx, gt, lt, ch bool
		incr := incrBy
		i := 2
	options:
		for ; i < len(args); i++ {
			switch a := args[i]; {
			case is(a, "NX"):
				nx = true
			case is(a, "XX"):
				xx = true
			case is(a, "GT"):
				gt = true
			case is(a, "LT"):
				lt = true
			case is(a, "CH"):
				ch = true
			case is(a, "INCR"):
				incr = true
			default:
				break options
			}
		}
		pairs := args[i:]
		switch {
		case len(pairs) == 0 || len(pairs)%2 != 0:
			return redisError(msgSyntax)
		case nx && xx:
			return redisError("ERR XX and NX options at the same time are not compatible")
		case nx && (gt || lt) || gt && lt:
			return redisError("ERR GT, LT, and/or NX options at the same time are not compatible")
		case incr && len(pairs) > 2:
			return redisError("ERR INCR option supports a single increment-element pair")
		}
		scores := make([]float64, len(pairs)/2)
		for j := range scores {
			var ok bool
			if scores[j], ok = parseScore(pairs[2*j]); !ok {
				return redisError(msgNotFloat)
			}
		}
		key := args[1]
		var added, updated int64
		processed := false
		var result float64
		created := false
		// The event follows Redis' counts, not the net write: a member
		// set twice back to its score is an update.
		if err := c.editZSet(key, "", func(e *zedit) error {
			if !e.existed && xx {
				return nil
			}
			created = !e.existed
			for j, score := range scores {
				member := pairs[2*j+1]
				cur, in, err := e.get(member)
				if err != nil {
					return err
				}
				if !in {
					if xx {
						continue
					}
					if int64(len(member)) > maxMember(key) {
						return redisError(msgStringTooBig)
					}
					e.set(member, score)
					added++
					processed, result = true, score
					continue
				}
				if nx {
					continue
				}
				if incr {
					if score += cur; math.IsNaN(score) {
						return redisError(msgNaNScore)
					}
				}
				if lt && score >= cur || gt && score <= cur {
					continue
				}
				processed, result = true, score
				if score != cur {
					e.set(member, score)
					updated++
				}
			}
			return nil
		}); err != nil {
			return err
		}
		c.signalReady(key) // a client may be blocked on key (blocking.go)
		if added+updated > 0 {
			event := "zadd"
			if incr {
				event = "zincr"
			}
			c.notifyEdit(typeZSet, event, key, created, false)
		}
		switch {
		case incr && processed:
			c.wr.Double(result)
		case incr:
			c.wr.Null()
		case ch:
			c.wr.Int(added + updated)
		default:
			c.wr.Int(added)
		}
		return nil
	}
}

func cmdZRem(c *conn, _ *command, args [][]byte) error {
	var removed int64
	if err := c.editZSet(args[1], "zrem", func(e *zedit) error {
		if !e.existed {
			return nil
		}
		for _, member := range args[2:] {
			_, in, err := e.get(member)
			if err != nil {
				return err
			}
			if in {
				e.remove(member)
				removed++
			}
		}
		return nil
	}); err != nil {
		return err
	}
	c.wr.Int(removed)
	return nil
}

// zscore returns the handler of ZSCORE or, when multi, ZMSCORE.
func zscore(multi bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		vals, found, exists, err := c.getElems(args[1], typeZSet, zMemberPrefix, args[2:])
		if err != nil {
			return err
		}
		if !multi {
			c.countLookup(args[1], exists)
		}
		for i, v := range vals {
			if found[i] {
				if _, _, err := decodeMemberScore(args[1], v); err != nil {
					return err // before any reply: the error is the reply
				}
			}
		}
		if multi {
			c.wr.ArrayHeader(len(vals))
		}
		for i, v := range vals {
			if found[i] {
				c.wr.Double(decodeScore(v))
			} else {
				c.wr.Null()
			}
		}
		return nil
	}
}

func cmdZCard(c *conn, _ *command, args [][]byte) error {
	m, _, err := c.getColl(args[1], typeZSet)
	if err != nil {
		return err
	}
	c.wr.Int(m.count)
	return nil
}

// zrangeSpec is a parsed range of a sorted set: by score, by lex, or by
// rank (Redis' start and stop indexes, which listRange turns into ranks
// once the set's size is known).
type zrangeSpec struct {
	by          zrangeBy
	score       scoreRange
	lex         lexRange
	start, stop int64
}

// parseZRange parses min and max as by says. A rank range is kept as
// Redis' indexes until the set's size is known.
func parseZRange(by zrangeBy, min, max []byte) (r zrangeSpec, err error) {
	r.by = by
	var ok bool
	switch by {
	case zByScore:
		if r.score, ok = parseScoreRange(min, max); !ok {
			return r, redisError(msgNotFloatRange)
		}
	case zByLex:
		if r.lex, ok = parseLexRange(min, max); !ok {
			return r, redisError(msgNotLexRange)
		}
	default:
		var okMax bool
		r.start, ok = parseInt(min)
		r.stop, okMax = parseInt(max)
		if !ok || !okMax {
			return r, redisError(msgNotInteger)
		}
	}
	return r, nil
}

// walk calls fn with the members of m at key in r, in order or reversed,
// read through the command's reader.
func (c *conn) walk(key []byte, m collMeta, r zrangeSpec, reverse bool, fn func(score float64, member []byte) bool) error {
	switch r.by {
	case zByScore:
		return c.s.ks.scoreWalk(c.reader(), key, m, r.score, reverse, fn)
	case zByLex:
		return c.s.ks.lexWalk(c.reader(), key, m, r.lex, reverse, fn)
	}
	start, stop, empty := listRange(r.start, r.stop, m.count)
	if empty {
		return nil
	}
	if reverse {
		// Reversed, the indexes count from the highest score.
		start, stop = m.count-1-stop, m.count-1-start
	}
	items, err := c.s.ks.rankWalk(c.reader(), key, m, start, stop, reverse)
	for _, it := range items {
		if !fn(it.score, it.member) {
			break
		}
	}
	return err
}

// collect returns the members of m at key in r, in order or reversed,
// after skipping offset of them and taking at most limit (all when limit
// is negative), as ZRANGE's LIMIT does; like Redis, it ignores them for
// a range by rank.
func (c *conn) collect(key []byte, m collMeta, r zrangeSpec, reverse bool, offset, limit int64) ([]zmember, error) {
	var items []zmember
	if r.by == zByRank {
		offset, limit = 0, -1
	}
	if offset < 0 || offset > 0 && offset >= m.count || limit == 0 {
		return nil, nil
	}
	err := c.walk(key, m, r, reverse, func(score float64, member []byte) bool {
		if offset > 0 {
			offset--
			return true
		}
		items = append(items, zmember{member: bytes.Clone(member), score: score})
		return limit < 0 || int64(len(items)) < limit
	})
	return items, err
}

func zcount(by zrangeBy) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		r, err := parseZRange(by, args[2], args[3])
		if err != nil {
			return err
		}
		defer c.pin()()
		m, exists, err := c.getColl(args[1], typeZSet)
		if err != nil {
			return err
		}
		var n int64
		if exists {
			if err := c.walk(args[1], m, r, false, func(float64, []byte) bool { n++; return true }); err != nil {
				return err
			}
		}
		c.wr.Int(n)
		return nil
	}
}

// zReply writes members as Redis replies with sorted set members: an
// array of members or, withScores, of members and their scores, flat in
// RESP2 and as [member, score] pairs in RESP3 when nested.
func (c *conn) zReply(items []zmember, withScores, nested bool) {
	pairs := withScores && nested && c.wr.Protocol() == 3
	if withScores && !pairs {
		c.wr.ArrayHeader(2 * len(items))
	} else {
		c.wr.ArrayHeader(len(items))
	}
	for _, it := range items {
		if pairs {
			c.wr.ArrayHeader(2)
		}
		c.wr.Bulk(it.member)
		if withScores {
			c.wr.Double(it.score)
		}
	}
}

// zstore replaces whatever dst holds with a new sorted set of items
// (storeColl), fires the keyspace event named event, and replies with
// their number. The caller holds dst's lock.
func (c *conn) zstore(event string, dst []byte, items []zmember) error {
	return c.storeColl(dst, typeZSet, event, len(items), func(m collMeta) {
		for _, it := range items {
			c.s.ks.zput(c.batch, &c.elemBuf, dst, m, it.member, it.score)
		}
	})
}

// zrangeArgs says which of the ZRANGE family a handler runs: auto for
// ZRANGE and ZRANGESTORE, which take BYSCORE, BYLEX and REV as options;
// otherwise by and rev are fixed by the command's name.
type zrangeArgs struct {
	auto, store, rev bool
	by               zrangeBy
}

// zrange returns the handler of one of the ZRANGE family, parsing as
// Redis' zrangeGenericCommand does: options first, then the range, then
// the key.
func zrange(a zrangeArgs) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		src := 1
		if a.store {
			src = 2
		}
		by, rev := a.by, a.rev
		var withScores, byGiven, revGiven bool
		offset, limit := int64(0), int64(-1)
		for j := src + 3; j < len(args); j++ {
			switch opt := args[j]; {
			case !a.store && is(opt, "WITHSCORES"):
				withScores = true
			case is(opt, "LIMIT") && j+2 < len(args):
				var ok bool
				if offset, ok = parseInt(args[j+1]); ok {
					limit, ok = parseInt(args[j+2])
				}
				if !ok {
					return redisError(msgNotInteger)
				}
				j += 2
			case a.auto && !revGiven && is(opt, "REV"):
				rev, revGiven = true, true
			case a.auto && !byGiven && is(opt, "BYLEX"):
				by, byGiven = zByLex, true
			case a.auto && !byGiven && is(opt, "BYSCORE"):
				by, byGiven = zByScore, true
			default:
				return redisError(msgSyntax)
			}
		}
		if limit != -1 && by == zByRank {
			return redisError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		}
		if withScores && by == zByLex {
			return redisError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		}
		min, max := args[src+1], args[src+2]
		if rev && by != zByRank {
			min, max = max, min
		}
		r, err := parseZRange(by, min, max)
		if err != nil {
			return err
		}
		var held lockSet
		if a.store {
			held = c.lock(args[1:3], 1)
			defer c.unlock(held)
		} else {
			defer c.pin()()
		}
		m, exists, err := c.getColl(args[src], typeZSet)
		if err != nil {
			return err
		}
		var items []zmember
		if exists {
			if items, err = c.collect(args[src], m, r, rev, offset, limit); err != nil {
				return err
			}
		}
		if a.store {
			return c.zstore(cmd.name, args[1], items)
		}
		c.zReply(items, withScores, true)
		return nil
	}
}

// zrank returns the handler of ZRANK, or ZREVRANK when rev, with Redis
// 7.2's WITHSCORE.
func zrank(rev bool) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		if len(args) > 4 {
			return redisError(wrongArity(cmd))
		}
		withScore := len(args) == 4
		if withScore && !is(args[3], "WITHSCORE") {
			return redisError(msgSyntax)
		}
		defer c.pin()()
		key, member := args[1], args[2]
		m, exists, err := c.getColl(key, typeZSet)
		if err != nil {
			return err
		}
		var score float64
		found := false
		if exists {
			var err error
			if score, found, err = c.s.ks.zscore(c.reader(), &c.elemBuf, key, m, member); err != nil {
				return err
			}
		}
		if !found {
			if withScore {
				c.wr.NullArray()
			} else {
				c.wr.Null()
			}
			return nil
		}
		rank, err := c.s.ks.zrank(c.reader(), key, m, member, score)
		if err != nil {
			return err
		}
		if rev {
			rank = m.count - 1 - rank
		}
		if withScore {
			c.wr.ArrayHeader(2)
		}
		c.wr.Int(rank)
		if withScore {
			c.wr.Double(score)
		}
		return nil
	}
}

// popFrom adds to the batch the removal of up to count members of the
// sorted set at key, whose lock the caller holds, from the low end or the
// high end when max, and the pop mark past them (popMark); it returns
// them in pop order, replying itself on failure. A pop of the one lowest
// member comes from the set's window when it can (zpopwindow.go), and
// otherwise reads a new window.
func (c *conn) popFrom(key []byte, m *collMeta, count int64, max bool) ([]zmember, error) {
	windowed := !max && count == 1
	if windowed {
		if items, err := c.zpopWindow(key, m); err != nil || items != nil {
			return items, err
		}
	}
	z, err := c.s.ks.newZIter(c.reader(), key, *m, nil, nil, max)
	if err != nil {
		return nil, err
	}
	n := min(count, m.count)
	items := make([]zmember, 0, min(n, 1024))
	for int64(len(items)) < n && z.next() {
		items = append(items, zmember{member: bytes.Clone(z.member), score: z.score})
	}
	var win *zsetWindow
	if windowed && len(items) == 1 && m.count > 1 {
		win = readZWindow(z)
	}
	if err := z.close(); err != nil {
		return nil, err
	}
	for _, it := range items {
		c.s.ks.zdelete(c.batch, &c.elemBuf, key, *m, it.member, it.score)
	}
	m.count -= int64(len(items))
	if len(items) > 0 && m.count > 0 {
		mark, last := z.mark, items[len(items)-1]
		edge := append(encodeScore(make([]byte, 0, scoreLen+len(last.member)+1), last.score), last.member...)
		if max {
			// A mark with a high bound has no room for ahead.
			mark.high, mark.ahead = edge, nil
		} else {
			mark.low = append(edge, 0)
		}
		if win != nil && mark.high == nil {
			mark.ahead = win.ahead
			c.s.ks.zpops.put(elemsKey(nil, key, *m), win)
		}
		c.s.ks.putPopMark(c.batch, &c.elemBuf, key, *m, mark)
	}
	return items, nil
}

// popCommit pops as popFrom does and commits.
func (c *conn) popCommit(key []byte, m collMeta, count int64, max bool) ([]zmember, error) {
	items, err := c.popFrom(key, &m, count, max)
	if err != nil {
		c.batch.Reset()
		return nil, err
	}
	c.s.ks.putColl(c.batch, &c.scratch, key, m)
	if err := c.commit(); err != nil {
		return nil, err
	}
	event := "zpopmin"
	if max {
		event = "zpopmax"
	}
	c.notifyEdit(typeZSet, event, key, false, m.count == 0)
	return items, nil
}

// zpop returns the handler of ZPOPMIN, or ZPOPMAX when max.
func zpop(max bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		if len(args) > 3 {
			return redisError(msgSyntax)
		}
		count := int64(1)
		if len(args) == 3 {
			var ok bool
			if count, ok = parseInt(args[2]); !ok || count < 0 {
				return redisError(msgNotPositive)
			}
		}
		held := c.lock(args[1:2], 1)
		defer c.unlock(held)
		m, exists, err := c.getColl(args[1], typeZSet)
		if err != nil {
			return err
		}
		var items []zmember
		if exists && count > 0 {
			if items, err = c.popCommit(args[1], m, count, max); err != nil {
				return err
			}
		}
		c.zReply(items, true, len(args) == 3)
		return nil
	}
}

// cmdZMPop implements ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
func cmdZMPop(c *conn, _ *command, args [][]byte) error {
	keys, max, count, err := parseMPop(args[1:])
	if err != nil {
		return err
	}
	if !c.zpopFirst(keys, nil, max, count, true) {
		c.wr.NullArray()
	}
	return nil
}

// bzpop returns the handler of BZPOPMIN, or BZPOPMAX when max.
func bzpop(max bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		timeout, err := parseTimeout(args[len(args)-1])
		if err != nil {
			return err
		}
		keys := args[1 : len(args)-1]
		c.blockingCommand(keys, timeout, func(ready []byte) bool {
			return c.zpopFirst(keys, ready, max, 1, false)
		}, c.wr.NullArray)
		return nil
	}
}

// cmdBZMPop implements BZMPOP timeout numkeys key [key ...] MIN|MAX
// [COUNT count]; as in Redis, the timeout is parsed last.
func cmdBZMPop(c *conn, _ *command, args [][]byte) error {
	keys, max, count, err := parseMPop(args[2:])
	if err != nil {
		return err
	}
	timeout, err := parseTimeout(args[1])
	if err != nil {
		return err
	}
	c.blockingCommand(keys, timeout, func(ready []byte) bool {
		return c.zpopFirst(keys, ready, max, count, true)
	}, c.wr.NullArray)
	return nil
}

// zpopFirst pops up to count members from the first of keys that holds a
// sorted set (firstColl says which, and what it returns), lowest scores
// first or, when max, highest, and replies as ZMPOP does (mpop: the key,
// then [member, score] pairs, nested in RESP2 too) or BZPOPMIN does (the
// key, the member, its score).
func (c *conn) zpopFirst(keys [][]byte, ready []byte, max bool, count int64, mpop bool) bool {
	return c.firstColl(keys, ready, typeZSet, func(key []byte, m collMeta) {
		items, err := c.popCommit(key, m, count, max)
		switch {
		case err != nil:
			c.replyErr(err) // a blocked client's try has no handler to return to
		case !mpop:
			c.wr.ArrayHeader(3)
			c.wr.Bulk(key)
			c.wr.Bulk(items[0].member)
			c.wr.Double(items[0].score)
		default:
			c.wr.ArrayHeader(2)
			c.wr.Bulk(key)
			c.wr.ArrayHeader(len(items))
			for _, it := range items {
				c.wr.ArrayHeader(2)
				c.wr.Bulk(it.member)
				c.wr.Double(it.score)
			}
		}
	})
}

// parseMPop parses numkeys key [key ...] MIN|MAX [COUNT count] as ZMPOP
// and BZMPOP take them, replying on failure.
func parseMPop(args [][]byte) (keys [][]byte, max bool, count int64, err error) {
	n, ok := parseInt(args[0])
	if !ok || n <= 0 {
		return nil, false, 0, redisError("ERR numkeys should be greater than 0")
	}
	if n >= int64(len(args)-1) {
		return nil, false, 0, redisError(msgSyntax)
	}
	keys, rest := args[1:1+n], args[1+n:]
	switch {
	case is(rest[0], "MIN"):
	case is(rest[0], "MAX"):
		max = true
	default:
		return nil, false, 0, redisError(msgSyntax)
	}
	count = -1
	for j := 1; j < len(rest); j++ {
		if count != -1 || !is(rest[j], "COUNT") || j+1 == len(rest) {
			return nil, false, 0, redisError(msgSyntax)
		}
		j++
		if count, ok = parseInt(rest[j]); !ok || count <= 0 {
			return nil, false, 0, redisError("ERR count should be greater than 0")
		}
	}
	if count == -1 {
		count = 1
	}
	return keys, max, count, nil
}

// zremRange returns the handler of ZREMRANGEBYRANK, ZREMRANGEBYSCORE or
// ZREMRANGEBYLEX: the members in the range are read by one walk and
// deleted in one batch.
func zremRange(by zrangeBy) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		r, err := parseZRange(by, args[2], args[3])
		if err != nil {
			return err
		}
		var removed int64
		if err := c.editZSet(args[1], cmd.name, func(e *zedit) error {
			if !e.existed {
				return nil
			}
			items, err := c.collect(e.key, *e.m, r, false, 0, -1)
			for _, it := range items {
				e.seen(string(it.member), zstate{score: it.score, in: true})
				e.remove(it.member)
			}
			removed = int64(len(items))
			return err
		}); err != nil {
			return err
		}
		c.wr.Int(removed)
		return nil
	}
}

// zsource is one input of ZUNION, ZINTER, ZDIFF and their STORE forms: a
// sorted set, or a set whose members score 1.
type zsource struct {
	key    []byte
	m      collMeta
	exists bool
	weight float64
	scores map[string]float64
}

// aggregate names ZUNION's and ZINTER's AGGREGATE.
type aggregate uint8

const (
	aggSum aggregate = iota
	aggMin
	aggMax
)

// apply combines v into *t as Redis' zunionInterAggregate does: a sum
// of +inf and -inf is 0, and MIN and MAX keep *t against a NaN.
func (a aggregate) apply(t *float64, v float64) {
	switch a {
	case aggSum:
		if *t += v; math.IsNaN(*t) {
			*t = 0
		}
	case aggMin:
		if v < *t {
			*t = v
		}
	case aggMax:
		if v > *t {
			*t = v
		}
	}
}

// zsources reads the types of the n keys at args[0:n] as Redis does
// before it parses the options that follow: a key that holds neither a
// sorted set nor a set is WRONGTYPE. It replies on failure.
func (c *conn) zsources(keys [][]byte) ([]zsource, error) {
	src := make([]zsource, len(keys))
	for i, key := range keys {
		src[i] = zsource{key: key, weight: 1}
		e, exists, err := c.getEntry(key)
		if err != nil {
			return nil, err
		}
		if !exists {
			continue
		}
		if e.typ != typeZSet && e.typ != typeSet {
			return nil, errWrongType
		}
		m, err := decodeMeta(key, e)
		if err != nil {
			return nil, err
		}
		src[i].m, src[i].exists = m, true
	}
	return src, nil
}

// load reads every member of the source with its score into s.scores.
// The sets are read whole into memory, as for SINTER: O(total members).
func (c *conn) load(s *zsource) error {
	s.scores = map[string]float64{}
	if !s.exists {
		return nil
	}
	if s.m.typ == typeSet {
		members, _, err := c.s.ks.readElems(c.reader(), s.key, s.m, nil)
		if err != nil {
			return err
		}
		for _, mb := range members {
			s.scores[string(mb)] = 1
		}
		return nil
	}
	return c.s.ks.zwalk(c.reader(), s.key, s.m, nil, nil, false, func(score float64, member []byte) bool {
		s.scores[string(member)] = score
		return true
	})
}

// zcombine computes op over the sources as Redis does, in its order (by
// size, smallest first, for union and intersection), which decides the
// result where a sum of +inf and -inf meets a finite score.
func zcombine(op setOp, src []zsource, agg aggregate) []zmember {
	if op != setDiff {
		slices.SortStableFunc(src, func(a, b zsource) int { return int(min(max(a.m.count-b.m.count, -1), 1)) })
	}
	weighted := func(s zsource, v float64) float64 {
		if w := v * s.weight; !math.IsNaN(w) {
			return w
		}
		return 0
	}
	result := map[string]float64{}
	switch op {
	case setUnion:
		for _, s := range src {
			for mb, v := range s.scores {
				if t, ok := result[mb]; ok {
					agg.apply(&t, weighted(s, v))
					result[mb] = t
				} else {
					result[mb] = weighted(s, v)
				}
			}
		}
	case setInter:
	members:
		for mb, v := range src[0].scores {
			t := weighted(src[0], v)
			for _, s := range src[1:] {
				o, ok := s.scores[mb]
				if !ok {
					continue members
				}
				agg.apply(&t, o*s.weight)
			}
			result[mb] = t
		}
	case setDiff:
	diff:
		for mb, v := range src[0].scores {
			for _, s := range src[1:] {
				if _, ok := s.scores[mb]; ok {
					continue diff
				}
			}
			result[mb] = v
		}
	}
	items := make([]zmember, 0, len(result))
	for mb, v := range result {
		items = append(items, zmember{member: []byte(mb), score: v})
	}
	slices.SortFunc(items, compareZMembers)
	return items
}

// compareZMembers orders members as a sorted set does: by score, then by
// member bytes.
func compareZMembers(a, b zmember) int {
	switch {
	case a.score < b.score:
		return -1
	case a.score > b.score:
		return 1
	}
	return bytes.Compare(a.member, b.member)
}

// zalgebraMode says which form of ZUNION, ZINTER or ZDIFF a handler runs.
type zalgebraMode uint8

const (
	zReplyMembers zalgebraMode = iota // ZUNION, ZINTER, ZDIFF
	zStore                            // their STORE forms
	zCard                             // ZINTERCARD
)

// zalgebra returns the handler of ZUNION, ZINTER or ZDIFF in one of its
// modes, parsing as Redis' zunionInterDiffGenericCommand: numkeys, the
// keys' types, then WEIGHTS, AGGREGATE and WITHSCORES (LIMIT for
// ZINTERCARD).
func zalgebra(op setOp, mode zalgebraMode) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		at := 1
		if mode == zStore {
			at = 2
		}
		n, ok := parseInt(args[at])
		if !ok {
			return redisError(msgNotInteger)
		}
		if n < 1 {
			return redisError("ERR at least 1 input key is needed for '" + cmd.name + "' command")
		}
		if n > int64(len(args)-at-1) {
			return redisError(msgSyntax)
		}
		keys, opts := args[at+1:at+1+int(n)], args[at+1+int(n):]
		if mode == zStore {
			held := c.lock(append([][]byte{args[1]}, keys...), 1)
			defer c.unlock(held)
		} else {
			defer c.pin()()
		}
		src, err := c.zsources(keys)
		if err != nil {
			return err
		}
		agg, withScores, limit := aggSum, false, int64(0)
		for j := 0; j < len(opts); j++ {
			left := len(opts) - j
			switch {
			case op != setDiff && mode != zCard && left >= len(src)+1 && is(opts[j], "WEIGHTS"):
				for i := range src {
					j++
					if src[i].weight, ok = parseScore(opts[j]); !ok {
						return redisError("ERR weight value is not a float")
					}
				}
			case op != setDiff && mode != zCard && left >= 2 && is(opts[j], "AGGREGATE"):
				j++
				switch {
				case is(opts[j], "SUM"):
					agg = aggSum
				case is(opts[j], "MIN"):
					agg = aggMin
				case is(opts[j], "MAX"):
					agg = aggMax
				default:
					return redisError(msgSyntax)
				}
			case mode == zReplyMembers && is(opts[j], "WITHSCORES"):
				withScores = true
			case mode == zCard && left >= 2 && is(opts[j], "LIMIT"):
				j++
				if limit, ok = parseInt(opts[j]); !ok || limit < 0 {
					return redisError("ERR LIMIT can't be negative")
				}
			default:
				return redisError(msgSyntax)
			}
		}
		for i := range src {
			if err := c.load(&src[i]); err != nil {
				return err
			}
		}
		items := zcombine(op, src, agg)
		switch {
		case mode == zStore:
			return c.zstore(cmd.name, args[1], items)
		case mode == zCard && limit > 0:
			c.wr.Int(min(int64(len(items)), limit))
		case mode == zCard:
			c.wr.Int(int64(len(items)))
		default:
			c.zReply(items, withScores, true)
		}
		return nil
	}
}

// cmdZRandMember implements ZRANDMEMBER key [count [WITHSCORES]] with
// pickElems' one pass over the members.
func cmdZRandMember(c *conn, _ *command, args [][]byte) error {
	key := args[1]
	var count int64
	withScores := false
	if len(args) >= 3 {
		var ok bool
		if count, ok = parseInt(args[2]); !ok {
			return redisError(msgNotInteger)
		}
		if count == math.MinInt64 {
			return redisError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		}
		if len(args) > 4 || len(args) == 4 && !is(args[3], "WITHSCORES") {
			return redisError(msgSyntax)
		}
		if withScores = len(args) == 4; withScores && (count < -maxRandCount || count > maxRandCount) {
			return redisError("ERR value is out of range")
		}
	}
	members, vals, done, err := c.randomElems(key, typeZSet, zMemberPrefix, len(args) == 2, count)
	if err != nil || done {
		return err
	}
	items := make([]zmember, len(members))
	for i, mb := range members {
		score, _, err := decodeMemberScore(key, vals[i])
		if err != nil {
			return err
		}
		items[i] = zmember{member: mb, score: score}
	}
	c.zReply(items, withScores, true)
	return nil
}

func cmdZScan(c *conn, _ *command, args [][]byte) error {
	return c.scanColl(args, typeZSet, zMemberPrefix, func(dst, val []byte) []byte {
		score, _, err := decodeMemberScore(args[1], val)
		if err != nil {
			// Reported as corruption by a read of the member; a scan
			// shows it as NaN rather than failing the whole page.
			return append(dst, "nan"...)
		}
		return resp.AppendDouble(dst, score)
	})
}
