package server

import (
	"bytes"
	"math"
	"slices"
	"strconv"
)

func init() {
	register(
		spec{name: "sort", arity: -2, flags: flagWrite | flagDenyOOM | flagMovableKeys, firstKey: 1, lastKey: 1, step: 1, group: "generic", since: "1.0.0",
			summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", run: cmdSort},
		spec{name: "sort_ro", arity: -2, flags: flagReadonly, firstKey: 1, lastKey: 1, step: 1, group: "generic", since: "7.0.0",
			summary: "Returns the sorted elements of a list, a set, or a sorted set.", run: cmdSort},
	)
}

// sortSpec is a parsed SORT: Redis 7.2's options.
type sortSpec struct {
	by                []byte // nil: sort by the elements themselves
	dontSort          bool   // BY a pattern without '*'
	gets              [][]byte
	desc, alpha       bool
	limitStart, count int64 // count -1: no limit
	store             []byte
}

// parseSort reads SORT's options as Redis does: later options override
// earlier ones, LIMIT and STORE and BY and GET need their arguments, and
// SORT_RO knows no STORE.
func parseSort(args [][]byte, readOnly bool) (sortSpec, error) {
	s := sortSpec{count: -1}
	for i := 2; i < len(args); i++ {
		left := len(args) - i - 1
		switch {
		case is(args[i], "ASC"):
			s.desc = false
		case is(args[i], "DESC"):
			s.desc = true
		case is(args[i], "ALPHA"):
			s.alpha = true
		case is(args[i], "LIMIT") && left >= 2:
			start, ok1 := parseInt(args[i+1])
			count, ok2 := parseInt(args[i+2])
			if !ok1 || !ok2 {
				return s, redisError(msgNotInteger)
			}
			s.limitStart, s.count = start, count
			i += 2
		case !readOnly && is(args[i], "STORE") && left >= 1:
			s.store = args[i+1]
			i++
		case is(args[i], "BY") && left >= 1:
			s.by = args[i+1]
			s.dontSort = bytes.IndexByte(s.by, '*') < 0
			i++
		case is(args[i], "GET") && left >= 1:
			s.gets = append(s.gets, args[i+1])
			i++
		default:
			return s, redisError(msgSyntax)
		}
	}
	return s, nil
}

// sortItem is one element being sorted and the key it sorts by.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte // ALPHA BY: the looked-up value, nil when missing
}

// cmdSort implements SORT and SORT_RO as Redis 7.2 does, over a list, a
// set or a sorted set: elements load whole into memory, as in Redis.
// Every read (the key, the BY and GET lookups) sees one engine state.
// Where Redis would return a set's elements in its hash-table order (BY
// a constant), this server returns them in byte order, its set order.
// ALPHA compares bytes, as Redis does under the C locale.
func cmdSort(c *conn, cmd *command, args [][]byte) error {
	s, err := parseSort(args, cmd.name == "sort_ro")
	if err != nil {
		return err
	}
	if err := c.sortPatternsAllowed(cmd, args, s.by, len(s.gets)); err != nil {
		return err
	}
	var held lockSet
	if s.store != nil {
		held = c.lock([][]byte{s.store}, 1)
		defer c.unlock(held)
	}
	defer c.pin()()
	e, exists, err := c.getEntry(args[1])
	if err != nil {
		return err
	}
	typ := byte(typeList)
	if exists {
		typ = e.typ
		if typ != typeList && typ != typeSet && typ != typeZSet {
			return errWrongType
		}
	}
	if s.dontSort && typ == typeSet && (s.store != nil || c.inScript()) {
		// Redis sorts a set here so that replicas and scripts agree.
		s.dontSort, s.alpha, s.by = false, true, nil
	}
	items, start, end, err := c.loadSortItems(args[1], e, exists, &s)
	if err != nil {
		return err
	}
	if !s.dontSort {
		if err := c.sortItems(items, &s, start, end); err != nil {
			return err
		}
	}
	items = items[start:end]
	if s.store == nil {
		c.sortReply(items, &s)
		return nil
	}
	return c.sortStore(items, &s)
}

// inScript reports whether the running command was called by a script:
// scripts run one at a time, and the command a script calls is a run
// nested in the script's own.
func (c *conn) inScript() bool {
	r := c.s.scripts.running.Load()
	return r != nil && r.conn == c && c.depth > 1
}

// loadSortItems reads the elements to sort and the [start, end) range of
// them the reply takes. A list or sorted set that is not sorted (BY a
// constant) loads only that range, in its own order or reversed.
func (c *conn) loadSortItems(key []byte, e entry, exists bool, s *sortSpec) (items []sortItem, start, end int, err error) {
	var m collMeta
	if exists {
		if m, err = decodeMeta(key, e); err != nil {
			return nil, 0, 0, err
		}
	}
	n := m.count
	from := min(max(s.limitStart, 0), n)
	count := min(max(s.count, -1), n)
	to := n
	if count >= 0 {
		to = min(from+count, n)
	}
	if n == 0 {
		return nil, 0, 0, nil
	}
	add := func(elem []byte) bool {
		items = append(items, sortItem{elem: bytes.Clone(elem)})
		return true
	}
	native := s.dontSort && m.typ != typeSet
	switch {
	case native && from >= to:
		return nil, 0, 0, nil
	case native && m.typ == typeList:
		lo, hi := from, to-1
		if s.desc {
			lo, hi = n-to, n-1-from
		}
		err = c.s.ks.listScan(c.reader(), key, m, lo, hi, s.desc, func(_ int64, v []byte) bool { return add(v) })
		return items, 0, len(items), err
	case native:
		skip := from
		err = c.s.ks.zwalk(c.reader(), key, m, nil, nil, s.desc, func(_ float64, member []byte) bool {
			if skip > 0 {
				skip--
				return true
			}
			add(member)
			return int64(len(items)) < to-from
		})
		return items, 0, len(items), err
	case m.typ == typeList:
		err = c.s.ks.listScan(c.reader(), key, m, 0, n-1, false, func(_ int64, v []byte) bool { return add(v) })
	case m.typ == typeSet:
		err = c.s.ks.scanElems(c.reader(), key, m, nil, func(member, _ []byte) bool { return add(member) })
	default:
		err = c.s.ks.zwalk(c.reader(), key, m, nil, nil, false, func(_ float64, member []byte) bool { return add(member) })
	}
	return items, int(from), int(max(from, to)), err
}

