package server

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
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
// their suffixes in the index (encoded score, member), and the ahead of
// the mark written with them. It never changes once read: which of its
// entries are still to pop is told by the mark's low, read with the pop,
// so a pop whose batch never commits (a failed commit, a discarded
// transaction) leaves the window as right as the mark it read.
type zsetWindow struct {
	ahead    []byte
	items    []zmember
	suffixes [][]byte
}

// readZWindow reads the window that follows the entry z was last at: up
// to zWindowSize entries and windowBytes of their members, ending before
// the first member that would pass windowBytes. It returns nil when no
// entry follows or the next one is such a member: the window's last
// suffix goes into the pop mark's ahead, and a member of hundreds of MiB
// there would make a mark past the engine's MaxEntrySize, and every
// ZPOPMIN fail.
func readZWindow(z *zIter) *zsetWindow {
	win := &zsetWindow{}
	size := 0
	for len(win.items) < zWindowSize && z.next() {
		if size += len(z.member); size > windowBytes {
			break
		}
		win.items = append(win.items, zmember{member: bytes.Clone(z.member), score: z.score})
		win.suffixes = append(win.suffixes, append(encodeScore(nil, z.score), z.member...))
	}
	if len(win.items) == 0 {
		return nil
	}
	last := win.suffixes[len(win.suffixes)-1]
	win.ahead = append(binary.BigEndian.AppendUint64(make([]byte, 0, aheadName+len(last)), rand.Uint64()), last...)
	return win
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
	if err != nil || mark.low == nil || !bytes.Equal(mark.ahead, win.ahead) {
		ks.zpops.put(prefix, nil)
		return nil, err
	}
	// The entries below low are popped; the first at or above it that a
	// point read still finds is the lowest.
	i, _ := slices.BinarySearchFunc(win.suffixes, mark.low, bytes.Compare)
	for ; i < len(win.items); i++ {
		it := win.items[i]
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
			mark.low = append(bytes.Clone(win.suffixes[i]), 0)
			ks.putPopMark(c.batch, &c.elemBuf, key, *m, mark)
		}
		if i == len(win.items)-1 || m.count == 0 {
			ks.zpops.put(prefix, nil)
		}
		return []zmember{it}, nil
	}
	ks.zpops.put(prefix, nil)
	return nil, nil
}
