package imgbed

import (
	"bytes"
	"cmp"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// The tus 1.0.0 resumable upload protocol (tus.io/protocols/resumable-upload),
// with the creation, creation-with-upload, termination, checksum and
// expiration extensions, on /api/v1/tus/. resumable.go keeps the state.
//
// Implemented here rather than with tusd's handler: tusd keeps an
// upload's bytes in a data store of its own and would hand the finished
// file to the host to be copied again through the spool, its checksum
// extension is missing, and its module graph brings cloud SDKs along. The
// protocol is a handful of headers; what matters is the durability order
// (file fsync, then offset) and the hand-over to the normal upload path,
// which are ours either way.

const (
	tusVersion    = "1.0.0"
	tusExtensions = "creation,creation-with-upload,termination,checksum,expiration"
	tusChecksums  = "sha1,sha256,md5"
	tusChunkType  = "application/offset+octet-stream"
	tusPath       = "/api/v1/tus/"
)

var (
	errTusVersion   = &apiError{http.StatusPreconditionFailed, "bad_request", "Tus-Resumable 1.0.0 required"}
	errTusOffset    = &apiError{http.StatusConflict, "conflict", "Upload-Offset does not match the upload's offset"}
	errTusBadOffset = &apiError{http.StatusBadRequest, "bad_request", "Upload-Offset must be a number of bytes"}
	errTusLength    = &apiError{http.StatusBadRequest, "bad_request", "Upload-Length must be a size in bytes (Upload-Defer-Length is not supported)"}
	errTusMetadata  = &apiError{http.StatusBadRequest, "bad_request", "malformed Upload-Metadata"}
	errTusChunkType = &apiError{http.StatusUnsupportedMediaType, "type", "send chunks as " + tusChunkType}
	errTusChecksum  = &apiError{http.StatusBadRequest, "bad_request", "Upload-Checksum must be sha1, sha256 or md5 and a base64 digest"}
	errChecksum     = &apiError{460, "checksum", "checksum mismatch: the chunk was discarded"}
	errTusGone      = &apiError{http.StatusGone, "gone", "the upload's bytes were refused"}
	errTusUnfinish  = &apiError{http.StatusConflict, "conflict", "the upload is not complete"}
)

// tusUploadWait bounds the wait of a request for the one before it on the
// same upload; then it gets 423, which tus clients retry.
const tusUploadWait = 3 * time.Second

// tus wraps a protocol handler: every answer says the protocol version,
// and a request without the version the host speaks gets 412. A nil fn
// takes the handler from X-HTTP-Method-Override.
func (h *Host) tus(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Tus-Resumable", tusVersion)
		if fn == nil {
			// POST on an upload: for clients whose environment sends
			// only GET and POST, the method is in a header.
			r.Method = strings.ToUpper(r.Header.Get("X-HTTP-Method-Override"))
			fn = map[string]http.HandlerFunc{"PATCH": h.serveTusPatch, "DELETE": h.serveTusDelete, "HEAD": h.serveTusHead}[r.Method]
			if fn == nil {
				h.fail(w, errMethod)
				return
			}
		}
		if r.Header.Get("Tus-Resumable") != tusVersion {
			w.Header().Set("Tus-Version", tusVersion)
			h.fail(w, errTusVersion)
			return
		}
		fn(w, r)
	}
}

// serveTusOptions tells clients what the host supports; it needs no
// version header (tus: discovery).
func (h *Host) serveTusOptions(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Tus-Resumable", tusVersion)
	w.Header().Set("Tus-Version", tusVersion)
	w.Header().Set("Tus-Extension", tusExtensions)
	w.Header().Set("Tus-Max-Size", strconv.FormatInt(h.cfg.ResumableMaxBytes, 10))
	w.Header().Set("Tus-Checksum-Algorithm", tusChecksums)
	w.WriteHeader(http.StatusNoContent)
}

