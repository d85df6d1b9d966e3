package compaction

import (
	"bytes"
	"sort"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// Iter filters the merged input of a compaction down to the entries the
// output keeps.
//
// The versions of a user key are grouped into stripes by the live snapshots
// that can see them: stripe(e) is the number of snapshots s with s <= e.seq,
// so the newest stripe, above every snapshot, is what current readers see,
// and a reader at snapshot s_j (ascending, 1-based) sees exactly the stripes
// below j. Every reader sees the newest version of some stripe, so only the
// newest version of each stripe is kept.
//
// A kept KindSetExpiry or KindSetExpiryBlob entry whose expiry is at or before the compaction's
// clock is rewritten as a KindDelete with the same sequence number: readers
// already treat it as absent, and the tombstone still hides older versions
// below it. In a bottommost compaction nothing older exists below the
// output, so trailing tombstones (the oldest kept versions, while they are
// deletions) hide nothing and are dropped too.
//
// A filter (SetFilter) is asked about the newest version of each user key
// when that version is a value no snapshot can see; when it says drop, the
// version becomes a KindDelete with the same sequence number, as an
// expired one does. Versions a snapshot can see are never offered, so the
// filter cannot change what a snapshot reads, whatever it decides.
//
// Iter buffers the kept versions of one user key, copying them out of the
// input, because deciding whether the oldest ones survive needs all of
// them. Key and Value stay valid until the next call to First or Next.
type Iter struct {
	input      base.InternalIterator
	snapshots  []base.SeqNum
	bottommost bool
	nowMs      int64

	// userKey, entries and values hold the current user key's kept
	// versions, newest first; they are reused from key to key.
	userKey []byte
	entries []keptEntry
	values  []byte
	pos     int

	// drop is the filter, nil when there is none.
	drop func(userKey []byte) bool

	err      error
	dropped  int64
	expired  int64
	filtered int64
}

// keptEntry is one surviving version; its value is values[start:end].
type keptEntry struct {
	trailer    uint64
	start, end int
}

// NewIter returns an Iter over input, which must yield every entry of every
// input file in base.CompareInternal order. snapshots are the live
// snapshot sequence numbers in ascending order; bottommost comes from
// Compaction.Bottommost; nowMs is the Unix-millisecond clock that decides
// expiry. The caller keeps ownership of input and closes it.
func NewIter(input base.InternalIterator, snapshots []base.SeqNum, bottommost bool, nowMs int64) *Iter {
	return &Iter{input: input, snapshots: snapshots, bottommost: bottommost, nowMs: nowMs}
}

// SetFilter installs drop as the iterator's filter; call it before First.
// drop gets the user key of each version offered (see Iter) and must not
// keep it after returning.
func (i *Iter) SetFilter(drop func(userKey []byte) bool) { i.drop = drop }

// First positions the iterator on the first kept entry and reports whether
// there is one.
func (i *Iter) First() bool {
	if i.err != nil {
		return false
	}
	i.input.First()
	return i.nextUserKey()
}

// Next moves to the next kept entry and reports whether there is one.
func (i *Iter) Next() bool {
	if i.err != nil || i.pos >= len(i.entries) {
		return false
	}
	i.pos++
	if i.pos < len(i.entries) {
		return true
	}
	return i.nextUserKey()
}

// Key returns the current entry's key, valid until the next move.
func (i *Iter) Key() base.InternalKey {
	return base.InternalKey{UserKey: i.userKey, Trailer: i.entries[i.pos].trailer}
}

// Value returns the current entry's value, valid until the next move.
func (i *Iter) Value() []byte {
	e := i.entries[i.pos]
	return i.values[e.start:e.end:e.end]
}

// Error returns the input's error or the corruption that stopped the
// iteration, if any.
func (i *Iter) Error() error { return i.err }

// Stats returns how many input entries the output has left out so far, and
// how many kept entries were found expired (each either rewritten as a
// tombstone or, in a bottommost compaction, possibly dropped and then
// counted in dropped as well).
func (i *Iter) Stats() (dropped int64, expired int64) { return i.dropped, i.expired }

// Filtered returns how many versions the filter has turned into
// deletions so far.
func (i *Iter) Filtered() int64 { return i.filtered }

// nextUserKey fills the buffer from the input's next user keys until one
// keeps at least one entry, and positions on its newest.
func (i *Iter) nextUserKey() bool {
	for i.input.Valid() {
		if !i.fill() {
			return false
		}
		if len(i.entries) > 0 {
			return true
		}
	}
	if err := i.input.Error(); err != nil {
		i.fail(err)
	}
	i.entries = i.entries[:0]
	i.pos = 0
	return false
}

// fill consumes every version of the input's current user key and buffers
// the kept ones. It returns false, with i.err set, on corruption.
func (i *Iter) fill() bool {
	i.userKey = append(i.userKey[:0], i.input.Key().UserKey...)
	i.entries = i.entries[:0]
	i.values = i.values[:0]
	i.pos = 0
	lastStripe := -1
	for ; i.input.Valid(); i.input.Next() {
		k := i.input.Key()
		if !bytes.Equal(k.UserKey, i.userKey) {
			break
		}
		v := i.input.Value()
		if err := checkEntry(k, v); err != nil {
			i.fail(err)
			return false
		}
		stripe := i.stripe(k.Seq())
		if stripe == lastStripe {
			i.dropped++
			continue
		}
		lastStripe = stripe
		if k.Kind().HasExpiry() {
			if exp, _, _ := base.DecodeExpiryValue(v); exp <= i.nowMs {
				i.expired++
				k.Trailer = base.MakeTrailer(k.Seq(), base.KindDelete)
				v = nil
			}
		}
		// Only the newest stripe is above every snapshot, and only its
		// newest version, the first one met, is kept.
		if i.drop != nil && stripe == len(i.snapshots) && k.Kind() != base.KindDelete && i.drop(i.userKey) {
			i.filtered++
			k.Trailer = base.MakeTrailer(k.Seq(), base.KindDelete)
			v = nil
		}
		start := len(i.values)
		i.values = append(i.values, v...)
		i.entries = append(i.entries, keptEntry{trailer: k.Trailer, start: start, end: len(i.values)})
	}
	// An input that fails mid-key must not let a partial set of versions
	// through: the bottommost trimming below would misjudge it.
	if err := i.input.Error(); err != nil {
		i.fail(err)
		return false
	}
	if i.bottommost {
		n := len(i.entries)
		for n > 0 && (base.InternalKey{Trailer: i.entries[n-1].trailer}).Kind() == base.KindDelete {
			n--
		}
		i.dropped += int64(len(i.entries) - n)
		i.entries = i.entries[:n]
	}
	return true
}

// stripe returns the number of snapshots too old to see an entry written
// at seq.
func (i *Iter) stripe(seq base.SeqNum) int {
	return sort.Search(len(i.snapshots), func(j int) bool { return i.snapshots[j] > seq })
}

// fail records the first error and makes the iterator invalid.
func (i *Iter) fail(err error) {
	if i.err == nil {
		i.err = err
	}
	i.entries = i.entries[:0]
	i.pos = 0
}

// checkEntry rejects entries the output must not carry forward: unknown
// kinds, and expiring values too short to hold their expiry time.
func checkEntry(k base.InternalKey, v []byte) error {
	switch {
	case !k.Kind().Valid():
		return base.Corruptf("", -1, "compaction input key %s has unknown kind", k)
	case k.Kind().HasExpiry() && len(v) < base.ExpiryLen:
		return base.Corruptf("", -1, "compaction input key %s has a %d-byte value, too short for its expiry time", k, len(v))
	}
	return nil
}
