package imgbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/httpfront"
)

// blobStore holds the bytes of blobs, originals and thumbnails alike; the
// metadata that names them (blobMeta, records, reference counts, pending
// markers) always stays in the DB, in package store. A blob's bytes are
// named by its content hash and a random generation, so the bytes of a
// blob being deleted and those of a new upload of the same content never
// share a name, in the DB or in a bucket.
//
// The store calls put only after it has written a pending marker for the
// generation, and makes the bytes visible (metadata naming the
// generation) only after put has returned: a failed or interrupted put
// leaves bytes no metadata names, which the marker lets remove reclaim.
type blobStore interface {
	// kind is recorded in blobMeta.Store and in pending markers, so a
	// blob is always read from and deleted in the store that holds it,
	// whatever the host's configuration is now. The DB's own store is "".
	kind() string
	// put stores the size bytes of r as generation g of s. mime is the
	// type that direct downloads from the store are labelled with.
	put(ctx context.Context, s sum, g gen, r io.Reader, size int64, mime string) error
	// open returns the bytes of the blob m describes, to read and seek in
	// (a seek to an offset reads from there: a Range request). It fails
	// with errNotFound when they are gone, before any byte is read.
	open(ctx context.Context, s sum, m *blobMeta) (io.ReadSeekCloser, error)
	// remove deletes the bytes of generation g of s; bytes that are gone
	// already are no error.
	remove(ctx context.Context, s sum, g gen) error
	// stat returns how many bytes generation g of s holds (errNotFound
	// when none).
	stat(ctx context.Context, s sum, g gen) (int64, error)
}

// errUnavailable is a blob store that could not be reached: the client
// may try again later.
var errUnavailable = &apiError{http.StatusServiceUnavailable, "storage_unavailable", "image storage is unavailable, try again later"}

// unavailable marks an error of a remote blob store as errUnavailable for
// the client, keeping the cause for logs and tests.
func unavailable(err error) error {
	if err == nil || errors.Is(err, errNotFound) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}

// dbBlobs keeps blobs in the DB itself, cut into chunks of at most chunk
// bytes ("iC" keys, doc.go). A blob of at most batch bytes is written in
// the batch that commits its metadata (chunksInto); a larger one is
// staged first (put).
type dbBlobs struct {
	db    *lsmgo.DB
	chunk int
	batch int // batchBytes; tests lower it to reach the staged path
	bufs  sync.Pool
}

func (*dbBlobs) kind() string { return "" }

// put writes the chunks one Set each, from one reused buffer. These
// chunks need no atomicity (the pending marker covers them until
// metadata names them), and a Set hands a value the engine separates
// straight from the caller's slice, where a Batch copies it first: the
// copy and the zeroing of its allocation were a fifth of a 4 MB upload's
// CPU.
func (d *dbBlobs) put(_ context.Context, s sum, g gen, r io.Reader, size int64, _ string) error {
	bp, _ := d.bufs.Get().(*[]byte)
	if bp == nil || len(*bp) != d.chunk {
		b := make([]byte, d.chunk)
		bp = &b
	}
	defer d.bufs.Put(bp)
	for i, written := 0, int64(0); written < size; i++ {
		n := min(int64(d.chunk), size-written)
		if _, err := io.ReadFull(r, (*bp)[:n]); err != nil {
			return err
		}
		if err := d.db.Set(chunkKey(s, g, i), (*bp)[:n], nil); err != nil {
			return err
		}
		written += n
	}
	return nil
}

// chunksInto adds the chunks of data to b: a blob small enough for one
// batch is committed with its metadata, in one write. The batch refers to
// data's bytes (lsmgo.Batch.SetNoCopy) until it is applied.
func (d *dbBlobs) chunksInto(b *lsmgo.Batch, s sum, g gen, data []byte) {
	for i := 0; len(data) > 0; i++ {
		n := min(d.chunk, len(data))
		b.SetNoCopy(chunkKey(s, g, i), data[:n])
		data = data[n:]
	}
}

// open returns a reader of the blob's chunks in place (chunkReader). A
// one-chunk blob (most images and every thumbnail) has its chunk opened
// at once, straight from the DB: the engine then keeps its bytes until
// the reader closes, and a delete racing with it makes it not found
// before any header is sent. A larger blob is read through a snapshot in
// which its generation is not pending (being deleted) and its first
// chunk exists; deletion marks the generation pending in the batch that
// removes the metadata and unmarks it after the last chunk is gone, so
// such a snapshot holds every chunk, and a racing delete never truncates
// it. Snapshots take the engine's lock, which the common case thus
// avoids.
func (d *dbBlobs) open(_ context.Context, s sum, m *blobMeta) (io.ReadSeekCloser, error) {
	r := &chunkReader{src: d.db, s: s, meta: *m, idx: -1}
	if m.chunks() <= 1 {
		if m.Size > 0 {
			if _, err := r.chunk(0); err != nil {
				return nil, missing(err)
			}
		}
		return r, nil
	}
	snap := d.db.NewSnapshot()
	_, err := snap.Get(pendingKey(s, m.Gen))
	if err == nil {
		err = errNotFound
	} else if errors.Is(err, lsmgo.ErrNotFound) {
		r.src, r.snap = snap, snap
		_, err = r.chunk(0)
	}
	if err != nil {
		r.release()
		snap.Close()
		return nil, missing(err)
	}
	return r, nil
}

