package server

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
)

// ZPOPMIN of one member pops from a window: the pop that walks the score
// index (popFrom) reads up to zWindowSize entries past the one it pops and
// keeps them in memory, and the pops that follow take them in order
// without opening a walk. A walk costs an iterator over every level of
// the tree and a seek in each (45% of ZPOPMIN's CPU at -P 16 in issue 20's
// profiles); a pop from the window costs a point read of its member.
//
// The window is right only while no entry has been added below its last
// one: the pop that reads it writes the pop mark's ahead (popMark) with a
// random name for it, every write that adds an entry at or below its last
// entry drops ahead (popMark.widen, read in the batch that adds), and a
// pop uses the window only when the mark it reads carries the window's
// ahead. Entries removed meanwhile (ZREM, ZPOPMAX, a changed score) are
// found missing by the point read and skipped. So the first window entry
// still in the set is the set's lowest: none below the mark's low is
// live, none was added between low and the window's last entry, and the
// window held every entry between them when it was read.
const zWindowSize = 32

// aheadName is how many bytes of random name start a window's ahead.
const aheadName = 8

// zsetWindow is a ZPOPMIN window: entries of the score index in order,
// and the ahead of the mark written with them.
type zsetWindow struct {
	ahead []byte
	items []zmember
}

// readZWindow reads the window that follows the entry z was last at: up
// to zWindowSize entries or windowBytes of their members. It returns nil
// when no entry follows.
func readZWindow(z *zIter) *zsetWindow {
	var items []zmember
	size := 0
	for len(items) < zWindowSize && size < windowBytes && z.next() {
		items = append(items, zmember{member: bytes.Clone(z.member), score: z.score})
		size += len(z.member)
	}
	if len(items) == 0 {
		return nil
	}
	last := items[len(items)-1]
	ahead := binary.BigEndian.AppendUint64(make([]byte, 0, aheadName+scoreLen+len(last.member)), rand.Uint64())
	ahead = append(encodeScore(ahead, last.score), last.member...)
	return &zsetWindow{ahead: ahead, items: items}
}

// zpopWindow pops the lowest member of the sorted set m at key, whose lock
// the caller holds, from its window, adding the removal and the moved pop
// mark to the batch. It returns nothing, having added nothing, when the
// window cannot tell the lowest member (none, used up, or the mark no
// longer carries its ahead).
func (c *conn) zpopWindow(key []byte, m *collMeta) ([]zmember, error) {
	ks := &c.s.ks
	prefix := elemsKey(nil, key, *m)
	win := ks.zpops.get(prefix)
	if win == nil {
		return nil, nil
	}
	mark, err := ks.readPopMark(c.reader(), key, append(prefix, zMarkSub))
	if err != nil || !bytes.Equal(mark.ahead, win.ahead) {
		ks.zpops.put(prefix, nil)
		return nil, err
	}
	for len(win.items) > 0 {
		it := win.items[0]
		win.items = win.items[1:]
		score, found, err := ks.zscore(c.reader(), &c.elemBuf, key, *m, it.member)
		if err != nil {
			return nil, err
		}
		if !found || score != it.score {
			continue
		}
		ks.zdelete(c.batch, &c.elemBuf, key, *m, it.member, it.score)
		m.count--
		if m.count > 0 {
			mark.low = append(append(encodeScore(make([]byte, 0, scoreLen+len(it.member)+1), it.score), it.member...), 0)
			ks.putPopMark(c.batch, &c.elemBuf, key, *m, mark)
		}
		if len(win.items) == 0 || m.count == 0 {
			ks.zpops.put(prefix, nil)
		}
		return []zmember{it}, nil
	}
	ks.zpops.put(prefix, nil)
	return nil, nil
}
