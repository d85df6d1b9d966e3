package server

import (
	"math"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

// RESTORE decodes a payload element by element straight into the
// command's batch: no decoded collection is held whole in memory, only
// the names of its elements, to refuse a repeated hash field, set member
// or sorted-set member (which would leave a count the elements do not
// match). Every encoding Redis 7.0 and 7.2 write is read (package rdb),
// and the stream encoding of Redis 6.2 and older (restore_stream.go).

// errElemTooBig refuses an element the engine cannot store under key.
var errElemTooBig = redisError("ERR the DUMP payload holds an element too large for this server")

// restorer adds the elements of one decoded collection to a batch.
type restorer struct {
	ks   *keyspace
	b    *lsmgo.Batch
	key  []byte
	m    collMeta
	buf  []byte
	seen map[string]struct{}
	// pending holds the first of a pair (a hash field, a sorted-set
	// member) read from a flat listpack or ziplist, until its second.
	pending    []byte
	hasPending bool
}

// restoreValue decodes the serialized value body (rdb.Open's result) and
// adds to b the writes that make it the value at key, expiring at
// expireAt (zero: never). Strings longer than maxString are refused.
func (ks *keyspace) restoreValue(b *lsmgo.Batch, kb *keyBuf, key, body []byte, expireAt time.Time, maxString int64) error {
	r := rdb.NewReader(body, maxDecoded)
	t, err := r.Byte()
	if err != nil {
		return errBadRDB
	}
	if t == rdb.TypeString {
		s, err := r.String()
		if err != nil {
			return rdbError(err)
		}
		if int64(len(s)) > maxString {
			return errStringTooBig
		}
		ks.putString(b, kb, key, stringValue{val: s, expireAt: expireAt})
		return nil
	}
	if t == rdb.TypeStreamListpacks || t == rdb.TypeStreamListpacks2 || t == rdb.TypeStreamListpacks3 {
		return rdbError(ks.restoreStream(b, kb, key, r, t, expireAt))
	}
	typ, ok := restoredType(t)
	if !ok {
		return errBadRDB
	}
	m, err := ks.newColl(kb.ns, typ)
	if err != nil {
		return err
	}
	rs := &restorer{ks: ks, b: b, key: key, m: m, seen: map[string]struct{}{}}
	if err := rs.decode(r, t); err != nil {
		return rdbError(err)
	}
	if rs.m.count == 0 || rs.hasPending {
		return errBadRDB // Redis refuses empty collections and odd pairs
	}
	rs.m.expireAt = expireAt
	ks.putColl(b, kb, key, rs.m)
	return nil
}

// restoredType maps a collection encoding to the type that holds it.
func restoredType(t byte) (byte, bool) {
	switch t {
	case rdb.TypeList, rdb.TypeListZiplist, rdb.TypeListQuicklist, rdb.TypeListQuicklist2:
		return typeList, true
	case rdb.TypeSet, rdb.TypeSetIntset, rdb.TypeSetListpack:
		return typeSet, true
	case rdb.TypeZSet, rdb.TypeZSet2, rdb.TypeZSetZiplist, rdb.TypeZSetListpack:
		return typeZSet, true
	case rdb.TypeHash, rdb.TypeHashZiplist, rdb.TypeHashListpack:
		return typeHash, true
	}
	return 0, false
}

// decode reads the collection encoded as t.
func (rs *restorer) decode(r *rdb.Reader, t byte) error {
	switch t {
	case rdb.TypeList, rdb.TypeSet, rdb.TypeHash:
		return rs.decodePlain(r)
	case rdb.TypeZSet, rdb.TypeZSet2:
		return repeat(r, func() error {
			member, err := r.String()
			if err != nil {
				return err
			}
			readScore := r.BinaryDouble
			if t == rdb.TypeZSet {
				readScore = r.StringDouble
			}
			score, err := readScore()
			if err != nil {
				return err
			}
			return rs.zsetMember(member, score)
		})
	case rdb.TypeListQuicklist, rdb.TypeListQuicklist2:
		return repeat(r, func() error {
			container := uint64(rdb.ContainerPacked)
			if t == rdb.TypeListQuicklist2 {
				var err error
				if container, err = r.Len(); err != nil {
					return err
				}
			}
			node, err := r.String()
			switch {
			case err != nil:
				return err
			case container == rdb.ContainerPlain:
				return rs.flat(node)
			case container != rdb.ContainerPacked:
				return rdb.ErrFormat
			case t == rdb.TypeListQuicklist:
				return rdb.WalkZiplist(node, rs.flat)
			}
			return rdb.WalkListpack(node, rs.flat)
		})
	}
	blob, err := r.String()
	if err != nil {
		return err
	}
	switch t {
	case rdb.TypeSetIntset:
		return rdb.WalkIntset(blob, rs.flat)
	case rdb.TypeListZiplist, rdb.TypeZSetZiplist, rdb.TypeHashZiplist:
		return rdb.WalkZiplist(blob, rs.flat)
	}
	return rdb.WalkListpack(blob, rs.flat)
}

// repeat reads an RDB length and runs one n times.
func repeat(r *rdb.Reader, one func() error) error {
	n, err := r.Len()
	for ; err == nil && n > 0; n-- {
		err = one()
	}
	return err
}

// decodePlain reads a plain list, set or hash: a count, then strings (two
// per field of a hash).
func (rs *restorer) decodePlain(r *rdb.Reader) error {
	return repeat(r, func() error {
		for range 1 + btoi(rs.m.typ == typeHash) {
			s, err := r.String()
			if err != nil {
				return err
			}
			if err := rs.flat(s); err != nil {
				return err
			}
		}
		return nil
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// flat takes the next string of a collection's flat sequence: a list's
// element, a set's member, or half of a hash's or sorted set's pair.
func (rs *restorer) flat(s []byte) error {
	switch rs.m.typ {
	case typeList:
		if checkListElem(rs.key, s) != nil {
			return errElemTooBig
		}
		rs.ks.listPut(rs.b, &rs.buf, rs.key, rs.m, rs.m.count, s)
		rs.m.count++
		return nil
	case typeSet:
		if int64(len(s)) > maxElem(rs.key) {
			return errElemTooBig
		}
		if err := rs.once(s); err != nil {
			return err
		}
		rs.ks.putElem(rs.b, &rs.buf, rs.key, rs.m, s, nil)
		rs.m.count++
		return nil
	}
	if !rs.hasPending {
		rs.pending, rs.hasPending = append(rs.pending[:0], s...), true
		return nil
	}
	rs.hasPending = false
	if rs.m.typ == typeHash {
		return rs.hashField(rs.pending, s)
	}
	score, err := rdb.ParseDouble(s)
	if err != nil {
		return err
	}
	return rs.zsetMember(rs.pending, score)
}

// once refuses an element name seen before in this collection.
func (rs *restorer) once(name []byte) error {
	if _, dup := rs.seen[string(name)]; dup {
		return rdb.ErrFormat
	}
	rs.seen[string(name)] = struct{}{}
	return nil
}

func (rs *restorer) hashField(field, val []byte) error {
	if int64(len(field)+len(val)) > maxElem(rs.key) {
		return errElemTooBig
	}
	if err := rs.once(field); err != nil {
		return err
	}
	rs.ks.putElem(rs.b, &rs.buf, rs.key, rs.m, field, val)
	rs.m.count++
	return nil
}

func (rs *restorer) zsetMember(member []byte, score float64) error {
	if math.IsNaN(score) {
		return rdb.ErrFormat
	}
	if int64(len(member)) > maxMember(rs.key) {
		return errElemTooBig
	}
	if err := rs.once(member); err != nil {
		return err
	}
	rs.ks.zput(rs.b, &rs.buf, rs.key, rs.m, member, score)
	rs.m.count++
	return nil
}
