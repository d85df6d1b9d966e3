package imgbed

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"sync"

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

// store keeps blobs and records in the engine (doc.go has the layout).
type store struct {
	db    *lsmgo.DB
	chunk int
	batch int // batchBytes; tests lower it to reach the multi-batch path
	locks stripes
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
	return &store{db: db, chunk: chunk, batch: batchBytes, locks: stripes{seed: maphash.MakeSeed()}}
}

func newGen() gen {
	var g gen
	rand.Read(g[:])
	return g
}

// writeChunks stores the size bytes of r as the chunks of a new generation
// of s, with a pending marker in the first batch: until a metadata entry
// names the generation, New treats its chunks as garbage.
func (st *store) writeChunks(s sum, r io.Reader, size int64) (gen, error) {
	g := newGen()
	b := st.db.NewBatch()
	b.Set(pendingKey(s, g), nil)
	buf := make([]byte, st.chunk)
	var written int64
	for i := 0; written < size; i++ {
		n, err := io.ReadFull(r, buf[:min(int64(st.chunk), size-written)])
		if err != nil {
			st.discard(s, g, i)
			return g, err
		}
		b.Set(chunkKey(s, g, i), buf[:n])
		written += int64(n)
		if b.Len() >= st.batch || written == size {
			if err := st.db.Apply(b, nil); err != nil {
				st.discard(s, g, i+1)
				return g, err
			}
			b.Reset()
		}
	}
	if b.Count() > 0 { // only the marker: an empty blob
		if err := st.db.Apply(b, nil); err != nil {
			return g, err
		}
	}
	return g, nil
}

// chunksInto adds the chunks of size bytes from r to b.
func (st *store) chunksInto(b *lsmgo.Batch, s sum, g gen, r io.Reader, size int64) error {
	buf := make([]byte, min(int64(st.chunk), size))
	for i := 0; int64(i)*int64(st.chunk) < size; i++ {
		n, err := io.ReadFull(r, buf[:min(int64(st.chunk), size-int64(i)*int64(st.chunk))])
		if err != nil {
			return err
		}
		b.Set(chunkKey(s, g, i), buf[:n])
	}
	return nil
}

