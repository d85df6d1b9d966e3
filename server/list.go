package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lsmgo-dev/lsmgo"
)

// Lists are collections (collection.go) whose elements sit in numbered
// slots: slot s of the list version v at key is the engine entry
//
//	'e' + len(key) (4, BE) + key + v (8, BE) + (s XOR 1<<63) (8, BE)  →  the element
//
// so the engine's key order is slot order, and slot order is list order.
// The metadata adds the slot of the first element (head, signed) to the
// version and count: the list is slots head … head+count-1. LPUSH writes
// slot head-1 and RPUSH slot head+count, LPOP and RPOP delete an end slot:
// one metadata read, one element write or delete, whatever the length.
// LINDEX and LSET are one point access; LRANGE iterates only the slots it
// returns. Inserting or removing in the middle (LINSERT, LREM) moves the
// elements of the shorter side of the change one slot (or, for LREM, as
// many slots as were removed on that side), so it costs O(min(p, n-p))
// element rewrites for position p in a list of n, all in the command's
// one batch; Redis' own LINSERT and LREM are O(n) too.
//
// The methods below take offsets (0 … count-1) into the list m at key;
// reads go through r, writes into b, and buf is reused for element keys.

// slotKey appends to dst the engine key of slot of the list m at key.
func slotKey(dst, key []byte, m collMeta, slot int64) []byte {
	dst = elemsKey(dst, key, m)
	return binary.BigEndian.AppendUint64(dst, uint64(slot)^1<<63)
}

// checkListElem refuses an element too big to store in the list at key.
func checkListElem(key, val []byte) error {
	if int64(len(val))+8 > maxElem(key) {
		return errStringTooBig
	}
	return nil
}

// listPut adds to b the write of val at offset i of the list m.
func (ks *keyspace) listPut(b *lsmgo.Batch, buf *[]byte, key []byte, m collMeta, i int64, val []byte) {
	*buf = slotKey(*buf, key, m, m.head+i)
	b.Set(*buf, val)
}

// listDelete adds to b the deletion of offsets [from, to) of m.
func (ks *keyspace) listDelete(b *lsmgo.Batch, buf *[]byte, key []byte, m collMeta, from, to int64) {
	for i := from; i < to; i++ {
		*buf = slotKey(*buf, key, m, m.head+i)
		b.Delete(*buf)
	}
}

// listPush adds to b val at the head (left) or tail of m.
func (ks *keyspace) listPush(b *lsmgo.Batch, buf *[]byte, key []byte, m *collMeta, left bool, val []byte) {
	if left {
		m.head--
		ks.listPut(b, buf, key, *m, 0, val)
	} else {
		ks.listPut(b, buf, key, *m, m.count, val)
	}
	m.count++
}

// errMissingElem reports a slot the metadata counts but the engine lacks.
func errMissingElem(key []byte, i int64) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1,
		Reason: fmt.Sprintf("list element at index %d is missing", i)}
}

// listGet appends offset i of m to dst (pointGet).
func (ks *keyspace) listGet(r lsmgo.Reader, buf *[]byte, dst, key []byte, m collMeta, i int64) ([]byte, error) {
	*buf = slotKey(*buf, key, m, m.head+i)
	val, err := pointGet(r, dst, *buf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		err = errMissingElem(key, i)
	}
	return val, err
}

// listScan calls fn with the offsets from … to (inclusive, within the
// list) of m and their elements, in order or in reverse, until fn returns
// false. The element is valid only during the call. A missing element is
// a corruption error.
func (ks *keyspace) listScan(r lsmgo.Reader, key []byte, m collMeta, from, to int64, reverse bool, fn func(i int64, val []byte) bool) error {
	lower := slotKey(nil, key, m, m.head+from)
	upper := slotKey(nil, key, m, m.head+to+1)
	it, err := r.NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	want, step, valid, advance := from, int64(1), it.First(), it.Next
	if reverse {
		want, step, valid, advance = to, -1, it.Last(), it.Prev
	}
	prefix := len(lower) - 8
	for ; valid; valid = advance() {
		slot := int64(binary.BigEndian.Uint64(it.Key()[prefix:])^1<<63) - m.head
		if slot != want {
			break
		}
		if !fn(slot, it.Value()) {
			return closeIter(it, nil)
		}
		want += step
	}
	var missing error
	if (!reverse && want <= to) || (reverse && want >= from) {
		missing = errMissingElem(key, want)
	}
	return closeIter(it, missing)
}

