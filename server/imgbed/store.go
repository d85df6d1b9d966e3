package imgbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// batchBytes bounds the chunk bytes of one engine batch, so that writing
// an image costs one batch of memory whatever its size.
const batchBytes = 1 << 20

var (
	errIDTaken  = errors.New("imgbed: id taken")
	errBlobGone = errors.New("imgbed: blob deleted meanwhile")
	errQuota    = errors.New("quota exceeded")
	errNotFound = errors.New("not found")
)

// store keeps records and blob metadata in the engine (doc.go has the
// layout), and blobs' bytes in blob stores: the DB's own (local), and
// where new originals and thumbnails go, which may be remote.
type store struct {
	db     *lsmgo.DB
	local  *dbBlobs
	remote blobStore // nil: none configured
	// originals and thumbs are where new blobs of each kind go: local or
	// remote.
	originals, thumbnails blobStore
	locks                 stripes
	now                   func() time.Time // the host's clock
	// follows reports Config.Follower: the DB is a replica's, whose only
	// writes are its primary's.
	follows func() bool
}

// stripes serializes the read-modify-writes of one blob, id or token:
// reference counts, id collision checks and quotas. Stripes are taken in
// ascending order, so operations locking several cannot deadlock.
type stripes struct {
	seed maphash.Seed
	mu   [256]sync.Mutex
}

func (s *stripes) lock(names ...string) func() {
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = int(maphash.String(s.seed, n) % uint64(len(s.mu)))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.mu[i].Lock()
	}
	return func() {
		for _, i := range idx {
			s.mu[i].Unlock()
		}
	}
}

// lockNames are the stripes a change of rec holds: its blob's reference
// count, its id, and its owner's usage. Anonymous images have no usage to
// guard; sharing one stripe among them would serialize their commits.
func lockNames(rec *record) []string {
	names := []string{"b" + string(rec.Sum[:]), "i" + rec.ID}
	if rec.Owner != "" {
		names = append(names, "q"+rec.Owner)
	}
	return names
}

func newStore(db *lsmgo.DB, chunk int) *store {
	local := &dbBlobs{db: db, chunk: chunk, batch: batchBytes}
	return &store{db: db, local: local, originals: local, thumbnails: local, locks: stripes{seed: maphash.MakeSeed()}}
}

func newGen() gen {
	var g gen
	rand.Read(g[:])
	return g
}

// blobs returns the blob store of kind k, nil when it is not configured.
func (st *store) blobs(k string) blobStore {
	switch {
	case k == "":
		return st.local
	case st.remote != nil && st.remote.kind() == k:
		return st.remote
	}
	return nil
}

// open opens the bytes of the blob m describes in the store that holds
// them; the failures of a remote store are errUnavailable.
func (st *store) open(ctx context.Context, s sum, m *blobMeta) (io.ReadSeekCloser, error) {
	bs := st.blobs(m.Store)
	if bs == nil {
		return nil, unavailable(fmt.Errorf("%w: %q", errNoStore, m.Store))
	}
	rc, err := bs.open(ctx, s, m)
	if err != nil && bs != blobStore(st.local) {
		err = unavailable(err)
	}
	return rc, err
}

// errNoStore is a blob kept in a blob store this host is not configured
// with (the configuration changed): it cannot be read until it is.
var errNoStore = errors.New("imgbed: blob store not configured")

// inline reports whether a fresh blob of size bytes in bs is written
// into the batch that commits its metadata: in the DB, within one batch.
func (st *store) inline(bs blobStore, size int64) bool {
	return bs == blobStore(st.local) && size <= int64(st.local.batch)
}

// stage stores the size bytes of r as a new generation of s in bs, after
// a pending marker naming bs: until metadata names the generation, New
// treats its bytes as garbage. On failure the bytes are reclaimed.
func (st *store) stage(ctx context.Context, bs blobStore, s sum, r io.Reader, size int64, mime string) (gen, error) {
	g := newGen()
	if err := st.db.Set(pendingKey(s, g), []byte(bs.kind()), nil); err != nil {
		return g, err
	}
	if err := bs.put(ctx, s, g, r, size, mime); err != nil {
		st.reclaim(bs, s, g)
		return g, err
	}
	return g, nil
}

