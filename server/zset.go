package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/lsmgo-dev/lsmgo"
)

// A sorted set is a collection (collection.go) whose elements come in two
// kinds, each under a sub-prefix of its own after the collection's element
// prefix (doc/server.md, "Sorted sets"):
//
//	prefix + 'm' + member                   encoded score (8 bytes)
//	prefix + 's' + encoded score + member   empty
//	prefix + 'p'                            the pop mark (popMark), if any
//
// The member entries answer ZSCORE with one point read; the score index
// holds the members in Redis' order (score, then member bytes), so a range
// by score is one seek and a walk over the entries it returns. The engine
// keeps no counts, so a rank is a walk: ZRANK walks up to the member, and
// ZRANGE by index walks from whichever end of the set is nearer.
const (
	zMemberSub = 'm'
	zScoreSub  = 's'
	zMarkSub   = 'p'
	scoreLen   = 8
)

// zMemberPrefix is the members' sub-prefix as a slice, for scanElemsIn.
var zMemberPrefix = []byte{zMemberSub}

// encodeScore appends to dst the 8-byte encoding of f whose byte order is
// f's numeric order: the IEEE bits with the sign bit flipped for
// non-negative numbers and every bit flipped for negative ones, so that
// -inf < negative < 0 < positive < +inf compare as their encodings do.
// -0 is encoded as 0: the two are equal scores, as in Redis, which orders
// equal scores by member. NaN is never stored.
func encodeScore(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0
	}
	u := math.Float64bits(f)
	if u>>63 != 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// decodeScore inverts encodeScore; b holds at least 8 bytes.
func decodeScore(b []byte) float64 {
	u := binary.BigEndian.Uint64(b)
	if u>>63 != 0 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return math.Float64frombits(u)
}

// zMemberKey appends to dst the engine key of member's entry in version
// of the sorted set at userKey.
func zMemberKey(dst, userKey []byte, m collMeta, member []byte) []byte {
	dst = append(elemsKey(dst, userKey, m), zMemberSub)
	return append(dst, member...)
}

// zScoreKey appends to dst the engine key of member's score index entry.
func zScoreKey(dst, userKey []byte, m collMeta, score float64, member []byte) []byte {
	dst = append(elemsKey(dst, userKey, m), zScoreSub)
	dst = encodeScore(dst, score)
	return append(dst, member...)
}

// maxMember is the longest member the sorted set at userKey may hold: its
// score index entry's key holds the member and the 9 bytes before it.
func maxMember(userKey []byte) int64 { return maxElem(userKey) - 1 - scoreLen }

func zsetCorrupt(userKey []byte, reason string) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1, Reason: "sorted set " + reason}
}

