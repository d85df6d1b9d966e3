package imgbed

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Resumable uploads (tus.go speaks the protocol). The bytes of an upload
// in progress go to a file of its own in the resumable directory, written
// at the offset the client names and fsynced before the offset that
// covers them is committed to the engine ("iU" id, a resumable record);
// a PATCH is acknowledged only after both. So after a crash the engine's
// offset never names a byte the file lost: bytes past it (written but not
// acknowledged) are overwritten when the client resumes from it.
//
// Only once the last byte is in does the file become an image, through
// the same checks and store as any upload (storeSpooled), read in place
// (adoptSpool): nothing of an unfinished upload is visible as an image.
// An upload whose image could not be stored for a passing reason (the
// storage is read-only or S3 is down) keeps its file, and its image is
// stored again when the client asks for it (GET on the upload URL).

// resumableFilePrefix starts the name of every upload file, so sweeps
// touch nothing else in the directory.
const resumableFilePrefix = "tus-"

// resumableIDLen makes upload URLs as unguessable as delete tokens: the
// URL is all an anonymous client needs to write to or read the upload.
const resumableIDLen = 22

// resumable is the state of one upload, kept under resumableKey with the
// engine expiry Expires, so an abandoned upload's state vanishes by
// itself (its file goes with the next sweep).
type resumable struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Length   int64  `json:"length"`
	Offset   int64  `json:"offset"`
	Metadata string `json:"metadata,omitempty"` // Upload-Metadata as sent, returned by HEAD
	Name     string `json:"name,omitempty"`
	Owner    string `json:"owner,omitempty"` // token name; "" anonymous
	// Client is who the upload counts against among open uploads
	// (uploadClient); "" in states written before the limit.
	Client string `json:"client,omitempty"`
	// The options of the image (uploadOptions).
	ExpiresIn int64  `json:"expires_in,omitempty"` // nanoseconds
	MaxViews  int64  `json:"max_views,omitempty"`
	Album     string `json:"album,omitempty"`
	Expires   int64  `json:"expires"` // Unix nanoseconds
	// Once the bytes are all in: the stored image, with its delete token
	// (shown to whoever holds the upload URL until the state expires), or
	// the refusal of the bytes.
	Image       string `json:"image,omitempty"`
	Ext         string `json:"ext,omitempty"`
	DeleteToken string `json:"delete_token,omitempty"`
	Dup         bool   `json:"dup,omitempty"`
	Status      int    `json:"status,omitempty"`
	Message     string `json:"message,omitempty"`
}

func resumableKey(id string) []byte { return key(kindResumable, []byte(id)) }

// openKey indexes an unfinished upload under its client, with the
// upload's length and expiry as the value and the expiry as the engine's,
// so the client's open uploads are one short range and vanish with their
// states.
func openKey(client, id string) []byte {
	return key(kindOpen, []byte(client), []byte{0}, []byte(id))
}

func (u *resumable) options() uploadOptions {
	return uploadOptions{expiresIn: time.Duration(u.ExpiresIn), maxViews: u.MaxViews, albumID: u.Album}
}

// settled reports whether the upload's bytes have become an image or
// been refused: nothing more is written to it.
func (u *resumable) settled() bool { return u.Image != "" || u.Status != 0 }

// resumables keeps the uploads' files and serializes the requests of
// each upload.
type resumables struct {
	dir string

	mu   sync.Mutex
	busy map[string]chan struct{} // closed when the upload's holder is done
	// lastSweep rate-limits the sweeps creations trigger.
	lastSweep time.Time
	sweeping  bool
}

func newResumables(dir string) (*resumables, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &resumables{dir: dir, busy: make(map[string]chan struct{})}, nil
}

func (rs *resumables) path(id string) string {
	return filepath.Join(rs.dir, resumableFilePrefix+id)
}

// errUploadBusy is a request for an upload another request is writing;
// tus clients retry a 423.
var errUploadBusy = &apiError{http.StatusLocked, "busy", "another request is writing this upload, retry later"}