// serveTusCreate starts an upload (creation), with its first bytes when
// the body carries them (creation-with-upload). Who may create one, and
// how many, is decided as for a normal upload: token or anonymous rules,
// rate limit, album ownership; the quota is checked against the declared
// length at once, and again when the image is stored.
func (h *Host) serveTusCreate(w http.ResponseWriter, r *http.Request) {
	tok, err := h.identify(r)
	if err == nil && tok == nil && !h.anonymousAllowed(r) {
		err = errTokenRequired
	}
	var u *resumable
	if err == nil {
		u, err = h.newResumable(r, tok)
	}
	if err == nil {
		client, limiter := uploadClient(r, tok, h)
		if ok, wait := limiter.allow(client, h.now()); !ok {
			setRetryAfter(w, wait)
			err = errRateLimited
		}
	}
	if err == nil {
		var wait time.Duration
		if wait, err = h.createResumable(u); err == errTooManyOpen {
			setRetryAfter(w, wait)
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	h.maybeSweepResumables()
	w.Header().Set("Location", h.baseURL(r)+tusPath+u.ID)
	if r.Header.Get("Content-Type") == tusChunkType {
		if unlock, err := h.resumables.lock(r.Context(), u.ID, tusUploadWait); err == nil {
			defer unlock()
			if err := h.receive(w, r, u, tok); err != nil {
				// The upload exists: the client resumes it from the offset.
				w.Header().Set("Upload-Offset", strconv.FormatInt(u.Offset, 10))
				h.fail(w, err)
				return
			}
		}
	}
	h.tusHeaders(w, u)
	w.WriteHeader(http.StatusCreated)
}

// newResumable reads a creation request into the state of a new upload.
func (h *Host) newResumable(r *http.Request, tok *Token) (*resumable, error) {
	if r.Header.Get("Upload-Defer-Length") != "" {
		return nil, errTusLength
	}
	length, err := strconv.ParseInt(r.Header.Get("Upload-Length"), 10, 64)
	if err != nil || length < 0 {
		return nil, errTusLength
	}
	if length > h.cfg.ResumableMaxBytes {
		return nil, errTooLarge
	}
	opts, err := requestOptions(r)
	if err != nil {
		return nil, err
	}
	meta, err := parseTusMetadata(r.Header.Get("Upload-Metadata"))
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"expiration", "max_views", "album_id"} {
		if err := opts.set(name, meta[name]); err != nil {
			return nil, err
		}
	}
	client, _ := uploadClient(r, tok, h)
	u := &resumable{V: recordVersion, ID: randomString(resumableIDLen), Length: length, Client: client,
		Metadata: r.Header.Get("Upload-Metadata"), Name: cmp.Or(meta["filename"], meta["name"]),
		ExpiresIn: int64(opts.expiresIn), MaxViews: opts.maxViews, Album: opts.albumID}
	if opts.albumID != "" {
		if err := h.mayAddTo(opts.albumID, tok); err != nil {
			return nil, err
		}
	}
	if tok != nil {
		u.Owner = tok.Name
		usage, err := h.st.usage(tok.Name)
		if err != nil {
			return nil, err
		}
		if tok.QuotaBytes > 0 && usage.Bytes+length > tok.QuotaBytes || tok.QuotaCount > 0 && usage.Count+1 > tok.QuotaCount {
			return nil, errQuota
		}
	}
	return u, nil
}

// parseTusMetadata reads "key base64,key base64,key" pairs.
func parseTusMetadata(v string) (map[string]string, error) {
	out := make(map[string]string)
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for pair := range strings.SplitSeq(v, ",") {
		k, b64, _ := strings.Cut(strings.TrimSpace(pair), " ")
		val, err := base64.StdEncoding.DecodeString(b64)
		if k == "" || err != nil {
			return nil, errTusMetadata
		}
		out[k] = string(val)
	}
	return out, nil
}

// uploadClient is who a rate limit and upload slots count an upload
// against: the token, else the address.
func uploadClient(r *http.Request, tok *Token, h *Host) (string, *rateLimiter) {
	if tok != nil {
		return "token:" + tok.Name, h.tokenLimiter
	}
	return "ip:" + clientIP(r), h.limiter
}

// serveTusHead answers where an upload stands, so a client resumes from
// there.
func (h *Host) serveTusHead(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	u, err := h.tusUpload(r)
	switch {
	case err != nil:
	case u.Status != 0:
		err = errTusGone
	case !u.settled():
		// A state whose file is gone (replicated from a primary, or
		// restored from a backup) is no upload to resume.
		if _, serr := os.Stat(h.resumables.path(u.ID)); serr != nil {
			err = errNotFound
		}
	}
	if err != nil {
		w.WriteHeader(toAPIError(err).status)
		return
	}
	h.tusHeaders(w, u)
	w.WriteHeader(http.StatusOK)
}

func (h *Host) tusUpload(r *http.Request) (*resumable, error) {
	tok, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	return h.loadResumable(r.PathValue("id"), tok)
}

// tusHeaders describes u in an answer.
func (h *Host) tusHeaders(w http.ResponseWriter, u *resumable) {
	w.Header().Set("Upload-Offset", strconv.FormatInt(u.Offset, 10))
	w.Header().Set("Upload-Length", strconv.FormatInt(u.Length, 10))
	if u.Metadata != "" {
		w.Header().Set("Upload-Metadata", u.Metadata)
	}
	if u.Offset < u.Length {
		w.Header().Set("Upload-Expires", time.Unix(0, u.Expires).UTC().Format(http.TimeFormat))
	}
}

// serveTusPatch appends a chunk at the offset the client names. The 204
// comes only once the chunk is fsynced and its offset committed; the one
// that completes the upload comes once the image is stored too, and
// carries its link in X-Image-URL.
func (h *Host) serveTusPatch(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") != tusChunkType {
		h.fail(w, errTusChunkType)
		return
	}
	u, tok, unlock, err := h.lockedUpload(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	defer unlock()
	if u.Status != 0 {
		err = errTusGone
	} else {
		err = h.receive(w, r, u, tok)
	}
	if err != nil {
		w.Header().Set("Upload-Offset", strconv.FormatInt(u.Offset, 10))
		h.fail(w, err)
		return
	}
	h.tusHeaders(w, u)
	if u.Image != "" {
		w.Header().Set("X-Image-URL", h.baseURL(r)+"/i/"+u.Image+"."+u.Ext)
	}
	w.WriteHeader(http.StatusNoContent)
}

// lockedUpload identifies the caller of r, waits for the upload r names
// to be free and loads it; the caller calls unlock when done.
func (h *Host) lockedUpload(r *http.Request) (u *resumable, tok *Token, unlock func(), err error) {
	if tok, err = h.identify(r); err != nil {
		return nil, nil, nil, err
	}
	if unlock, err = h.resumables.lock(r.Context(), r.PathValue("id"), tusUploadWait); err != nil {
		return nil, nil, nil, err
	}
	if u, err = h.loadResumable(r.PathValue("id"), tok); err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return u, tok, unlock, nil
}

// receive writes the body of r (holding u's lock) at its Upload-Offset,
// and stores the image once the last byte is in.
func (h *Host) receive(w http.ResponseWriter, r *http.Request, u *resumable, tok *Token) error {
	start := time.Now()
	if r.Method != http.MethodPost { // creation-with-upload starts at 0
		off, err := strconv.ParseInt(r.Header.Get("Upload-Offset"), 10, 64)
		switch {
		case err != nil:
			return errTusBadOffset
		case off != u.Offset:
			return errTusOffset
		}
	}
	sum, err := parseChecksum(r.Header.Get("Upload-Checksum"))
	if err != nil {
		return err
	}
	if r.ContentLength > u.Length-u.Offset || u.settled() && r.ContentLength != 0 {
		return errTooLarge
	}
	if u.settled() { // a retry of the last PATCH, whose answer was lost
		return nil
	}
	client, _ := uploadClient(r, tok, h)
	if err := h.uploads.acquire(r.Context(), client, h.cfg.UploadQueueWait); err != nil {
		setRetryAfter(w, h.cfg.UploadQueueWait)
		return errBusy
	}
	defer h.uploads.release(client)
	f, err := openResumable(h, u)
	if err != nil {
		return err
	}
	defer f.Close()
	err = h.writeResumable(f, u, newDeadlineReader(w, r, &h.cfg, start), u.Length-u.Offset, sum)
	if errors.Is(err, errUnsupported) {
		h.removeResumable(u)
	}
	if err != nil {
		return err
	}
	if u.Offset == u.Length && !u.settled() {
		return h.finishResumable(r.Context(), u, tok)
	}
	return nil
}

// openResumable opens u's file for writing; a file that is gone (the
// sweep took it after the state expired meanwhile) ends the upload.
func openResumable(h *Host, u *resumable) (*os.File, error) {
	f, err := os.OpenFile(h.resumables.path(u.ID), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		h.removeResumable(u)
		return nil, errNotFound
	}
	return f, err
}

// serveTusDelete ends an upload (termination); an image it became stays.
func (h *Host) serveTusDelete(w http.ResponseWriter, r *http.Request) {
	u, _, unlock, err := h.lockedUpload(r)
	if err == nil {
		defer unlock()
		err = h.removeResumable(u)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveTusResult answers GET on an upload URL, outside the protocol: the
// upload envelope of the image the upload became, or its refusal. An
// upload whose image could not be stored for a passing reason is stored
// now; one still missing bytes is 409.
func (h *Host) serveTusResult(w http.ResponseWriter, r *http.Request) {
	u, tok, unlock, err := h.lockedUpload(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	defer unlock()
	switch {
	case u.Status != 0:
		err = &apiError{u.Status, "refused", u.Message}
	case u.Offset < u.Length:
		err = errTusUnfinish
	case u.Image == "":
		err = h.finishResumable(r.Context(), u, tok)
	}
	var rec *record
	if err == nil {
		rec, err = h.st.record(u.Image)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	h.respondUpload(w, r, []uploaded{{rec: rec, deleteToken: u.DeleteToken, dup: u.Dup}})
}

// checksum is the digest a client sent for a chunk, and the hash
// computing the chunk's own.
type checksum struct {
	h    hash.Hash
	want []byte
}

func (c *checksum) matches() bool { return bytes.Equal(c.h.Sum(nil), c.want) }

// parseChecksum reads Upload-Checksum ("sha1 BASE64"); nil without one.
func parseChecksum(v string) (*checksum, error) {
	if v == "" {
		return nil, nil
	}
	algo, b64, _ := strings.Cut(v, " ")
	newHash := map[string]func() hash.Hash{"sha1": sha1.New, "sha256": sha256.New, "md5": md5.New}[algo]
	want, err := base64.StdEncoding.DecodeString(b64)
	if newHash == nil || err != nil {
		return nil, errTusChecksum
	}
	c := &checksum{h: newHash(), want: want}
	if len(want) != c.h.Size() {
		return nil, errTusChecksum
	}
	return c, nil
}
