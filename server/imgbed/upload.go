package imgbed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"html"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lsmgo-dev/lsmgo"
)

// fileFields are the multipart field names uploader clients use for the
// file: ShareX and most scripts "file", Lsky "file", Chevereto "source",
// PicGo plugins "image", PHP-style forms "images[]".
var fileFields = map[string]bool{"file": true, "image": true, "source": true, "images[]": true}

// maxFormField bounds a non-file multipart field, which is read and
// ignored.
const maxFormField = 64 << 10

var (
	errNoFile      = &apiError{http.StatusBadRequest, "no_file", "no file in the request"}
	errContentType = &apiError{http.StatusUnsupportedMediaType, "type", "send multipart/form-data, image/*, application/octet-stream, or a url"}
	errRateLimited = &apiError{http.StatusTooManyRequests, "rate", "too many uploads, slow down"}
	errTooManyFile = &apiError{http.StatusRequestEntityTooLarge, "too_large", "too many files in one request"}
	errBusy        = &apiError{http.StatusServiceUnavailable, "busy", "all upload slots are busy, retry later"}
)

// uploaded is the outcome of one file of an upload request.
type uploaded struct {
	rec         *record
	deleteToken string
	dup         bool
	err         error
}

func (h *Host) serveUpload(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	tok, err := h.identify(r)
	if err == nil && tok == nil && !h.anonymousAllowed(r) {
		err = errTokenRequired
	}
	var opts uploadOptions
	if err == nil {
		opts, err = requestOptions(r)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	client, limiter := "ip:"+clientIP(r), h.limiter
	if tok != nil {
		client, limiter = "token:"+tok.Name, h.tokenLimiter
	}
	if ok, wait := limiter.allow(client, h.now()); !ok {
		setRetryAfter(w, wait)
		h.fail(w, errRateLimited)
		return
	}
	if err := h.uploads.acquire(r.Context(), client, h.cfg.UploadQueueWait); err != nil {
		// Most clients retry a 503 that says when: a saturated host sheds
		// load at once instead of queueing it for minutes.
		setRetryAfter(w, h.cfg.UploadQueueWait)
		h.fail(w, errBusy)
		return
	}
	defer h.uploads.release(client)
	body := newDeadlineReader(w, r, &h.cfg, start)
	// The per-file limit is enforced while spooling; this bounds the
	// whole request, form fields and multipart framing included.
	limited := http.MaxBytesReader(w, io.NopCloser(body), int64(h.cfg.MaxFilesPerRequest)*(h.cfg.MaxBytes+maxFormField)+maxFormField)
	results, err := h.readUpload(r, limited, tok, opts)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.respondUpload(w, r, results)
	h.metrics.uploadSeconds.Observe(time.Since(start).Seconds())
}

// readUpload stores every file of the request, one at a time. Option
// fields of a multipart body apply to the files after them.
func (h *Host) readUpload(r *http.Request, body io.Reader, tok *Token, opts uploadOptions) ([]uploaded, error) {
	if raw := r.URL.Query().Get("url"); raw != "" {
		return []uploaded{h.ingestURL(r.Context(), raw, tok, opts)}, nil
	}
	ct, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, errContentType
	}
	switch {
	case ct == "application/json":
		raw, err := readJSONUpload(body, &opts)
		if err != nil {
			return nil, err
		}
		return []uploaded{h.ingestURL(r.Context(), raw, tok, opts)}, nil
	case ct == "multipart/form-data":
	case strings.HasPrefix(ct, "image/"), ct == "application/octet-stream":
		return []uploaded{h.ingest(r.Context(), body, r.URL.Query().Get("filename"), tok, opts)}, nil
	default:
		return nil, errContentType
	}
	mr := multipartReader(body, params["boundary"])
	if mr == nil {
		return nil, errContentType
	}
	var out []uploaded
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, badBody(err)
		}
		var field []byte // a form field's value; "url" names an image to fetch
		if !fileFields[part.FormName()] && part.FileName() == "" {
			v, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
			field = v
			switch {
			case err != nil:
				return nil, badBody(err)
			case len(v) > maxFormField:
				return nil, &apiError{http.StatusRequestEntityTooLarge, "too_large", "form field too large"}
			}
			if isOption(part.FormName()) {
				if err := opts.set(part.FormName(), strings.TrimSpace(string(v))); err != nil {
					return nil, err
				}
			}
			if part.FormName() != "url" {
				continue
			}
		}
		if len(out) == h.cfg.MaxFilesPerRequest {
			return nil, errTooManyFile
		}
		var u uploaded
		if part.FormName() == "url" && part.FileName() == "" {
			u = h.ingestURL(r.Context(), strings.TrimSpace(string(field)), tok, opts)
		} else {
			u = h.ingest(r.Context(), part, part.FileName(), tok, opts)
		}
		out = append(out, u)
		if isBodyError(u.err) {
			// The body is unusable from here on; report what we have.
			if len(out) == 1 {
				return nil, u.err
			}
			break
		}
	}
	if len(out) == 0 {
		return nil, errNoFile
	}
	return out, nil
}

