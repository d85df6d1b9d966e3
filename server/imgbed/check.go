package imgbed

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lsmgo-dev/lsmgo"
)

// Check verifies the image store's invariants over one snapshot and
// returns every violation found: each record's blob exists and counts
// exactly the records that point at it; the recent index and the records
// match; every blob and thumbnail has all its chunks at their sizes; and
// every other chunk belongs to a generation marked pending; every blob in
// a remote store has its object there, at its size. Tests run it after
// each scenario; it reads the whole image keyspace and asks the remote
// store about each of its blobs.
func (h *Host) Check() error { return h.check(true) }

// check is Check, asking remote stores about their blobs only with
// remote: tests of a store that is down check the rest.
func (h *Host) check(remote bool) error {
	snap := h.st.db.NewSnapshot()
	defer snap.Close()
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }

	each := func(kind byte, fn func(k, v []byte) error) error {
		lo, hi := span(key(kind))
		it, err := snap.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if err := fn(it.Key()[2:], it.Value()); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close()
	}
	type genKey struct {
		s sum
		g gen
	}
	now := h.now()
	refs := make(map[sum]int64)    // records without expiry
	expRefs := make(map[sum]int64) // records with one
	latest := make(map[sum]int64)  // their latest expiry
	recent := make(map[string]bool)
	live := make(map[genKey]blobMeta) // generations that metadata names
	// Generations of expired blobs and their thumbnails: the compaction
	// filter reclaims their chunks in any order, so some may be gone.
	dead := make(map[genKey]bool)
	deadBlob := make(map[sum]bool)
	pending := make(map[genKey]bool)
	records := make(map[string]*record)
	owned := make(map[string]bool) // owner index entries the records want

	err := errors.Join(
		each(kindImage, func(k, v []byte) error {
			var rec record
			if err := decode(v, &rec, "image record"); err != nil {
				bad("record %q: %v", k, err)
				return nil
			}
			if rec.Expires == 0 {
				refs[rec.Sum]++
			} else {
				expRefs[rec.Sum]++
				latest[rec.Sum] = max(latest[rec.Sum], rec.Expires)
			}
			recent[string(recentKey(rec.Created, rec.ID))] = true
			records[rec.ID] = &rec
			if rec.Owner != "" {
				owned[string(ownedKey(&rec))] = true
			}
			return nil
		}),
		each(kindRecent, func(k, _ []byte) error {
			full := append([]byte{prefix, kindRecent}, k...)
			if !recent[string(full)] {
				bad("recent index entry %x has no record", k)
			}
			delete(recent, string(full))
			return nil
		}),
		each(kindBlob, func(k, v []byte) error {
			var m blobMeta
			if err := decode(v, &m, "blob metadata"); err != nil || len(k) != sumLen {
				bad("blob %x: %v", k, err)
				return nil
			}
			s := sum(k)
			if m.Refs != refs[s] {
				bad("blob %v counts %d references, %d records point at it", s, m.Refs, refs[s])
			}
			// Expired records are never counted down: at least as many.
			if m.ExpRefs < expRefs[s] || m.Expires < latest[s] {
				bad("blob %v counts %d expiring references until %d, %d records expire until %d", s, m.ExpRefs, m.Expires, expRefs[s], latest[s])
			}
			if !m.live(now) {
				deadBlob[s] = true
				dead[genKey{s, m.Gen}] = true
			}
			delete(refs, s)
			delete(expRefs, s)
			live[genKey{s, m.Gen}] = m
			return nil
		}),
		each(kindThumb, func(k, v []byte) error {
			var m blobMeta
			if err := decode(v, &m, "thumbnail metadata"); err != nil || len(k) < sumLen {
				bad("thumbnail %x: %v", k, err)
				return nil
			}
			s := sum(k[:sumLen])
			if _, err := snap.Get(blobKey(s)); err != nil {
				bad("thumbnail %x of missing blob: %v", k, err)
			}
			if deadBlob[s] {
				dead[genKey{s, m.Gen}] = true
			}
			live[genKey{s, m.Gen}] = m
			return nil
		}),
		each(kindPending, func(k, _ []byte) error {
			if len(k) == sumLen+genLen {
				pending[genKey{sum(k[:sumLen]), gen(k[sumLen:])}] = true
			}
			return nil
		}),
	)
	if err != nil {
		return err
	}
	for s := range refs {
		bad("records point at missing blob %v", s)
	}
	if err := h.checkIndexes(snap, records, owned, bad); err != nil {
		return err
	}
	for s := range expRefs {
		bad("expiring records point at missing blob %v", s)
	}
	for k := range recent {
		bad("record without recent index entry %x", k)
	}
	seen := make(map[genKey]int)
	err = each(kindChunk, func(k, v []byte) error {
		if len(k) != sumLen+genLen+4 {
			bad("chunk key %x", k)
			return nil
		}
		gk := genKey{sum(k[:sumLen]), gen(k[sumLen : sumLen+genLen])}
		m, ok := live[gk]
		switch {
		case pending[gk]:
		case !ok || m.Store != "":
			bad("chunk %x belongs to no blob and is not pending", k)
		default:
			i := int(binary.BigEndian.Uint32(k[sumLen+genLen:]))
			want := min(int64(m.Chunk), m.Size-int64(i)*int64(m.Chunk))
			if i >= m.chunks() || int64(len(v)) != want {
				bad("chunk %d of %v: %d bytes, blob has %d chunks", i, gk.s, len(v), m.chunks())
			}
			seen[gk]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for gk, m := range live {
		if m.Store != "" {
			if remote {
				h.checkRemote(gk.s, m, bad)
			}
			continue
		}
		if seen[gk] != m.chunks() && !(dead[gk] && seen[gk] < m.chunks()) {
			bad("blob %v generation %x has %d of its %d chunks", gk.s, gk.g, seen[gk], m.chunks())
		}
	}
	if err := each(kindResumable, func(_, v []byte) error { h.checkResumable(v, bad); return nil }); err != nil {
		return err
	}
	return errors.Join(problems...)
}

// checkRemote reports a blob whose bytes its remote store lacks.
func (h *Host) checkRemote(s sum, m blobMeta, bad func(string, ...any)) {
	bs := h.st.blobs(m.Store)
	if bs == nil {
		bad("blob %v generation %x is in store %q, which is not configured", s, m.Gen, m.Store)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reclaimTimeout)
	defer cancel()
	switch size, err := bs.stat(ctx, s, m.Gen); {
	case err != nil:
		bad("blob %v generation %x in store %q: %v", s, m.Gen, m.Store, err)
	case size != m.Size:
		bad("blob %v generation %x in store %q holds %d bytes, want %d", s, m.Gen, m.Store, size, m.Size)
	}
}

// checkIndexes verifies the owner index and album memberships: every
// owned record has its entry and every entry its record; every membership
// names an existing album and image and has its way back.
func (h *Host) checkIndexes(snap *lsmgo.Snapshot, records map[string]*record, owned map[string]bool, bad func(string, ...any)) error {
	each := func(kind byte, fn func(k []byte)) error {
		lo, hi := span(key(kind))
		it, err := snap.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			fn(bytes.Clone(it.Key()))
		}
		return it.Error()
	}
	backs := make(map[string]bool)
	err := errors.Join(
		each(kindOwned, func(k []byte) {
			if !owned[string(k)] {
				bad("owner index entry %q has no record", k)
			}
			delete(owned, string(k))
		}),
		each(kindMember, func(k []byte) {
			albumID, rest, ok := bytes.Cut(k[2:], []byte{0})
			if !ok || len(rest) < 8 {
				bad("membership key %q", k)
				return
			}
			id := string(rest[8:])
			rec := records[id]
			if _, err := snap.Get(albumKey(string(albumID))); err != nil || rec == nil ||
				!bytes.Equal(k, memberKey(string(albumID), rec)) {
				bad("membership %q: album or image missing", k)
			}
			backs[string(memberOfKey(id, string(albumID)))] = true
		}),
	)
	if err != nil {
		return err
	}
	for k := range owned {
		bad("record without owner index entry %q", k)
	}
	err = each(kindMemberOf, func(k []byte) {
		if !backs[string(k)] {
			bad("album membership %q has no entry in its album", k)
		}
		delete(backs, string(k))
	})
	for k := range backs {
		bad("album membership %q has no way back from its image", k)
	}
	return err
}
