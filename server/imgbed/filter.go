package imgbed

import (
	"bytes"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// NewCompactionFilter returns the image host's part of a DB's
// lsmgo.Options.NewCompactionFilter: it reclaims the bytes of images
// that expired, in flushes and compactions, without a scan. now must be
// the clock the DB expires keys by (Options.Now). Its filters drop only
// keys of the image range (doc.go), so a DB that also holds other data
// asks them first and its own filter for the rest.
//
// The engine's TTL does most of it: an expiring image's record, index
// entries, view count and quota entry carry its expiry, read as absent
// from that moment and are dropped by compactions. Its bytes cannot
// carry one, since identical uploads with other expiries (or none) share
// them; the blob's metadata counts its references instead (blobMeta.live)
// and is never expired by the engine. The filter then decides, reading
// the state the flush or compaction started from:
//
//   - a chunk is dead when its generation is not pending and no live
//     metadata names it (the blob's, or one of its thumbnails');
//   - the metadata of a dead blob, or a thumbnail of one, is dead once no
//     chunk of its generation is left (and, for a blob, no thumbnail):
//     metadata outlives its bytes, so a chunk is never found without the
//     metadata that explains it.
//
// Each is dead for good: generations are random and never reused, a dead
// blob's metadata is only ever replaced by a new generation (addImage),
// and a thumbnail is stored only while its blob is live.
//
// Bytes in a remote store (S3) have no chunks to drop: the metadata of a
// dead blob, or of a dead blob's thumbnail, kept there stays, and the
// filter reports the blob to r (nil: nobody), whose Host deletes the
// objects and then the metadata (Reclaimer).
func NewCompactionFilter(now func() time.Time, r *Reclaimer) func(state lsmgo.Reader) lsmgo.CompactionFilter {
	return func(state lsmgo.Reader) lsmgo.CompactionFilter {
		return &imageFilter{state: state, now: now(), reclaim: r}
	}
}

type imageFilter struct {
	state   lsmgo.Reader
	now     time.Time
	reclaim *Reclaimer
	// The verdict on the last chunk generation asked about: chunks come
	// in key order, so one read serves every chunk of a generation.
	lastGen []byte
	lastOK  bool
}

func (f *imageFilter) Drop(k []byte) bool {
	if len(k) < 2+sumLen || k[0] != prefix {
		return false
	}
	s := sum(k[2 : 2+sumLen])
	switch k[1] {
	case kindChunk:
		if len(k) != 2+sumLen+genLen+4 {
			return false
		}
		g := k[:2+sumLen+genLen]
		if !bytes.Equal(g, f.lastGen) {
			f.lastGen = append(f.lastGen[:0], g...)
			f.lastOK = f.genLive(s, gen(k[2+sumLen:2+sumLen+genLen]))
		}
		return !f.lastOK
	case kindBlob:
		var m blobMeta
		if len(k) != 2+sumLen || getJSON(f.state, k, &m, "blob metadata") != nil || m.live(f.now) {
			return false
		}
		if m.Store != "" {
			f.reclaim.report(s)
			return false
		}
		return !f.hasAny(key(kindChunk, s[:], m.Gen[:])) && !f.hasAny(key(kindThumb, s[:]))
	case kindThumb:
		var m, blob blobMeta
		if getJSON(f.state, k, &m, "thumbnail metadata") != nil {
			return false
		}
		if err := getJSON(f.state, blobKey(s), &blob, "blob metadata"); err == nil && blob.live(f.now) || err != nil && err != errNotFound {
			return false
		}
		if m.Store != "" {
			f.reclaim.report(s)
			return false
		}
		return !f.hasAny(key(kindChunk, s[:], m.Gen[:]))
	}
	return false
}

// genLive reports whether chunks of generation g of s may still be read.
// Any doubt (a read error, damaged metadata) keeps them.
func (f *imageFilter) genLive(s sum, g gen) bool {
	if _, err := f.state.Get(pendingKey(s, g)); err == nil || err != lsmgo.ErrNotFound {
		return true
	}
	var m blobMeta
	switch err := getJSON(f.state, blobKey(s), &m, "blob metadata"); {
	case err == errNotFound:
		return false
	case err != nil:
		return true
	case !m.live(f.now):
		return false
	case m.Gen == g:
		return true
	}
	lo, hi := span(key(kindThumb, s[:]))
	it, err := f.state.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return true
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var t blobMeta
		if decode(it.Value(), &t, "thumbnail metadata") != nil || t.Gen == g {
			return true
		}
	}
	return it.Error() != nil
}

// hasAny reports whether state holds a key starting with p; an error
// answers yes, which keeps what depends on it.
func (f *imageFilter) hasAny(p []byte) bool {
	lo, hi := span(p)
	it, err := f.state.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return true
	}
	defer it.Close()
	return it.First() || it.Error() != nil
}
