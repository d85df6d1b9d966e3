package imgbed

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"html/template"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/netutil"
)

func itoa(n int) string { return strconv.Itoa(n) }

func multipartReader(r io.Reader, boundary string) *multipart.Reader {
	if boundary == "" {
		return nil
	}
	return multipart.NewReader(r, boundary)
}

// deadlineReader gives every read of a request body its own deadline, the
// earlier of now+idle and the end of the whole upload, so a client that
// stalls is cut off (408) without a fixed limit on legitimately long
// uploads. It also holds the body to a minimum rate: a client that sends
// slower than minRate bytes a second for longer than its allowance (minRate
// times the window; sending faster earns it back, up to that) is cut off
// too, so a trickle of one byte now and then cannot keep an upload slot
// for the whole upload timeout. Only the time spent waiting in Read
// counts: the host's own work between reads is not charged to the client.
type deadlineReader struct {
	r    io.Reader
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time
	// minRate is in bytes per second, 0 when there is no minimum;
	// allowance and maxAllowance are in bytes.
	minRate      float64
	allowance    float64
	maxAllowance float64
}

func newDeadlineReader(w http.ResponseWriter, r *http.Request, cfg *Config, start time.Time) *deadlineReader {
	d := &deadlineReader{r: r.Body, rc: http.NewResponseController(w), idle: cfg.ReadIdleTimeout, end: start.Add(cfg.UploadTimeout)}
	if cfg.MinUploadRate > 0 {
		d.minRate = float64(cfg.MinUploadRate)
		d.maxAllowance = d.minRate * cfg.MinUploadRateWindow.Seconds()
		d.allowance = d.maxAllowance
	}
	return d
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	now := time.Now()
	if !now.Before(d.end) {
		return 0, errUploadTimeout
	}
	deadline, slow := now.Add(d.idle), false
	if d.end.Before(deadline) {
		deadline = d.end
	}
	if d.minRate > 0 {
		if behind := now.Add(time.Duration(d.allowance / d.minRate * float64(time.Second))); behind.Before(deadline) {
			deadline, slow = behind, true
		}
	}
	// An error means the ResponseWriter cannot set deadlines (a test
	// recorder); the server's own timeouts are all there is then.
	d.rc.SetReadDeadline(deadline)
	n, err := d.r.Read(p)
	if d.minRate > 0 {
		waited := time.Since(now).Seconds()
		d.allowance = min(d.maxAllowance, d.allowance-waited*d.minRate+float64(n))
	}
	if err != nil && netutil.IsTimeout(err) {
		err = errUploadTimeout
		if slow {
			err = errUploadTooSlow
		}
	}
	return n, err
}

var (
	errUploadTimeout = &apiError{http.StatusRequestTimeout, "timeout", "request body too slow"}
	errUploadTooSlow = &apiError{http.StatusRequestTimeout, "timeout", "request body slower than the minimum upload rate"}
)

// parseFile splits "{id}.{ext}" and checks both parts; anything else
// (traversal, junk, overlong ids) is simply not found.
func parseFile(file string) (id, ext string, ok bool) {
	id, ext, ok = strings.Cut(file, ".")
	return id, ext, ok && validID(id) && ext != ""
}

// getter is what point reads go through: the DB or a Snapshot.
type getter interface {
	Get(key []byte) ([]byte, error)
}

// lookup reads the record of id through g, checking the extension the
// link carries.
func lookup(g getter, id, ext string) (*record, error) {
	var rec record
	if err := getJSON(g, imageKey(id), &rec, "image record"); err != nil {
		return nil, err
	}
	return checkExt(&rec, ext)
}

// lookupServed is lookup into rec in the DB through the decoded records
// of GETs.
func (h *Host) lookupServed(id, ext string, rec *record) error {
	var kb [64]byte
	if err := h.records.get(h.st.db, appendKey(kb[:0], kindImage, []byte(id)), rec); err != nil {
		return err
	}
	_, err := checkExt(rec, ext)
	return err
}

// checkExt returns rec if ext, a link's extension, is its own ("" is
// any).
func checkExt(rec *record, ext string) (*record, error) {
	if ext != "" && ext != rec.Ext && !(rec.Ext == "jpg" && ext == "jpeg") {
		return nil, errNotFound
	}
	return rec, nil
}