// readJSONUpload reads an upload by URL sent as JSON: {"url": "…"} and
// the options (expiration, max_views, album_id) as strings or numbers.
func readJSONUpload(body io.Reader, opts *uploadOptions) (string, error) {
	var in map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(body, maxFormField)).Decode(&in); err != nil {
		return "", &apiError{http.StatusBadRequest, "bad_request", "malformed JSON body"}
	}
	text := func(name string) string {
		var s string
		if json.Unmarshal(in[name], &s) != nil {
			return strings.TrimSpace(string(in[name])) // a number, or nothing
		}
		return s
	}
	for name := range in {
		if isOption(name) {
			if err := opts.set(name, text(name)); err != nil {
				return "", err
			}
		}
	}
	if text("url") == "" {
		return "", errNoFile
	}
	return text("url"), nil
}

// badBody classifies an error reading the request body.
func badBody(err error) error {
	if isBodyError(err) {
		return err
	}
	return &apiError{http.StatusBadRequest, "bad_request", "malformed request body"}
}

// isBodyError reports whether err ends the request body itself, not just
// one file in it.
func isBodyError(err error) bool {
	ae := toAPIError(err)
	return err != nil && (ae.reason == "timeout" || errors.As(err, new(*http.MaxBytesError)))
}

// ingest checks and stores one file.
func (h *Host) ingest(ctx context.Context, r io.Reader, name string, tok *Token, opts uploadOptions) uploaded {
	if opts.albumID != "" {
		// Checked before anything is stored: a file meant for an album
		// it cannot join is refused, not stored outside it.
		if err := h.mayAddTo(opts.albumID, tok); err != nil {
			io.Copy(io.Discard, r)
			return uploaded{err: err}
		}
	}
	sp := newSpool(h.cfg.SpoolDir)
	defer sp.close()
	if opts.md5 {
		sp.wantMD5()
	}
	if err := sp.fill(r, h.cfg.MaxBytes, !h.cfg.KeepGPS); err != nil {
		if errors.Is(err, errTooLarge) {
			// Drain what the per-request limit allows, so the client
			// reads the 413 instead of a reset connection.
			io.Copy(io.Discard, r)
		}
		return uploaded{err: err}
	}
	return h.storeSpooled(ctx, sp, name, tok, opts)
}