// reclaim deletes the bytes of generation g of s from bs and then its
// pending marker. A failure (a blob store that is down) leaves the marker,
// so New's sweep tries again.
func (st *store) reclaim(bs blobStore, s sum, g gen) {
	ctx, cancel := context.WithTimeout(context.Background(), reclaimTimeout)
	defer cancel()
	if bs.remove(ctx, s, g) == nil {
		st.db.Delete(pendingKey(s, g), nil)
	}
}

// reclaimTimeout bounds one deletion of unreferenced bytes, which no
// client waits for.
const reclaimTimeout = time.Minute

// getJSON reads and decodes the value at k through r.
func getJSON(r interface{ Get([]byte) ([]byte, error) }, k []byte, v any, what string) error {
	raw, err := r.Get(k)
	if errors.Is(err, lsmgo.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	return decode(raw, v, what)
}

// addImage makes rec visible in one batch. fresh describes the blob's
// bytes when the caller has them ready: already staged as fresh.Gen, or,
// when inline is not nil, inline itself, small enough that this batch
// writes it into the DB too (one commit instead of two). fresh is nil when the caller
// expects the blob to exist. When the blob exists its reference count
// goes up and staged bytes are reclaimed. limit checks the owner's usage
// before it is updated. also, when not nil, adds to the batch what must
// be committed with the image.
func (st *store) addImage(rec *record, fresh *blobMeta, inline []byte, limit func(usage) error, also func(b *lsmgo.Batch, dup bool)) (dup bool, err error) {
	unlock := st.locks.lock(lockNames(rec)...)
	defer func() {
		unlock()
		if dup && fresh != nil && inline == nil {
			st.reclaim(st.blobs(fresh.Store), rec.Sum, fresh.Gen)
		}
	}()
	if _, err := st.db.Get(imageKey(rec.ID)); err == nil {
		return false, errIDTaken
	} else if !errors.Is(err, lsmgo.ErrNotFound) {
		return false, err
	}
	var meta blobMeta
	var garbage []blobMeta // the bytes of dead metadata this upload replaces
	b := st.db.NewBatch()
	switch err := getJSON(st.db, blobKey(rec.Sum), &meta, "blob metadata"); {
	case err == nil && meta.live(st.now()):
		dup = true
	case err != nil && err != errNotFound:
		return false, err
	case fresh == nil:
		return false, errBlobGone
	default:
		if err == nil {
			// Every image of these bytes expired; the compaction filter
			// has not reclaimed them yet. Reclaim them now, with the
			// thumbnails, which must not outlive their generation.
			if garbage, err = st.discard(b, rec.Sum, meta); err != nil {
				return false, err
			}
		}
		meta = *fresh
	}
	if rec.Expires == 0 {
		meta.Refs++
	} else {
		meta.ExpRefs++
		meta.Expires = max(meta.Expires, rec.Expires)
	}
	if rec.Owner != "" {
		u, err := st.usage(rec.Owner)
		if err != nil {
			return false, err
		}
		if limit != nil {
			if err := limit(u.usage); err != nil {
				return false, err
			}
		}
		if rec.Expires == 0 {
			u.permanent.Bytes += rec.Size
			u.permanent.Count++
			b.Set(usageKey(rec.Owner), encode(u.permanent))
		} else {
			setFor(b, rec, expUsageKey(rec.Owner, rec.ID), []byte(strconv.FormatInt(rec.Size, 10)))
		}
	}
	if rec.Owner != "" {
		setFor(b, rec, ownedKey(rec), nil)
	}
	setFor(b, rec, imageKey(rec.ID), encode(rec))
	setFor(b, rec, recentKey(rec.Created, rec.ID), nil)
	b.Set(blobKey(rec.Sum), encode(meta))
	switch {
	case dup:
	case inline != nil:
		st.local.chunksInto(b, rec.Sum, meta.Gen, inline)
	default:
		b.Delete(pendingKey(rec.Sum, meta.Gen))
	}
	if also != nil {
		also(b, dup)
	}
	if err := st.db.Apply(b, nil); err != nil {
		return false, err
	}
	st.reclaimAll(rec.Sum, garbage)
	return dup, nil
}

// record reads the image record of id.
func (st *store) record(id string) (*record, error) {
	var rec record
	if err := getJSON(st.db, imageKey(id), &rec, "image record"); err != nil {
		return nil, err
	}
	return &rec, nil
}

// removeImage deletes the record of id if allow accepts it, and the blob
// and its thumbnails when that was the last reference. freed reports the
// latter.
func (st *store) removeImage(id string, allow func(*record) bool) (freed bool, err error) {
	rec, err := st.record(id)
	if err != nil {
		return false, err
	}
	if !allow(rec) {
		return false, errForbidden
	}
	var garbage []blobMeta
	unlock := st.locks.lock(lockNames(rec)...)
	err = func() error {
		defer unlock()
		if _, err := st.db.Get(imageKey(id)); err != nil { // deleted meanwhile
			if errors.Is(err, lsmgo.ErrNotFound) {
				return errNotFound
			}
			return err
		}
		b := st.db.NewBatch()
		b.Delete(imageKey(id))
		b.Delete(recentKey(rec.Created, id))
		if rec.MaxViews > 0 {
			b.Delete(viewsKey(id))
		}
		if rec.Owner != "" {
			b.Delete(ownedKey(rec))
		}
		if err := st.leaveAlbums(b, rec); err != nil {
			return err
		}
		switch {
		case rec.Owner == "":
		case rec.Expires != 0:
			b.Delete(expUsageKey(rec.Owner, id))
		default:
			var u usage
			if err := getJSON(st.db, usageKey(rec.Owner), &u, "usage"); err != nil && err != errNotFound {
				return err
			}
			u.Bytes = max(0, u.Bytes-rec.Size)
			u.Count = max(0, u.Count-1)
			b.Set(usageKey(rec.Owner), encode(u))
		}
		var meta blobMeta
		if err := getJSON(st.db, blobKey(rec.Sum), &meta, "blob metadata"); err != nil {
			return err
		}
		if rec.Expires == 0 {
			meta.Refs--
		} else if meta.ExpRefs > 0 {
			meta.ExpRefs--
		}
		if meta.live(st.now()) {
			b.Set(blobKey(rec.Sum), encode(meta))
			return st.db.Apply(b, nil)
		}
		b.Delete(blobKey(rec.Sum))
		var err error
		if garbage, err = st.discard(b, rec.Sum, meta); err != nil {
			return err
		}
		return st.db.Apply(b, nil)
	}()
	if err != nil {
		return false, err
	}
	st.reclaimAll(rec.Sum, garbage)
	return len(garbage) > 0, nil
}

// discard adds to b what makes the bytes meta describes, and the
// thumbnails of s, garbage: the thumbnails' metadata goes, and each
// generation is marked pending. The caller deletes or replaces meta
// itself in b, and calls reclaimAll with the result once b is applied.
func (st *store) discard(b *lsmgo.Batch, s sum, meta blobMeta) ([]blobMeta, error) {
	garbage := []blobMeta{meta}
	thumbs, err := st.thumbs(s)
	if err != nil {
		return nil, err
	}
	for _, t := range thumbs {
		b.Delete(t.key)
		garbage = append(garbage, t.meta)
	}
	for _, m := range garbage {
		b.Set(pendingKey(s, m.Gen), []byte(m.Store))
	}
	return garbage, nil
}

// reclaimAll reclaims the generations discard marked.
func (st *store) reclaimAll(s sum, garbage []blobMeta) {
	for _, m := range garbage {
		if bs := st.blobs(m.Store); bs != nil {
			st.reclaim(bs, s, m.Gen)
		}
	}
}

// setFor writes k for rec: with rec's expiry as the engine's, so the key
// stops reading at that moment and compactions drop it.
func setFor(b *lsmgo.Batch, rec *record, k, v []byte) {
	if rec.Expires == 0 {
		b.Set(k, v)
		return
	}
	b.SetWithExpiry(k, v, rec.expiry())
}

// ownerUsage is a token's usage: its permanent images (kept in one
// counter) plus the expiring ones that have not expired (one key each, so
// expiry alone takes them out).
type ownerUsage struct {
	usage
	permanent usage
}

func (st *store) usage(owner string) (ownerUsage, error) {
	var u ownerUsage
	if err := getJSON(st.db, usageKey(owner), &u.permanent, "usage"); err != nil && err != errNotFound {
		return u, err
	}
	u.usage = u.permanent
	lo, hi := span(expUsageKey(owner, ""))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return u, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		n, _ := strconv.ParseInt(string(it.Value()), 10, 64)
		u.Bytes += n
		u.Count++
	}
	return u, it.Close()
}