// immutable is the caching policy of everything under /i/ and /t/: the
// bytes behind a link never change.
const immutable = "public, max-age=31536000, immutable"

func (h *Host) serveOriginal(w http.ResponseWriter, r *http.Request) {
	id, ext, ok := parseFile(r.PathValue("file"))
	if !ok {
		h.fail(w, errNotFound)
		return
	}
	rec := new(record)
	if err := h.lookupServed(id, ext, rec); err != nil {
		h.fail(w, err)
		return
	}
	etag := rec.Sum.String()
	if rec.MaxViews > 0 && r.Method == http.MethodGet && !matchesETag(r, etag) {
		last, err := h.countView(rec)
		if err != nil {
			h.fail(w, err)
			return
		}
		if last {
			// The response reads through its own snapshot or copy, so
			// deleting right after it starts truncates nothing.
			defer h.st.removeImage(rec.ID, func(*record) bool { return true })
		}
	}
	var meta blobMeta
	if err := h.metas.get(h.st.db, blobKey(rec.Sum), &meta); err != nil {
		h.fail(w, err)
		return
	}
	h.serveBlob(w, r, &meta, rec.Sum, h.originalFields(nil, rec))
}

// originalFields are the fields of the answer with rec's original, but
// its type, which is its blob's.
func (h *Host) originalFields(etag []byte, rec *record) blobFields {
	return blobFields{etag: hex.AppendEncode(etag, rec.Sum[:]), modified: time.Unix(0, rec.Created), cache: h.cachePolicy(rec)}
}

// matchesETag reports whether r's If-None-Match makes its answer a 304,
// which sends no bytes and so is not a view.
func matchesETag(r *http.Request, etag string) bool {
	inm := r.Header.Get("If-None-Match")
	return inm == "*" || strings.Contains(inm, `"`+etag+`"`)
}

// countView counts one download of a view-limited image, reporting
// whether it is the last one allowed; past the last, the image is gone
// (its deletion may still be under way).
func (h *Host) countView(rec *record) (last bool, err error) {
	defer h.st.locks.lock("v" + rec.ID)()
	n := int64(0)
	switch raw, err := h.st.db.Get(viewsKey(rec.ID)); {
	case err == nil:
		n, _ = strconv.ParseInt(string(raw), 10, 64)
	case !errors.Is(err, lsmgo.ErrNotFound):
		return false, err
	}
	if n >= rec.MaxViews {
		return false, errNotFound
	}
	if h.cfg.follows() {
		// The primary counts views and a replica cannot tell it of
		// its own: serving here would lift the limit.
		return false, errViewsOnPrimary
	}
	n++
	b := h.st.db.NewBatch()
	setFor(b, rec, viewsKey(rec.ID), []byte(strconv.FormatInt(n, 10)))
	return n == rec.MaxViews, h.st.db.Apply(b, nil)
}

// cachePolicy is the Cache-Control of rec's bytes: they never change, but
// an expiring image may be cached only until it expires, and a
// view-limited one not at all, since every download must be counted.
func (h *Host) cachePolicy(rec *record) string {
	switch {
	case rec.MaxViews > 0:
		return "no-store"
	case rec.Expires != 0:
		left := max(0, time.Duration(rec.Expires-h.now().UnixNano())/time.Second)
		return "public, max-age=" + strconv.FormatInt(int64(left), 10)
	}
	return immutable
}

// blobFields are the header fields of an answer with an original or a
// thumbnail, which serveBlob sets and ServePlain writes.
type blobFields struct {
	mime, cache string
	etag        []byte // without its quotes
	modified    time.Time
	varyAccept  bool // a thumbnail of a format negotiated by Accept
}

// set sets the fields in hd; http.ServeContent adds Accept-Ranges,
// Content-Length and Last-Modified.
func (f *blobFields) set(hd http.Header) {
	hd.Set("Content-Type", f.mime)
	hd.Set("ETag", `"`+string(f.etag)+`"`)
	hd.Set("Cache-Control", f.cache)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'")
	if f.varyAccept {
		addVary(hd, "Accept")
	}
}