// lock makes the caller the only request working on upload id, waiting
// at most wait for the one before it (a client that reconnects while its
// old request still reads the dead connection).
func (rs *resumables) lock(ctx context.Context, id string, wait time.Duration) (unlock func(), err error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		rs.mu.Lock()
		held, ok := rs.busy[id]
		if !ok {
			done := make(chan struct{})
			rs.busy[id] = done
			rs.mu.Unlock()
			return func() {
				rs.mu.Lock()
				delete(rs.busy, id)
				rs.mu.Unlock()
				close(done)
			}, nil
		}
		rs.mu.Unlock()
		select {
		case <-held:
		case <-timer.C:
			return nil, errUploadBusy
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// load reads the state of upload id; tok must be its owner's (or an
// admin's), and anyone else is told it does not exist.
func (h *Host) loadResumable(id string, tok *Token) (*resumable, error) {
	if len(id) != resumableIDLen || !validChars(id) {
		return nil, errNotFound
	}
	var u resumable
	if err := getJSON(h.st.db, resumableKey(id), &u, "resumable upload"); err != nil {
		return nil, err
	}
	if u.Owner != "" && (tok == nil || tok.Name != u.Owner && !tok.Admin) {
		return nil, errNotFound
	}
	return &u, nil
}

// save commits u with its expiry pushed ResumableExpiry past now: an
// upload a client keeps writing to never expires under it.
func (h *Host) saveResumable(u *resumable) error {
	b := h.st.db.NewBatch()
	h.putResumable(b, u)
	return h.st.db.Apply(b, nil)
}

// putResumable adds u to b as saveResumable commits it, with its entry
// among its client's open uploads while it is unfinished.
func (h *Host) putResumable(b *lsmgo.Batch, u *resumable) {
	u.Expires = h.now().Add(h.cfg.ResumableExpiry).Truncate(time.Millisecond).UnixNano()
	exp := time.Unix(0, u.Expires)
	b.SetWithExpiry(resumableKey(u.ID), encode(u), exp)
	if u.Client == "" {
		return
	}
	if u.settled() {
		b.Delete(openKey(u.Client, u.ID))
		return
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(u.Length))
	b.SetWithExpiry(openKey(u.Client, u.ID), binary.BigEndian.AppendUint64(v, uint64(u.Expires)), exp)
}

// errTooManyOpen is a creation over its client's open upload limits.
var errTooManyOpen = &apiError{http.StatusTooManyRequests, "rate_limited",
	"too many unfinished resumable uploads: finish or terminate (DELETE) one first"}

// mayOpen checks that u.Client may open one more upload of u.Length
// bytes; when it may not, it also returns how long until its oldest open
// upload expires if left alone (Retry-After). The caller holds the
// client's stripe, so the answer holds until it commits.
func (h *Host) mayOpen(u *resumable) (time.Duration, error) {
	maxN, maxBytes := h.cfg.ResumablePerClient, h.cfg.ResumableBytesPerClient
	if maxN < 0 && maxBytes < 0 {
		return 0, nil
	}
	lo, hi := span(openKey(u.Client, ""))
	it, err := h.st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	n, bytes, first := 0, u.Length, int64(math.MaxInt64)
	for ok := it.First(); ok; ok = it.Next() {
		if v := it.Value(); len(v) == 16 {
			n++
			bytes += int64(binary.BigEndian.Uint64(v))
			first = min(first, int64(binary.BigEndian.Uint64(v[8:])))
		}
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if maxN >= 0 && n >= maxN || maxBytes >= 0 && n > 0 && bytes > maxBytes {
		return max(time.Second, time.Unix(0, first).Sub(h.now())), errTooManyOpen
	}
	return 0, nil
}

// createResumable makes the file of u and then its state: a crash in
// between leaves a file without state, which the sweep removes. An upload
// over its client's limits of open uploads is refused first, with how
// long to wait.
func (h *Host) createResumable(u *resumable) (retryAfter time.Duration, err error) {
	defer h.st.locks.lock("w" + u.Client)()
	if retryAfter, err := h.mayOpen(u); err != nil {
		return retryAfter, err
	}
	f, err := os.OpenFile(h.resumables.path(u.ID), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	err = f.Close()
	if err == nil {
		err = vfs.SyncDir(vfs.Default, h.resumables.dir)
	}
	if err == nil {
		err = h.saveResumable(u)
	}
	if err != nil {
		os.Remove(h.resumables.path(u.ID))
	}
	return 0, err
}

// removeResumable deletes u's state and then its file.
func (h *Host) removeResumable(u *resumable) error {
	b := h.st.db.NewBatch()
	b.Delete(resumableKey(u.ID))
	if u.Client != "" {
		b.Delete(openKey(u.Client, u.ID))
	}
	if err := h.st.db.Apply(b, nil); err != nil {
		return err
	}
	if err := os.Remove(h.resumables.path(u.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// writeResumable writes body to u's file from u.Offset, at most max
// bytes, through sum when the client sent a checksum (nil: none). Without
// a checksum, what arrived is kept even when the body breaks off, and a
// long body is made durable and committed every checkpointBytes, so a
// crash or a dropped connection costs the client little; with one,
// nothing of the body is kept unless all of it arrived and matches.
func (h *Host) writeResumable(f *os.File, u *resumable, body io.Reader, max int64, sum *checksum) error {
	cp := copyPool.Get().(*[]byte)
	defer copyPool.Put(cp)
	var pending int64 // written, not yet committed
	commit := func() error {
		if pending == 0 {
			return nil
		}
		if err := f.Sync(); err != nil {
			return err
		}
		u.Offset += pending
		if err := h.saveResumable(u); err != nil {
			u.Offset -= pending // the answer reports what is committed
			return err
		}
		pending = 0
		return nil
	}
	// The first bytes are sniffed as soon as they are in, so an upload
	// that is no image is refused (errUnsupported) before it takes a
	// gigabyte of disk.
	sniffAt := min(u.Length, sniffLen)
	sniffed := u.Offset >= sniffAt
	for {
		n, err := body.Read(*cp)
		if n > 0 {
			if pending+int64(n) > max {
				return errTooLarge
			}
			if _, werr := f.WriteAt((*cp)[:n], u.Offset+pending); werr != nil {
				return werr
			}
			if sum != nil {
				sum.h.Write((*cp)[:n])
			}
			pending += int64(n)
			if !sniffed && u.Offset+pending >= sniffAt {
				sniffed = true
				if err := sniffFile(f, sniffAt); err != nil {
					return err
				}
			}
			if sum == nil && pending >= checkpointBytes {
				if cerr := commit(); cerr != nil {
					return cerr
				}
			}
		}
		switch {
		case err == io.EOF && sum != nil && !sum.matches():
			return errChecksum
		case err == io.EOF:
			return commit()
		case err != nil && sum == nil:
			if cerr := commit(); cerr != nil {
				return cerr
			}
			return badBody(err)
		case err != nil:
			return badBody(err)
		}
	}
}

// checkpointBytes is how much of a long PATCH body may be lost to a crash
// before it ends: every 64 MiB costs one fsync and one commit.
const checkpointBytes = 64 << 20

// sniffFile refuses (errUnsupported) a file whose first n bytes are no
// image.
func sniffFile(f *os.File, n int64) error {
	head := make([]byte, n)
	if _, err := f.ReadAt(head, 0); err != nil {
		return err
	}
	if sniff(head) == formatNone {
		return errUnsupported
	}
	return nil
}

// finishResumable stores the image of u, whose bytes are all in, and
// records the outcome in u. The image and the outcome are committed in
// one batch, so a crash leaves either both or neither, and finishing again
// never stores the image twice. A refusal of the bytes is final and
// removes the file; a passing failure (5xx) keeps both for the next try.
func (h *Host) finishResumable(ctx context.Context, u *resumable, tok *Token) error {
	f, err := os.OpenFile(h.resumables.path(u.ID), os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			h.removeResumable(u)
			return errNotFound
		}
		return err
	}
	res := func() uploaded {
		defer f.Close()
		sp, err := adoptSpool(f, u.Length, h.cfg.ResumableMaxBytes, !h.cfg.KeepGPS)
		if err != nil {
			return uploaded{err: err}
		}
		defer sp.close()
		opts := u.options()
		opts.commitWith = func(b *lsmgo.Batch, done uploaded) {
			settled := *u
			settled.Image, settled.Ext, settled.DeleteToken, settled.Dup = done.rec.ID, done.rec.Ext, done.deleteToken, done.dup
			h.putResumable(b, &settled)
		}
		res := h.storeSpooled(ctx, sp, u.Name, tok, opts)
		if hook := finishHook.Load(); res.err == nil && hook != nil {
			(*hook)()
		}
		return res
	}()
	switch {
	case res.err == nil:
		u.Image, u.Ext, u.DeleteToken, u.Dup = res.rec.ID, res.rec.Ext, res.deleteToken, res.dup
	case toAPIError(res.err).status >= 500:
		return res.err
	default:
		ae := toAPIError(res.err)
		u.Status, u.Message = ae.status, ae.msg
		if err := h.saveResumable(u); err != nil {
			return err
		}
	}
	os.Remove(h.resumables.path(u.ID))
	return res.err
}

// finishHook, when set by a test, runs once a finishing upload's image
// is stored: a crash there must not store it twice.
var finishHook atomic.Pointer[func()]

// adoptSpool makes a spool of the size bytes of f, a finished upload,
// without copying them: the head is read into memory (where the JPEG GPS
// strip rewrites it) and the rest is read, and rewritten by the other GPS
// strips, in f itself, which stays open for the caller to close.
func adoptSpool(f *os.File, size, max int64, stripGPS bool) (*spool, error) {
	s := newSpool("")
	buf := *s.headP
	n, err := f.ReadAt(buf[:min(int64(len(buf)), size)], 0)
	if err != nil && !(err == io.EOF && int64(n) == size) {
		s.close()
		return nil, err
	}
	if err := s.takeHead(buf[:n], size, max, stripGPS); err != nil {
		s.close()
		return nil, err
	}
	if size > int64(n) {
		s.f, s.base, s.keep = f, int64(n), true
		if _, err := io.Copy(s.hashes(), io.NewSectionReader(f, s.base, size-s.base)); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// sweepResumables removes the files no upload state names: their upload
// expired, was terminated, or a crash came between file and state. Files
// younger than minAge are left: while requests run, one may be a file
// just made whose state is not committed yet (createResumable). It never
// writes to the DB, whose upload states may be a primary's, replicated,
// with files elsewhere: a state whose file is gone is ended when a
// request finds it so (openResumable), or expires.
func (h *Host) sweepResumables(minAge time.Duration) error {
	entries, err := os.ReadDir(h.resumables.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.Name(), resumableFilePrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < minAge {
			continue
		}
		if _, err := h.st.db.Get(resumableKey(id)); errors.Is(err, lsmgo.ErrNotFound) {
			if err := os.Remove(filepath.Join(h.resumables.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		} else if err != nil {
			return err
		}
	}
	return nil
}

// maybeSweepResumables sweeps in the background at most once per
// ResumableExpiry, so the files of abandoned uploads go without a timer
// goroutine; New sweeps at start.
func (h *Host) maybeSweepResumables() {
	rs := h.resumables
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.sweeping || h.now().Sub(rs.lastSweep) < h.cfg.ResumableExpiry {
		return
	}
	rs.sweeping, rs.lastSweep = true, h.now()
	go func() {
		h.sweepResumables(time.Minute)
		rs.mu.Lock()
		rs.sweeping = false
		rs.mu.Unlock()
	}()
}

// checkResumable reports an upload state that breaks the invariants
// above: an unfinished upload's file holds every byte its offset covers,
// and the offset never passes the length.
func (h *Host) checkResumable(v []byte, bad func(string, ...any)) {
	var u resumable
	if err := decode(v, &u, "resumable upload"); err != nil {
		bad("%v", err)
		return
	}
	if u.Offset < 0 || u.Offset > u.Length {
		bad("resumable upload %s: offset %d of %d", u.ID, u.Offset, u.Length)
	}
	if u.settled() {
		return
	}
	switch info, err := os.Stat(h.resumables.path(u.ID)); {
	case err != nil:
		bad("resumable upload %s: %v", u.ID, err)
	case info.Size() < u.Offset:
		bad("resumable upload %s: its file has %d bytes, its offset is %d", u.ID, info.Size(), u.Offset)
	}
}