// closeIter closes it and returns the first error among it's, the
// close's and err.
func closeIter(it *lsmgo.Iterator, err error) error {
	if ierr := it.Error(); ierr != nil {
		err = ierr
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// listPopN adds to b the removal of up to n elements from the head (left)
// or tail of m and returns them in pop order.
func (ks *keyspace) listPopN(r lsmgo.Reader, b *lsmgo.Batch, buf *[]byte, key []byte, m *collMeta, left bool, n int64) ([][]byte, error) {
	n = min(n, m.count)
	vals := make([][]byte, 0, n)
	from, to := int64(0), n-1
	if !left {
		from, to = m.count-n, m.count-1
	}
	if n == 1 {
		v, err := ks.listGet(r, buf, nil, key, *m, from)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	} else if err := ks.listScan(r, key, *m, from, to, !left, func(_ int64, val []byte) bool {
		vals = append(vals, bytes.Clone(val))
		return true
	}); err != nil {
		return nil, err
	}
	ks.listDelete(b, buf, key, *m, from, to+1)
	if left {
		m.head += n
	}
	m.count -= n
	return vals, nil
}

// listInsert adds to b the insertion of val at offset i of m (0 ≤ i ≤
// count), moving the shorter side of the list one slot outwards.
func (ks *keyspace) listInsert(r lsmgo.Reader, b *lsmgo.Batch, buf *[]byte, key []byte, m *collMeta, i int64, val []byte) error {
	if i <= m.count-i {
		// Offsets 0 … i-1 move one slot left, into a new head.
		moved := *m
		moved.head--
		if i > 0 {
			if err := ks.listScan(r, key, *m, 0, i-1, false, func(j int64, v []byte) bool {
				ks.listPut(b, buf, key, moved, j, v)
				return true
			}); err != nil {
				return err
			}
		}
		*m = moved
	} else if err := ks.listScan(r, key, *m, i, m.count-1, false, func(j int64, v []byte) bool {
		ks.listPut(b, buf, key, *m, j+1, v)
		return true
	}); err != nil {
		return err
	}
	ks.listPut(b, buf, key, *m, i, val)
	m.count++
	return nil
}

// listRemove adds to b the removal of the offsets in rm (ascending) from
// m, closing the gaps from the side that moves fewer elements: either the
// elements after the first removed one move left, or those before the
// last one move right.
func (ks *keyspace) listRemove(r lsmgo.Reader, b *lsmgo.Batch, buf *[]byte, key []byte, m *collMeta, rm []int64) error {
	k := int64(len(rm))
	first, last := rm[0], rm[k-1]
	gap := int64(0)
	if m.count-first-k <= last+1-k {
		if err := ks.listScan(r, key, *m, first, m.count-1, false, func(i int64, v []byte) bool {
			if gap < k && rm[gap] == i {
				gap++
			} else {
				ks.listPut(b, buf, key, *m, i-gap, v)
			}
			return true
		}); err != nil {
			return err
		}
		ks.listDelete(b, buf, key, *m, m.count-k, m.count)
	} else {
		if err := ks.listScan(r, key, *m, 0, last, true, func(i int64, v []byte) bool {
			if gap < k && rm[k-1-gap] == i {
				gap++
			} else {
				ks.listPut(b, buf, key, *m, i+gap, v)
			}
			return true
		}); err != nil {
			return err
		}
		ks.listDelete(b, buf, key, *m, 0, k)
		m.head += k
	}
	m.count -= k
	return nil
}