// serveBlob sends the blob meta describes, with its
// validators; http.ServeContent answers Range, If-None-Match (304),
// If-Modified-Since and HEAD, from the metadata alone where it can (a
// blob in S3 is fetched only for the bytes a GET sends). The store's open
// makes a delete racing with a download either not found before any
// header or invisible to it (blobStore). A blob in an S3 store configured
// with presign is answered with a redirect to a presigned URL instead.
func (h *Host) serveBlob(w http.ResponseWriter, r *http.Request, meta *blobMeta, s sum, f blobFields) {
	if p, ok := h.st.blobs(meta.Store).(*s3Blobs); ok && p.presign > 0 {
		h.redirect(w, r, p, s, meta, string(f.etag))
		return
	}
	content, err := h.st.open(r.Context(), s, meta)
	if err != nil {
		h.fail(w, err)
		return
	}
	defer content.Close()
	body := &servedBody{rs: content}
	hd := w.Header()
	f.mime = meta.Mime
	f.set(hd)
	held := &heldWriter{ResponseWriter: &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: h.cfg.WriteIdleTimeout}}
	http.ServeContent(held, r, "", f.modified, body)
	if !held.sent && body.err != nil && body.err != io.EOF {
		// A remote store failed before the first byte: the client gets
		// an error it can retry, not a 200 that ends short.
		for _, k := range []string{"ETag", "Cache-Control", "Last-Modified", "Content-Length", "Content-Range", "Content-Type"} {
			hd.Del(k)
		}
		h.fail(w, body.err)
		return
	}
	held.send()
	h.metrics.served.Inc()
}

// redirect answers a GET of a blob in S3 with a presigned URL, valid for
// p.presign. The redirect itself may be cached for half that, privately.
func (h *Host) redirect(w http.ResponseWriter, r *http.Request, p *s3Blobs, s sum, meta *blobMeta, etag string) {
	hd := w.Header()
	if inm := r.Header.Get("If-None-Match"); inm == "*" || strings.Contains(inm, `"`+etag+`"`) {
		hd.Set("ETag", `"`+etag+`"`)
		hd.Set("Cache-Control", immutable)
		w.WriteHeader(http.StatusNotModified)
		h.metrics.served.Inc()
		return
	}
	u, err := p.presignGet(r.Context(), s, meta.Gen, meta.Mime)
	if err != nil {
		h.fail(w, unavailable(err))
		return
	}
	hd.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(p.presign/time.Second/2)))
	http.Redirect(w, r, u.String(), http.StatusFound)
	h.metrics.served.Inc()
}

// heldWriter holds the status line back until the first byte of the body
// is written, or send is called: until then the response can still
// become an error.
type heldWriter struct {
	http.ResponseWriter
	status int // held; 0: none
	sent   bool
	// sending is set while a body's sendTo runs (ReadFrom).
	sending bool
}

func (w *heldWriter) WriteHeader(status int) {
	if w.sent {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.status = status
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.send()
	return w.ResponseWriter.Write(p)
}

// send writes the held status line, if any, once.
func (w *heldWriter) send() {
	if w.sent {
		return
	}
	w.sent = true
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(w.status)
	}
}

// deadlineWriter gives every write of a response its own deadline, so a
// download may take as long as it needs while the client keeps reading.
type deadlineWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	// An error means the ResponseWriter cannot set deadlines (a test
	// recorder); the server's own timeouts are all there is then.
	d.rc.SetWriteDeadline(time.Now().Add(d.idle))
	return d.ResponseWriter.Write(p)
}

// missing maps a chunk that vanished with its blob to not found.
func missing(err error) error {
	if errors.Is(err, lsmgo.ErrNotFound) {
		return errNotFound
	}
	return err
}

// deleteTokenOK reports whether token is rec's delete token.
func deleteTokenOK(rec *record, token string) bool {
	got := sha256.Sum256([]byte(token))
	return token != "" && subtle.ConstantTimeCompare(got[:], rec.DeleteHash[:]) == 1
}

// mayDelete reports whether r may delete rec: it carries the delete token
// (?token= or X-Delete-Token), or the token that uploaded it, or an admin
// token.
func (h *Host) mayDelete(r *http.Request, rec *record) bool {
	token := r.URL.Query().Get("token")
	if token == "" {
		token = r.Header.Get("X-Delete-Token")
	}
	if token == "" && r.Method == http.MethodPost {
		token = r.PostFormValue("token")
	}
	if deleteTokenOK(rec, token) {
		return true
	}
	t, _ := h.identify(r)
	return t != nil && (t.Admin || t.Name == rec.Owner)
}