// discard deletes the first n chunks of generation g and then its pending
// marker. Errors are left to New's sweep, which finds the marker.
func (st *store) discard(s sum, g gen, n int) {
	b := st.db.NewBatch()
	for i := range n {
		b.Delete(chunkKey(s, g, i))
		if b.Count() >= 1000 {
			if st.db.Apply(b, nil) != nil {
				return
			}
			b.Reset()
		}
	}
	b.Delete(pendingKey(s, g))
	st.db.Apply(b, nil)
}

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
// bytes when the caller has them ready: already written as chunks of
// fresh.Gen by writeChunks, or, when inline is not nil, small enough that
// this batch writes them too (one commit instead of two). fresh is nil
// when the caller expects the blob to exist. When the blob exists its
// reference count goes up and fresh chunks are discarded. limit checks the
// owner's usage before it is updated.
func (st *store) addImage(rec *record, fresh *blobMeta, inline io.Reader, limit func(usage) error) (dup bool, err error) {
	unlock := st.locks.lock(lockNames(rec)...)
	defer func() {
		unlock()
		if dup && fresh != nil && inline == nil {
			st.discard(rec.Sum, fresh.Gen, fresh.chunks())
		}
	}()
	if _, err := st.db.Get(imageKey(rec.ID)); err == nil {
		return false, errIDTaken
	} else if !errors.Is(err, lsmgo.ErrNotFound) {
		return false, err
	}
	var meta blobMeta
	switch err := getJSON(st.db, blobKey(rec.Sum), &meta, "blob metadata"); {
	case err == nil:
		dup = true
		meta.Refs++
	case err != errNotFound:
		return false, err
	case fresh == nil:
		return false, errBlobGone
	default:
		meta = *fresh
		meta.Refs = 1
	}
	b := st.db.NewBatch()
	if rec.Owner != "" {
		var u usage
		if err := getJSON(st.db, usageKey(rec.Owner), &u, "usage"); err != nil && err != errNotFound {
			return false, err
		}
		if limit != nil {
			if err := limit(u); err != nil {
				return false, err
			}
		}
		u.Bytes += rec.Size
		u.Count++
		b.Set(usageKey(rec.Owner), encode(u))
	}
	b.Set(imageKey(rec.ID), encode(rec))
	b.Set(recentKey(rec.Created, rec.ID), nil)
	b.Set(blobKey(rec.Sum), encode(meta))
	switch {
	case dup:
	case inline != nil:
		if err := st.chunksInto(b, rec.Sum, meta.Gen, inline, meta.Size); err != nil {
			return false, err
		}
	default:
		b.Delete(pendingKey(rec.Sum, meta.Gen))
	}
	if err := st.db.Apply(b, nil); err != nil {
		return false, err
	}
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
		if rec.Owner != "" {
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
		if meta.Refs--; meta.Refs > 0 {
			b.Set(blobKey(rec.Sum), encode(meta))
			return st.db.Apply(b, nil)
		}
		garbage = append(garbage, meta)
		b.Delete(blobKey(rec.Sum))
		thumbs, err := st.thumbs(rec.Sum)
		if err != nil {
			return err
		}
		for _, t := range thumbs {
			b.Delete(t.key)
			garbage = append(garbage, t.meta)
		}
		for _, m := range garbage {
			b.Set(pendingKey(rec.Sum, m.Gen), nil)
		}
		return st.db.Apply(b, nil)
	}()
	if err != nil {
		return false, err
	}
	for _, m := range garbage {
		st.discard(rec.Sum, m.Gen, m.chunks())
	}
	return len(garbage) > 0, nil
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
func (st *store) addThumb(s sum, k []byte, data []byte, mime string, w, h int) error {
	g, err := st.writeChunks(s, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	meta := blobMeta{V: recordVersion, Gen: g, Size: int64(len(data)), Chunk: st.chunk, Mime: mime, Width: w, Height: h}
	stored, err := func() (bool, error) {
		defer st.locks.lock("b" + string(s[:]))()
		if _, err := st.db.Get(blobKey(s)); err != nil {
			return false, err
		}
		if _, err := st.db.Get(k); err == nil {
			return false, nil
		}
		b := st.db.NewBatch()
		b.Set(k, encode(meta))
		b.Delete(pendingKey(s, g))
		return true, st.db.Apply(b, nil)
	}()
	if !stored {
		st.discard(s, g, meta.chunks())
	}
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil
	}
	return err
}

// sweep removes the chunks of every generation that a crash left pending:
// uploads that never committed and deletions that never finished. It must
// run before the store serves requests.
func (st *store) sweep() (int, error) {
	lo, hi := span(key(kindPending))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	type pend struct {
		s sum
		g gen
	}
	var todo []pend
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[2:]
		if len(k) != sumLen+genLen {
			continue
		}
		var p pend
		copy(p.s[:], k)
		copy(p.g[:], k[sumLen:])
		todo = append(todo, p)
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	for _, p := range todo {
		lo, hi := span(key(kindChunk, p.s[:], p.g[:]))
		it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return 0, err
		}
		b := st.db.NewBatch()
		for ok := it.First(); ok; ok = it.Next() {
			b.Delete(it.Key())
		}
		if err := it.Close(); err != nil {
			return 0, err
		}
		b.Delete(pendingKey(p.s, p.g))
		if err := st.db.Apply(b, nil); err != nil {
			return 0, fmt.Errorf("imgbed: sweeping pending chunks: %w", err)
		}
	}
	return len(todo), nil
}

// chunkReader reads a blob's bytes through a snapshot, one chunk in
// memory at a time; it is the io.ReadSeeker http.ServeContent wants.
type chunkReader struct {
	snap *lsmgo.Snapshot
	s    sum
	meta blobMeta
	off  int64
	idx  int // index of buf's chunk; -1: none
	buf  []byte
}

func newChunkReader(snap *lsmgo.Snapshot, s sum, meta blobMeta) *chunkReader {
	return &chunkReader{snap: snap, s: s, meta: meta, idx: -1}
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.off >= r.meta.Size {
		return 0, io.EOF
	}
	i := int(r.off / int64(r.meta.Chunk))
	if i != r.idx {
		v, err := r.snap.Get(chunkKey(r.s, r.meta.Gen, i))
		if err != nil {
			return 0, fmt.Errorf("imgbed: chunk %d of %v: %w", i, r.s, err)
		}
		want := min(int64(r.meta.Chunk), r.meta.Size-int64(i)*int64(r.meta.Chunk))
		if int64(len(v)) != want {
			return 0, &lsmgo.CorruptionError{File: fmt.Sprintf("image %v chunk %d", r.s, i), Offset: -1,
				Reason: fmt.Sprintf("%d bytes, want %d", len(v), want)}
		}
		r.idx, r.buf = i, v
	}
	n := copy(p, r.buf[r.off-int64(i)*int64(r.meta.Chunk):])
	r.off += int64(n)
	return n, nil
}

func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.meta.Size
	}
	if offset < 0 {
		return r.off, errors.New("imgbed: seek before start")
	}
	r.off = offset
	return offset, nil
}