// remove deletes the chunks of s, g in batches of at most 1000, finding
// them by their prefix: it needs no metadata, which is gone by then.
func (d *dbBlobs) remove(_ context.Context, s sum, g gen) error {
	lo, hi := span(key(kindChunk, s[:], g[:]))
	it, err := d.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	b := d.db.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		b.Delete(it.Key())
		if b.Count() >= 1000 {
			if err := d.db.Apply(b, nil); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if b.Count() == 0 {
		return nil
	}
	return d.db.Apply(b, nil)
}

func (d *dbBlobs) stat(_ context.Context, s sum, g gen) (int64, error) {
	lo, hi := span(key(kindChunk, s[:], g[:]))
	it, err := d.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	var size int64
	found := false
	for ok := it.First(); ok; ok = it.Next() {
		size += int64(len(it.Value()))
		found = true
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if !found {
		return 0, errNotFound
	}
	return size, nil
}

// chunkReader reads a blob's chunks where the engine keeps them
// (lsmgo.ValueReader), one chunk open at a time, through src: the DB for a
// one-chunk blob, else a snapshot, which Close closes. It is the
// io.ReadSeeker http.ServeContent wants, and its sendTo lets the kernel
// send the chunks (serveBlob).
type chunkReader struct {
	src interface {
		OpenValue([]byte) (*lsmgo.ValueReader, error)
	}
	snap *lsmgo.Snapshot // nil when src is the DB
	s    sum
	meta blobMeta
	off  int64
	idx  int // index of cur's chunk; -1: none
	cur  *lsmgo.ValueReader
}

// chunk returns chunk i, open.
func (r *chunkReader) chunk(i int) (*lsmgo.ValueReader, error) {
	if i == r.idx {
		return r.cur, nil
	}
	r.release()
	v, err := r.src.OpenValue(chunkKey(r.s, r.meta.Gen, i))
	if err != nil {
		return nil, fmt.Errorf("imgbed: chunk %d of %v: %w", i, r.s, err)
	}
	if want := min(int64(r.meta.Chunk), r.meta.Size-int64(i)*int64(r.meta.Chunk)); v.Size() != want {
		v.Close()
		return nil, &lsmgo.CorruptionError{File: fmt.Sprintf("image %v chunk %d", r.s, i), Offset: -1,
			Reason: fmt.Sprintf("%d bytes, want %d", v.Size(), want)}
	}
	r.idx, r.cur = i, v
	return v, nil
}

// at returns the chunk holding the reader's offset and the offset in it.
func (r *chunkReader) at() (*lsmgo.ValueReader, int64, error) {
	i := int(r.off / int64(r.meta.Chunk))
	v, err := r.chunk(i)
	return v, r.off - int64(i)*int64(r.meta.Chunk), err
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.off >= r.meta.Size {
		return 0, io.EOF
	}
	v, within, err := r.at()
	if err != nil {
		return 0, err
	}
	n, err := v.ReadAt(p[:min(int64(len(p)), v.Size()-within)], within)
	r.off += int64(n)
	if err == io.EOF {
		err = nil // the chunk's end, not the blob's
	}
	return n, err
}

// sendPiece bounds what one SendTo of sendTo hands the kernel: each
// piece gets its own write deadline (deadlineWriter.ReadFrom), so a
// client must take 256 KiB per WriteIdleTimeout, not the whole blob.
const sendPiece = 256 << 10

// sendTo writes the next n bytes to w. To an httpfront.FileSender (a
// plain GET) each piece goes at its offset in the engine's own
// descriptor of the blob file (lsmgo.ValueReader.Location), one
// sendfile(2) a piece; to any other writer with
// lsmgo.ValueReader.SendTo, which sendfile(2)s them from a descriptor
// of its own, after a seek, when w reaches the connection (heldWriter).
func (r *chunkReader) sendTo(w io.Writer, n int64) (int64, error) {
	fs, _ := w.(httpfront.FileSender)
	var sent int64
	for sent < n {
		if r.off >= r.meta.Size {
			return sent, io.ErrUnexpectedEOF
		}
		v, within, err := r.at()
		if err != nil {
			return sent, err
		}
		piece := min(n-sent, v.Size()-within, sendPiece)
		var m int64
		if fs == nil {
			m, err = v.SendTo(w, within, piece)
		} else {
			m, err = sendAt(fs, v, within, piece)
		}
		sent += m
		r.off += m
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// sendAt sends n bytes of v from off to fs: from the blob file where v
// is separated, else (a value kept in the tree) with v.SendTo.
func sendAt(fs httpfront.FileSender, v *lsmgo.ValueReader, off, n int64) (int64, error) {
	loc, err := v.Location()
	if err != nil {
		return 0, err
	}
	if loc.File == nil {
		return v.SendTo(fs, off, n)
	}
	return fs.SendFile(loc.File, loc.Offset+off, n)
}

func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	return seek(&r.off, r.meta.Size, offset, whence)
}

// release closes the open chunk, if any.
func (r *chunkReader) release() {
	if r.cur != nil {
		r.cur.Close()
		r.idx, r.cur = -1, nil
	}
}

func (r *chunkReader) Close() error {
	r.release()
	if r.snap != nil {
		return r.snap.Close()
	}
	return nil
}

// seek moves *off as io.Seeker does, for a reader of size bytes.
func seek(off *int64, size, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += *off
	case io.SeekEnd:
		offset += size
	}
	if offset < 0 {
		return *off, errors.New("imgbed: seek before start")
	}
	*off = offset
	return offset, nil
}