// storeSpooled checks the image sp holds, whose head fill or adoptSpool
// took, and stores it: pixel limit, structure, GPS, dedup, quota.
func (h *Host) storeSpooled(ctx context.Context, sp *spool, name string, tok *Token, opts uploadOptions) uploaded {
	cfg, err := decodeConfig(sp.format, sp.reader())
	if err != nil {
		return uploaded{err: err}
	}
	if int64(cfg.Width)*int64(cfg.Height) > h.cfg.MaxPixels {
		return uploaded{err: invalid("image has %d×%d pixels, more than the %d allowed", cfg.Width, cfg.Height, h.cfg.MaxPixels)}
	}
	if err := checkStructure(sp.format, sp.reader()); err != nil {
		return uploaded{err: err}
	}
	if !h.cfg.KeepGPS {
		if err := sp.stripGPS(); err != nil {
			return uploaded{err: err}
		}
	}
	if sp.orient >= 5 { // rotated a quarter turn: report what viewers show
		cfg.Width, cfg.Height = cfg.Height, cfg.Width
	}
	rec := &record{
		V:          recordVersion,
		Sum:        sp.sum(),
		MD5:        sp.md5Hex(),
		OriginName: cleanName(name, sp.format),
		Size:       sp.size,
		Mime:       sp.format.mime(),
		Ext:        sp.format.ext(),
		Width:      cfg.Width,
		Height:     cfg.Height,
		Created:    h.now().UnixNano(),
		MaxViews:   opts.maxViews,
	}
	if opts.expiresIn > 0 {
		// The engine expires keys by the millisecond.
		rec.Expires = h.now().Add(opts.expiresIn).Truncate(time.Millisecond).UnixNano()
	}
	limit := func(usage) error { return nil }
	if tok != nil {
		rec.Owner = tok.Name
		limit = func(u usage) error {
			if tok.QuotaBytes > 0 && u.Bytes+rec.Size > tok.QuotaBytes || tok.QuotaCount > 0 && u.Count+1 > tok.QuotaCount {
				return errQuota
			}
			return nil
		}
	}
	deleteToken := randomString(22)
	rec.DeleteHash = sha256.Sum256([]byte(deleteToken))
	var (
		fresh  *blobMeta
		inline bool // fresh's chunks go into the committing batch
	)
	for attempt := 0; ; attempt++ {
		rec.ID = randomString(idLen)
		var data []byte
		if inline {
			data = sp.whole()
		}
		var also func(*lsmgo.Batch, bool)
		if opts.commitWith != nil {
			also = func(b *lsmgo.Batch, dup bool) {
				opts.commitWith(b, uploaded{rec: rec, deleteToken: deleteToken, dup: dup})
			}
		}
		dup, err := h.st.addImage(rec, fresh, data, limit, also)
		switch {
		case err == nil:
			h.metrics.uploads.Inc()
			h.metrics.uploadBytes.Add(float64(rec.Size))
			if dup {
				h.metrics.dedupHits.Inc()
			}
			if opts.albumID != "" {
				// Only an album deleted meanwhile fails here; the image
				// stays stored and is answered, outside the album.
				h.st.setMember(opts.albumID, rec, true)
			}
			return uploaded{rec: rec, deleteToken: deleteToken, dup: dup}
		case errors.Is(err, errBlobGone) && fresh == nil:
			bs := h.st.originals
			fresh = &blobMeta{V: recordVersion, Store: bs.kind(), Size: rec.Size, Mime: rec.Mime, Width: cfg.Width, Height: cfg.Height}
			if bs == blobStore(h.st.local) {
				fresh.Chunk = h.st.local.chunk
			}
			// A small image, held whole in memory, is committed with
			// its record in one batch; a large one, or one for a remote
			// store, is staged first (in bounded batches, or streamed to
			// the store).
			if inline = h.st.inline(bs, sp.size) && sp.whole() != nil; inline {
				fresh.Gen = newGen()
			} else if fresh.Gen, err = h.st.stage(ctx, bs, rec.Sum, sp.section(), sp.size, rec.Mime); err != nil {
				if bs != blobStore(h.st.local) {
					err = unavailable(err)
				}
				return uploaded{err: err}
			}
		case errors.Is(err, errIDTaken) && attempt < 8:
		default:
			if fresh != nil && !inline {
				h.st.reclaim(h.st.blobs(fresh.Store), rec.Sum, fresh.Gen)
			}
			return uploaded{err: err}
		}
	}
}

// idLen is the length of image ids: 62^8 ≈ 2.2e14 ids, so guessing one
// that exists takes on the order of 1e14/N tries for N images, and a
// collision on creation (checked anyway) is rare.
const idLen = 8

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomString returns n random base62 characters.
func randomString(n int) string {
	out := make([]byte, n)
	var buf [64]byte
	for i := 0; i < n; {
		rand.Read(buf[:])
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: keeps the distribution uniform
				continue
			}
			out[i] = base62[b%62]
			if i++; i == n {
				break
			}
		}
	}
	return string(out)
}

// validID reports whether s can be an image id.
func validID(s string) bool { return len(s) > 0 && len(s) <= 10 && validChars(s) }

// validChars reports whether s is made of base62 characters only.
func validChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(base62, rune(s[i])) {
			return false
		}
	}
	return true
}

// cleanName turns a client's file name into a display name: no
// directories, no control characters, valid UTF-8, at most 200 bytes.
// Without a name, the id-based name is used later.
func cleanName(name string, f format) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" {
		name = "image." + f.ext()
	}
	return name
}

