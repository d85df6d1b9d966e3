package imgbed

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// thumbWidths are the only widths rendered: a requested width is rounded
// up to the next one (and down to the largest), so nobody can make the
// server render and store thousands of sizes of one image.
var thumbWidths = []int{64, 128, 256, 512, 1024}

const defaultThumbWidth = 256

// thumbnailer renders each thumbnail once: concurrent requests for the
// same image and size wait for one render. Renders run as their
// estimated memory fits the budget (renderBudget, render_cost.go).
type thumbnailer struct {
	h      *Host
	budget *renderBudget

	mu       sync.Mutex
	inflight map[string]*render
}

type render struct {
	done chan struct{}
	err  error
	// data is the render when it was not stored (the original has
	// Config.RendersPerImage box renders already).
	data []byte
}

func newThumbnailer(h *Host) *thumbnailer {
	return &thumbnailer{h: h, budget: newRenderBudget(h.cfg.RenderMemory), inflight: make(map[string]*render)}
}

// thumbWidth maps the w parameter to a width of thumbWidths.
func thumbWidth(q string) (int, bool) {
	if q == "" {
		return defaultThumbWidth, true
	}
	w, err := strconv.Atoi(q)
	if err != nil || w <= 0 {
		return 0, false
	}
	for _, tw := range thumbWidths {
		if w <= tw {
			return tw, true
		}
	}
	return thumbWidths[len(thumbWidths)-1], true
}

// thumbFormat picks the output format: ?format=, else the link's
// extension when it names another format, else WebP for clients that
// accept it, else JPEG for JPEG and HEIC originals and PNG (which keeps
// transparency) for the rest. AVIF is never negotiated: its encoder
// takes seconds where WebP's takes milliseconds.
func thumbFormat(accept string, rec *record, ext string, forced format) (f format, negotiated, ok bool) {
	if forced != formatNone {
		return forced, false, true
	}
	if ext != rec.Ext && !(rec.Ext == "jpg" && ext == "jpeg") {
		f := formatByName(ext)
		return f, false, f != formatNone
	}
	if strings.Contains(accept, "image/webp") {
		return formatWebP, true, true
	}
	if rec.Mime == formatJPEG.mime() || rec.Mime == formatHEIC.mime() { // photos
		return formatJPEG, true, true
	}
	return formatPNG, true, true
}

// errViewLimited: a thumbnail would show a view-limited image without
// counting a view.
var errViewLimited = &apiError{http.StatusNotFound, "not_found", "no thumbnails of a view-limited image"}

var errBadWidth = &apiError{http.StatusBadRequest, "bad_request", "w must be a positive number of pixels"}