// zscore reads member's score in m at userKey through r; ok is false when
// the member is absent.
func (ks *keyspace) zscore(r lsmgo.Reader, buf *[]byte, userKey []byte, m collMeta, member []byte) (score float64, ok bool, err error) {
	*buf = zMemberKey(*buf, userKey, m, member)
	v, err := r.Get(*buf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return decodeMemberScore(userKey, v)
}

func decodeMemberScore(userKey, v []byte) (float64, bool, error) {
	if len(v) != scoreLen {
		return 0, false, zsetCorrupt(userKey, fmt.Sprintf("member entry holds %d bytes, want %d", len(v), scoreLen))
	}
	f := decodeScore(v)
	if math.IsNaN(f) {
		return 0, false, zsetCorrupt(userKey, "score is NaN")
	}
	return f, true, nil
}

// zput adds to b the two entries of member with score in m at userKey.
func (ks *keyspace) zput(b *lsmgo.Batch, buf *[]byte, userKey []byte, m collMeta, member []byte, score float64) {
	*buf = zMemberKey(*buf, userKey, m, member)
	k := len(*buf)
	*buf = encodeScore(*buf, score)
	b.Set((*buf)[:k], (*buf)[k:])
	*buf = zScoreKey(*buf, userKey, m, score, member)
	b.Set(*buf, nil)
}

// zdelete adds to b the deletion of member, whose score is score, from m
// at userKey.
func (ks *keyspace) zdelete(b *lsmgo.Batch, buf *[]byte, userKey []byte, m collMeta, member []byte, score float64) {
	*buf = zMemberKey(*buf, userKey, m, member)
	b.Delete(*buf)
	*buf = zScoreKey(*buf, userKey, m, score, member)
	b.Delete(*buf)
}

// zIter walks a sorted set's score index, in Redis' order or, when
// reverse, backwards. Each next moves one entry and decodes it into score
// and member; member is valid until the next call.
type zIter struct {
	it      *lsmgo.Iterator
	opts    lsmgo.IterOptions
	userKey []byte
	prefix  []byte  // the index's prefix
	skip    int     // the length of the index's prefix
	mark    popMark // the set's pop mark, which bounds the walk
	reverse bool
	started bool
	score   float64
	member  []byte
	err     error
}

// newZIter opens a walk of the score index of m at userKey between lower
// (inclusive) and upper (exclusive), both given as what follows the
// index's prefix (an encoded score, then member bytes); nil is unbounded.
// The set's pop mark, read through r too, narrows the bounds. The engine
// keys it needs (the mark's, the index's prefix and both bounds) share
// one allocation, and the iterator's options live in the walk: ZPOPMIN
// opens a walk per pop.
func (ks *keyspace) newZIter(r lsmgo.Reader, userKey []byte, m collMeta, lower, upper []byte, reverse bool) (*zIter, error) {
	base := elemsKey(nil, userKey, m)
	n := len(base) + 1
	markKey := append(base, zMarkSub)
	mark, err := ks.readPopMark(r, userKey, markKey)
	if err != nil {
		return nil, err
	}
	if mark.low != nil && bytes.Compare(lower, mark.low) < 0 {
		lower = mark.low
	}
	if mark.high != nil && (upper == nil || bytes.Compare(upper, mark.high) > 0) {
		upper = mark.high
	}
	// buf holds the index's prefix, then the lower bound, then the
	// upper bound; without upper, the end of the index: its prefix with
	// the sub-prefix byte incremented.
	buf := make([]byte, 0, 3*n+len(lower)+len(upper))
	buf = append(append(buf, base...), zScoreSub)
	prefix := buf[:n:n]
	z := &zIter{userKey: userKey, prefix: prefix, skip: n, mark: mark, reverse: reverse}
	buf = append(append(buf, prefix...), lower...)
	z.opts.LowerBound = buf[n:len(buf):len(buf)]
	end := len(buf)
	buf = append(buf, prefix...)
	if upper != nil {
		buf = append(buf, upper...)
	} else {
		buf[len(buf)-1]++
	}
	z.opts.UpperBound = buf[end:]
	it, err := r.NewIter(&z.opts)
	if err != nil {
		return nil, err
	}
	z.it = it
	return z, nil
}

// walkRange seeks to lower and walks forward to upper (both as for
// newZIter, narrowed by the pop mark), calling fn with each entry until
// it returns false; it reports whether fn asked for more. A walk opened
// unbounded can so read several ranges with one iterator and one read
// of the mark (zwalkRanges).
func (z *zIter) walkRange(lower, upper []byte, fn func(score float64, member []byte) bool) bool {
	if z.mark.low != nil && bytes.Compare(lower, z.mark.low) < 0 {
		lower = z.mark.low
	}
	if z.mark.high != nil && bytes.Compare(upper, z.mark.high) > 0 {
		upper = z.mark.high
	}
	for ok := z.it.SeekGE(append(z.prefix, lower...)); ok; ok = z.it.Next() {
		k := z.it.Key()[z.skip:]
		if bytes.Compare(k, upper) >= 0 {
			return true
		}
		if len(k) < scoreLen {
			z.err = zsetCorrupt(z.userKey, fmt.Sprintf("score index entry of %d bytes", len(k)))
			return false
		}
		if !fn(decodeScore(k), k[scoreLen:]) {
			return false
		}
	}
	z.err = z.it.Error()
	return z.err == nil
}

func (z *zIter) next() bool {
	if z.err != nil {
		return false
	}
	var ok bool
	switch {
	case !z.started && z.reverse:
		ok = z.it.Last()
	case !z.started:
		ok = z.it.First()
	case z.reverse:
		ok = z.it.Prev()
	default:
		ok = z.it.Next()
	}
	z.started = true
	if !ok {
		z.err = z.it.Error()
		return false
	}
	k := z.it.Key()[z.skip:]
	if len(k) < scoreLen {
		z.err = zsetCorrupt(z.userKey, fmt.Sprintf("score index entry of %d bytes", len(k)))
		return false
	}
	z.score, z.member = decodeScore(k), k[scoreLen:]
	return true
}

// close releases the walk and returns its first error.
func (z *zIter) close() error {
	err := z.it.Close()
	if z.err != nil {
		return z.err
	}
	return err
}

// zwalk calls fn with each entry of the score index of m at userKey
// between lower and upper (as for newZIter), in order or reversed, until
// fn returns false.
func (ks *keyspace) zwalk(r lsmgo.Reader, userKey []byte, m collMeta, lower, upper []byte, reverse bool, fn func(score float64, member []byte) bool) error {
	z, err := ks.newZIter(r, userKey, m, lower, upper, reverse)
	if err != nil {
		return err
	}
	for z.next() && fn(z.score, z.member) {
	}
	return z.close()
}

// zwalkRanges calls fn with the entries of the score index of m at
// userKey in each of ranges ([lower, upper) pairs, as for newZIter), range
// after range, until fn returns false: one iterator and one read of the
// pop mark for them all.
func (ks *keyspace) zwalkRanges(r lsmgo.Reader, userKey []byte, m collMeta, ranges [][2][]byte, fn func(score float64, member []byte) bool) error {
	z, err := ks.newZIter(r, userKey, m, nil, nil, false)
	if err != nil {
		return err
	}
	for _, rg := range ranges {
		if !z.walkRange(rg[0], rg[1], fn) {
			break
		}
	}
	return z.close()
}

// zrank returns the number of members of m at userKey before member,
// whose score is score, in Redis' order. It walks the index from both
// ends at once and stops when either walk meets the member, so it costs
// O(min(rank, count-rank)) entries, not Redis' O(log n).
func (ks *keyspace) zrank(r lsmgo.Reader, userKey []byte, m collMeta, member []byte, score float64) (int64, error) {
	fwd, err := ks.newZIter(r, userKey, m, nil, nil, false)
	if err != nil {
		return 0, err
	}
	back, err := ks.newZIter(r, userKey, m, nil, nil, true)
	if err != nil {
		fwd.close()
		return 0, err
	}
	rank := int64(-1)
	for i := int64(0); i < m.count && rank < 0 && fwd.next() && back.next(); i++ {
		switch {
		case fwd.score == score && bytes.Equal(fwd.member, member):
			rank = i
		case back.score == score && bytes.Equal(back.member, member):
			rank = m.count - 1 - i
		}
	}
	fwdErr, backErr := fwd.close(), back.close()
	switch {
	case fwdErr != nil:
		return 0, fwdErr
	case backErr != nil:
		return 0, backErr
	case rank < 0:
		return 0, zsetCorrupt(userKey, fmt.Sprintf("member %q is missing from the score index", member))
	}
	return rank, nil
}

// A popMark bounds the live entries of a sorted set's score index, as
// suffixes after the index's prefix (an encoded score, then a member):
// none is below low, none at or above high; nil is no bound. Popping
// deletes entries at one end of the index, and deletions stay in the
// engine as tombstones until compaction drops them, so a walk from that
// end would step over every one: a queue drained by ZPOPMIN slowed with
// each pop, from about 100,000 pops a second to under 200 after 40,000
// pops of a 200,000-member set, and so did every ZRANGE 0 0 after them.
// So the pops write the mark, in the batch that deletes the entries, and
// every walk of the index starts inside it; a write that adds an entry
// outside the mark widens it in the same batch. Read through the same
// view as the index, the mark never hides a live entry.
//
// ZPOPMIN's window (zpopwindow.go) adds ahead: 8 random bytes naming the
// window, then the suffix of its last entry. While the mark carries it,
// no entry has been added between low and that entry since the window was
// read: a write that adds one there drops ahead (widen), and only a
// window's read writes it. A mark with a high bound carries no ahead.
//
// Engine value: uvarint len(low), low, then high, or, with ahead, the
// bytes FF FF and ahead. No suffix starts with FF FF (the highest score,
// +inf, encodes as FF F0 …, and NaN is never stored), so the two cannot be
// confused, and a server from before windows reads FF FF + ahead as a high
// bound above every entry: no bound, as it should.
type popMark struct{ low, high, ahead []byte }

func zMarkKey(dst, userKey []byte, m collMeta) []byte {
	return append(elemsKey(dst, userKey, m), zMarkSub)
}

// popMark reads the pop mark of m at userKey through r.
func (ks *keyspace) popMark(r lsmgo.Reader, userKey []byte, m collMeta) (popMark, error) {
	return ks.readPopMark(r, userKey, zMarkKey(nil, userKey, m))
}

// readPopMark reads the pop mark of the sorted set at userKey, whose
// engine key is key, through r.
func (ks *keyspace) readPopMark(r lsmgo.Reader, userKey, key []byte) (popMark, error) {
	v, err := r.Get(key)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return popMark{}, nil
	}
	if err != nil {
		return popMark{}, err
	}
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return popMark{}, zsetCorrupt(userKey, fmt.Sprintf("pop mark of %d bytes is malformed", len(v)))
	}
	var mark popMark
	if n > 0 {
		mark.low = v[w : w+int(n)]
	}
	switch rest := v[w+int(n):]; {
	case bytes.HasPrefix(rest, markAhead):
		mark.ahead = rest[len(markAhead):]
		if len(mark.ahead) < aheadName+scoreLen {
			return popMark{}, zsetCorrupt(userKey, fmt.Sprintf("pop mark's ahead of %d bytes is malformed", len(mark.ahead)))
		}
	case len(rest) > 0:
		mark.high = rest
	}
	return mark, nil
}