func (h *Host) serveMeta(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) {
		h.fail(w, errNotFound)
		return
	}
	rec, err := h.st.record(id)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "", "data": h.data(r, rec, "", false)})
}

func (h *Host) serveDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) {
		h.fail(w, errNotFound)
		return
	}
	if _, err := h.remove(r, id); err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "deleted"})
}

func (h *Host) remove(r *http.Request, id string) (bool, error) {
	freed, err := h.st.removeImage(id, func(rec *record) bool { return h.mayDelete(r, rec) })
	if err == nil {
		h.metrics.deletes.Inc()
	}
	return freed, err
}

var deletePage = template.Must(template.New("delete").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Delete image</title><style>body{font:16px system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}
button{font:inherit;padding:.5em 1.5em;background:#c0392b;color:#fff;border:0;border-radius:4px;cursor:pointer}</style></head>
<body>{{if .Done}}<p>{{.Done}}</p>{{else}}
<h1>Delete {{.Name}}?</h1><p>This removes the image for everyone; its links stop working.</p>
<form method="post"><input type="hidden" name="token" value="{{.Token}}"><button type="submit">Delete</button></form>{{end}}
</body></html>`))

// serveDeletePage makes delete_url work as a plain link: GET shows a
// confirmation form (so link previewers and prefetchers delete nothing),
// POST deletes.
func (h *Host) serveDeletePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	page := struct{ Name, Token, Done string }{Token: r.URL.Query().Get("token")}
	status := http.StatusOK
	var err error
	if !validID(id) {
		err = errNotFound
	} else if r.Method == http.MethodGet {
		var rec *record
		if rec, err = h.st.record(id); err == nil && !h.mayDelete(r, rec) {
			err = errForbidden
		} else if err == nil {
			page.Name = rec.ID + "." + rec.Ext
		}
	} else if _, err = h.remove(r, id); err == nil {
		page.Done = "The image was deleted."
	}
	if err != nil {
		ae := toAPIError(err)
		status, page.Done = ae.status, "Cannot delete: "+ae.msg+"."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	deletePage.Execute(w, page)
}

// serveList pages through uploads, newest first: an admin's request
// every upload (its own with ?mine=1), any other token's its own ("my
// uploads", Lsky's /images).
func (h *Host) serveList(w http.ResponseWriter, r *http.Request) {
	t, err := h.identify(r)
	if err == nil && t == nil {
		err = errTokenRequired
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	index := key(kindRecent)
	if !t.Admin || r.URL.Query().Get("mine") != "" {
		index = ownedPrefix(t.Name)
	}
	items, p, err := h.listImages(r, index)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "", "data": p.body(items)})
}

// paging is a page of a listing, from ?page= and ?per_page=.
type paging struct {
	page, per int
	more      bool
}

func pageOf(r *http.Request) paging {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 || per > 100 {
		per = DefaultPageSize
	}
	return paging{page: max(page, 1), per: per}
}

func (p paging) body(items any) map[string]any {
	return map[string]any{"current_page": p.page, "per_page": p.per, "has_more": p.more, "data": items}
}

// listImages reads the request's page of an index whose keys are index,
// a creation time (newestFirst) and an image id, through one snapshot.
func (h *Host) listImages(r *http.Request, index []byte) ([]imageData, paging, error) {
	p := pageOf(r)
	snap := h.st.db.NewSnapshot()
	defer snap.Close()
	lo, hi := span(index)
	it, err := snap.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, p, err
	}
	defer it.Close()
	skip := (p.page - 1) * p.per
	items := []imageData{}
	for ok := it.First(); ok; ok = it.Next() {
		if len(items) == p.per {
			p.more = true
			break
		}
		// The index entry and the record are written and deleted in the
		// same batches, so within one snapshot the record exists, unless
		// it expired between the two reads (they share the expiry).
		rec, err := lookup(snap, string(it.Key()[len(index)+8:]), "")
		if err == errNotFound {
			continue
		}
		if err != nil {
			return nil, p, err
		}
		if skip > 0 {
			skip--
			continue
		}
		items = append(items, h.data(r, rec, "", false))
	}
	return items, p, it.Error()
}