// sortItems computes each item's sort key and sorts them as Redis'
// sortCompare does. Redis sorts with the C library's qsort, a stable
// merge sort in glibc, so ties keep their load order here too.
func (c *conn) sortItems(items []sortItem, s *sortSpec, start, end int) error {
	for i := range items {
		by := items[i].elem
		if s.by != nil {
			v, ok, err := c.sortLookup(s.by, items[i].elem)
			if err != nil {
				return err
			}
			if !ok {
				continue // sorts as 0, or first when ALPHA
			}
			by = v
		}
		if s.alpha {
			if s.by != nil {
				items[i].cmp = by
			}
			continue
		}
		f, ok := sortScore(by)
		if !ok {
			return redisError("ERR One or more scores can't be converted into double")
		}
		items[i].score = f
	}
	slices.SortStableFunc(items, func(a, b sortItem) int {
		var r int
		switch {
		case !s.alpha:
			if r = cmpFloat(a.score, b.score); r == 0 {
				r = bytes.Compare(a.elem, b.elem)
			}
		case s.by == nil:
			r = bytes.Compare(a.elem, b.elem)
		case a.cmp == nil || b.cmp == nil:
			r = btoi(b.cmp == nil) - btoi(a.cmp == nil)
		default:
			r = bytes.Compare(a.cmp, b.cmp)
		}
		if s.desc {
			r = -r
		}
		return r
	})
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortScore parses a numeric sort key as Redis' strtod check does:
// leading spaces allowed, nothing after the number, no NaN, no overflow.
// The empty string is 0, as strtod leaves it.
func sortScore(b []byte) (float64, bool) {
	b = bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(b) == 0 {
		return 0, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && !math.IsNaN(f)
}

// sortLookup resolves a BY or GET pattern for elem as Redis'
// lookupKeyByPattern does: "#" is elem itself; otherwise the first '*'
// becomes elem, and a "->field" after it (with a field) reads that field
// of a hash instead of a string. ok is false for a pattern without '*',
// a missing key or field, or a key of another type.
func (c *conn) sortLookup(pattern, elem []byte) (val []byte, ok bool, err error) {
	if string(pattern) == "#" {
		return elem, true, nil
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false, nil
	}
	var field []byte
	keyEnd := len(pattern)
	if arrow := bytes.Index(pattern[star+1:], []byte("->")); arrow >= 0 && star+1+arrow+2 < len(pattern) {
		keyEnd = star + 1 + arrow
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd+len(elem))
	key = append(append(append(key, pattern[:star]...), elem...), pattern[star+1:keyEnd]...)
	e, exists, err := c.getEntry(key)
	if err != nil || !exists {
		return nil, false, err
	}
	if field == nil {
		switch e.typ {
		case typeString:
			return bytes.Clone(e.payload), true, nil
		case typeFragString:
			v, ok, err := c.get(key) // a long bitmap, read whole
			return v.val, ok, err
		}
		return nil, false, nil
	}
	if e.typ != typeHash {
		return nil, false, nil
	}
	m, err := decodeMeta(key, e)
	if err != nil {
		return nil, false, err
	}
	v, ok, err := c.getElem(key, m, field)
	return bytes.Clone(v), ok, err
}

// sortReply writes the sorted items, or for each the GET lookups (null
// for a missing one).
func (c *conn) sortReply(items []sortItem, s *sortSpec) {
	if len(s.gets) == 0 {
		c.wr.ArrayHeader(len(items))
		for _, it := range items {
			c.wr.Bulk(it.elem)
		}
		return
	}
	var vals [][]byte
	var found []bool
	for _, it := range items {
		for _, g := range s.gets {
			v, ok, err := c.sortLookup(g, it.elem)
			if err != nil {
				c.replyErr(err)
				return
			}
			vals, found = append(vals, v), append(found, ok)
		}
	}
	c.bulksOrNulls(vals, found)
}

// sortStore replaces the STORE key with a list of the result (a missing
// GET lookup stores an empty string), or deletes it for an empty result,
// and replies with the list's length. Like every list push it wakes the
// clients blocked on the key.
func (c *conn) sortStore(items []sortItem, s *sortSpec) error {
	var out [][]byte
	for _, it := range items {
		if len(s.gets) == 0 {
			out = append(out, it.elem)
			continue
		}
		for _, g := range s.gets {
			v, _, err := c.sortLookup(g, it.elem)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
	}
	for _, v := range out {
		if err := checkListElem(s.store, v); err != nil {
			return err
		}
	}
	return c.storeColl(s.store, typeList, "sortstore", len(out), func(m collMeta) {
		for i, v := range out {
			c.s.ks.listPut(c.batch, &c.elemBuf, s.store, m, int64(i), v)
		}
	})
}