// markAhead stands where a pop mark's high would, before a window's ahead.
var markAhead = []byte{0xff, 0xff}

// putPopMark adds to b the write of mark for m at userKey, building the
// key and the value in *buf.
func (ks *keyspace) putPopMark(b *lsmgo.Batch, buf *[]byte, userKey []byte, m collMeta, mark popMark) {
	*buf = zMarkKey(*buf, userKey, m)
	if mark.low == nil && mark.high == nil {
		b.Delete(*buf)
		return
	}
	k := len(*buf)
	*buf = binary.AppendUvarint(*buf, uint64(len(mark.low)))
	*buf = append(*buf, mark.low...)
	if mark.high == nil && mark.ahead != nil {
		*buf = append(append(*buf, markAhead...), mark.ahead...)
	} else {
		*buf = append(*buf, mark.high...)
	}
	b.Set((*buf)[:k], (*buf)[k:])
}

// widen returns the mark moved so that it no longer excludes the index
// entry of member with score, and without a window's ahead that the entry
// falls within; changed reports whether it changed.
func (mark popMark) widen(score float64, member []byte) (popMark, bool) {
	if mark.low == nil && mark.high == nil {
		return mark, false
	}
	suffix := append(encodeScore(nil, score), member...)
	changed := false
	if mark.ahead != nil && bytes.Compare(suffix, mark.ahead[aheadName:]) <= 0 {
		mark.ahead, changed = nil, true
	}
	if mark.low != nil && bytes.Compare(suffix, mark.low) < 0 {
		mark.low, mark.ahead, changed = nil, nil, true
	}
	if mark.high != nil && bytes.Compare(suffix, mark.high) >= 0 {
		mark.high, changed = nil, true
	}
	return mark, changed
}