func (h *Host) serveThumbnail(w http.ResponseWriter, r *http.Request) {
	id, ext, ok := parseFile(r.PathValue("file"))
	if !ok {
		h.fail(w, errNotFound)
		return
	}
	spec, err := h.parseRender(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	rec := new(record)
	err = h.lookupServed(id, "", rec)
	if err == nil && rec.MaxViews > 0 {
		err = errViewLimited
	}
	if err == nil && int64(rec.Width)*int64(rec.Height) > h.cfg.MaxPixels {
		err = invalid("the image has %d×%d pixels, more than the %d renders may decode (max_pixels)", rec.Width, rec.Height, h.cfg.MaxPixels)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	var negotiated bool
	if spec.f, negotiated, ok = thumbFormat(r.Header.Get("Accept"), rec, ext, spec.f); !ok {
		h.fail(w, errNotFound)
		return
	}
	if negotiated {
		addVary(w.Header(), "Accept") // errors vary too
	}
	k := spec.key(rec.Sum)
	var (
		unstored []byte
		meta     blobMeta
	)
	err = h.metas.get(h.st.db, k, &meta)
	if err == errNotFound {
		unstored, err = h.thumbs.make(context.WithoutCancel(r.Context()), rec, spec, k)
		if err == nil && unstored == nil {
			err = h.metas.get(h.st.db, k, &meta)
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	f := h.thumbFields(nil, rec, spec, negotiated)
	if unstored != nil {
		f.mime = spec.f.mime()
		f.set(w.Header())
		http.ServeContent(w, r, "", f.modified, bytes.NewReader(unstored))
		return
	}
	h.serveBlob(w, r, &meta, rec.Sum, f)
}

// thumbFields are the fields of the answer with the thumbnail spec of
// rec; the type is the stored thumbnail's.
func (h *Host) thumbFields(etag []byte, rec *record, spec renderSpec, negotiated bool) blobFields {
	return blobFields{etag: spec.appendETag(etag, rec.Sum), modified: time.Unix(0, rec.Created), cache: h.cachePolicy(rec), varyAccept: negotiated}
}

// make renders and stores the thumbnail k unless another request is doing
// it, in which case it waits for that one. A box render of an original
// that has Config.RendersPerImage of them already, and any render on a
// replica, is returned instead of stored.
func (t *thumbnailer) make(ctx context.Context, rec *record, spec renderSpec, k []byte) ([]byte, error) {
	t.mu.Lock()
	if r := t.inflight[string(k)]; r != nil {
		t.mu.Unlock()
		<-r.done
		return r.data, r.err
	}
	r := &render{done: make(chan struct{})}
	t.inflight[string(k)] = r
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.inflight, string(k))
		t.mu.Unlock()
		close(r.done)
	}()
	start := time.Now()
	var data []byte
	var tw, th int
	data, tw, th, r.err = t.render(ctx, rec, spec)
	if r.err != nil {
		return nil, r.err
	}
	if t.h.cfg.follows() {
		r.data = data // a replica stores nothing of its own
		return data, nil
	}
	if spec.fit != fitWidth {
		var full bool
		if full, r.err = t.h.st.rendersFull(rec.Sum, t.h.cfg.RendersPerImage); r.err != nil {
			return nil, r.err
		}
		if full {
			r.data = data
			return data, nil
		}
	}
	if r.err = t.h.st.addThumb(ctx, rec.Sum, k, data, spec.f.mime(), tw, th); r.err != nil {
		return nil, r.err
	}
	t.h.metrics.thumbsMade.Inc()
	t.h.metrics.thumbSeconds.Observe(time.Since(start).Seconds())
	return nil, nil
}

// render reads the original's head, waits for its estimated memory to
// fit the budget, and renders it.
func (t *thumbnailer) render(ctx context.Context, rec *record, spec renderSpec) (data []byte, w, h int, err error) {
	var meta blobMeta
	if err := getJSON(t.h.st.db, blobKey(rec.Sum), &meta, "blob metadata"); err != nil {
		return nil, 0, 0, err
	}
	src, err := t.h.st.open(ctx, rec.Sum, &meta)
	if err != nil {
		return nil, 0, 0, err
	}
	defer src.Close()
	in := &readErr{r: src}
	head := make([]byte, min(exifHeadLen, rec.Size))
	n, err := io.ReadFull(in, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, 0, 0, err
	}
	head = head[:n]
	orient := 1
	if rec.Mime == formatJPEG.mime() {
		orient, _ = exifInfo(head, false)
	}
	p := planRender(spec, orient, rec.Width, rec.Height)
	cost := renderCost(rec.Mime, head, rec.Width, rec.Height, rec.Size, p, spec.f)
	if err := t.budget.acquire(ctx, cost); err != nil {
		return nil, 0, 0, err
	}
	defer t.release(cost)
	data, w, h, err = renderThumb(io.MultiReader(bytes.NewReader(head), in), rec.Mime, spec)
	if in.err != nil && in.err != io.EOF {
		// The original could not be read (a remote store failing
		// midway), which is no fault of its bytes.
		err = in.err
	}
	return data, w, h, err
}

// bigRender is the estimate above which a finished render hands its
// memory back to the system at once: otherwise the garbage of one large
// decode and the next one's pixels are both resident before the
// collector runs, doubling the peak the budget is meant to bound.
const bigRender = 64 << 20

func (t *thumbnailer) release(cost int64) {
	if cost >= bigRender {
		debug.FreeOSMemory()
	}
	t.budget.release(cost)
}

// readErr remembers the last error its reader returned.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