type thumbEntry struct {
	key  []byte
	meta blobMeta
}

// thumbs lists the stored thumbnails of s.
func (st *store) thumbs(s sum) ([]thumbEntry, error) {
	lo, hi := span(key(kindThumb, s[:]))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	var out []thumbEntry
	for ok := it.First(); ok; ok = it.Next() {
		var m blobMeta
		if err := decode(it.Value(), &m, "thumbnail metadata"); err != nil {
			it.Close()
			return nil, err
		}
		out = append(out, thumbEntry{bytes.Clone(it.Key()), m})
	}
	return out, it.Close()
}

// addThumb stores a rendered thumbnail of s, unless the blob was deleted
// or another render stored it first.
func (st *store) addThumb(ctx context.Context, s sum, k []byte, data []byte, mime string, w, h int) error {
	bs := st.thumbnails
	meta := blobMeta{V: recordVersion, Store: bs.kind(), Size: int64(len(data)), Mime: mime, Width: w, Height: h}
	if bs == blobStore(st.local) {
		meta.Chunk = st.local.chunk
	}
	inline := st.inline(bs, meta.Size)
	if inline {
		meta.Gen = newGen()
	} else {
		g, err := st.stage(ctx, bs, s, bytes.NewReader(data), meta.Size, mime)
		if err != nil {
			return err
		}
		meta.Gen = g
	}
	stored, err := func() (bool, error) {
		defer st.locks.lock("b" + string(s[:]))()
		var blob blobMeta
		if err := getJSON(st.db, blobKey(s), &blob, "blob metadata"); err != nil {
			return false, err
		}
		if !blob.live(st.now()) {
			return false, nil
		}
		if _, err := st.db.Get(k); err == nil {
			return false, nil
		}
		b := st.db.NewBatch()
		b.Set(k, encode(meta))
		if inline {
			st.local.chunksInto(b, s, meta.Gen, data)
		} else {
			b.Delete(pendingKey(s, meta.Gen))
		}
		return true, st.db.Apply(b, nil)
	}()
	if !stored && !inline {
		st.reclaim(bs, s, meta.Gen)
	}
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}