// baseURL is the prefix of the links in responses.
func (h *Host) baseURL(r *http.Request) string {
	if h.cfg.BaseURL != "" {
		return strings.TrimSuffix(h.cfg.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// imageData is the "data" object of Lsky Pro 2.x's upload response.
type imageData struct {
	Key        string    `json:"key"`
	Name       string    `json:"name"`
	OriginName string    `json:"origin_name"`
	Size       int64     `json:"size"`
	Mimetype   string    `json:"mimetype"`
	Extension  string    `json:"extension"`
	Width      int       `json:"width"`
	Height     int       `json:"height"`
	SHA256     string    `json:"sha256"`
	MD5        string    `json:"md5"`
	Duplicate  bool      `json:"duplicate"`
	Created    time.Time `json:"created"`
	ExpiresAt  string    `json:"expires_at,omitempty"` // RFC 3339
	MaxViews   int64     `json:"max_views,omitempty"`
	Links      links     `json:"links"`
}

type links struct {
	URL              string `json:"url"`
	HTML             string `json:"html"`
	BBCode           string `json:"bbcode"`
	Markdown         string `json:"markdown"`
	MarkdownWithLink string `json:"markdown_with_link"`
	ThumbnailURL     string `json:"thumbnail_url"`
	DeleteURL        string `json:"delete_url,omitempty"`
}

// data builds the client's view of rec. The delete URL is shown only to
// whoever holds the delete token.
func (h *Host) data(r *http.Request, rec *record, deleteToken string, dup bool) imageData {
	base := h.baseURL(r)
	name := rec.ID + "." + rec.Ext
	u := base + "/i/" + name
	alt := strings.NewReplacer("[", "", "]", "", "(", "", ")", "").Replace(rec.OriginName)
	d := imageData{
		Key: rec.ID, Name: name, OriginName: rec.OriginName, Size: rec.Size,
		Mimetype: rec.Mime, Extension: rec.Ext, Width: rec.Width, Height: rec.Height,
		SHA256: rec.Sum.String(), MD5: rec.MD5, Duplicate: dup, Created: time.Unix(0, rec.Created).UTC(), MaxViews: rec.MaxViews,
		Links: links{
			URL:              u,
			HTML:             `<img src="` + html.EscapeString(u) + `" alt="` + html.EscapeString(rec.OriginName) + `" />`,
			BBCode:           "[img]" + u + "[/img]",
			Markdown:         "![" + alt + "](" + u + ")",
			MarkdownWithLink: "[![" + alt + "](" + u + ")](" + u + ")",
			ThumbnailURL:     base + "/t/" + name + "?w=" + itoa(defaultThumbWidth),
		},
	}
	if rec.Expires != 0 {
		d.ExpiresAt = rec.expiry().UTC().Format(time.RFC3339Nano)
	}
	if deleteToken != "" {
		d.Links.DeleteURL = base + "/d/" + rec.ID + "?token=" + deleteToken
	}
	return d
}

// respondUpload answers with the envelope of the first file: 201 when its
// bytes are new, 200 for a duplicate. With several files, "files" lists
// each one's envelope.
func (h *Host) respondUpload(w http.ResponseWriter, r *http.Request, results []uploaded) {
	envelope := func(u uploaded) (int, map[string]any) {
		if u.err != nil {
			ae := toAPIError(u.err)
			h.metrics.errors.WithLabelValues(ae.reason).Inc()
			return ae.status, map[string]any{"status": false, "message": ae.msg}
		}
		d := h.data(r, u.rec, u.deleteToken, u.dup)
		status, msg := http.StatusCreated, "uploaded"
		if u.dup {
			status, msg = http.StatusOK, "uploaded (identical bytes were already stored)"
		}
		return status, map[string]any{"status": true, "message": msg, "url": d.Links.URL, "data": d}
	}
	status, body := envelope(results[0])
	retryLater(w, status)
	if len(results) > 1 {
		files := make([]map[string]any, len(results))
		files[0] = body
		for i, u := range results[1:] {
			_, files[i+1] = envelope(u)
		}
		body = map[string]any{}
		for k, v := range files[0] {
			body[k] = v
		}
		body["files"] = files
	}
	writeJSON(w, status, body)
}