// sweep reclaims the bytes of every generation left pending: uploads
// that never committed and deletions that never finished, after a crash
// or while a remote blob store was down. It must run before the store
// serves requests, since uploads in flight are pending too. It returns
// how many it reclaimed; those in a blob store that is not configured or
// fails keep their marker for the next start.
func (st *store) sweep() (int, error) {
	lo, hi := span(key(kindPending))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	type pend struct {
		s    sum
		g    gen
		kind string
	}
	var todo []pend
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[2:]
		if len(k) != sumLen+genLen {
			continue
		}
		p := pend{kind: string(it.Value())}
		copy(p.s[:], k)
		copy(p.g[:], k[sumLen:])
		todo = append(todo, p)
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	n := 0
	down := make(map[string]bool) // a remote store that failed once is left for the next start
	for _, p := range todo {
		bs := st.blobs(p.kind)
		if bs == nil || down[p.kind] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), reclaimTimeout)
		err := bs.remove(ctx, p.s, p.g)
		cancel()
		if err != nil {
			if bs == blobStore(st.local) {
				return n, fmt.Errorf("imgbed: sweeping pending chunks: %w", err)
			}
			down[p.kind] = true
			continue
		}
		if err := st.db.Delete(pendingKey(p.s, p.g), nil); err != nil {
			return n, fmt.Errorf("imgbed: sweeping pending chunks: %w", err)
		}
		n++
	}
	return n, nil
}
