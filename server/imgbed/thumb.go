package imgbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// thumbWidths are the only widths rendered: a requested width is rounded
// up to the next one (and down to the largest), so nobody can make the
// server render and store thousands of sizes of one image.
var thumbWidths = []int{64, 128, 256, 512, 1024}

const defaultThumbWidth = 256

// maxRenders bounds the renders running at once: a decode holds up to
// MaxPixels×4 bytes.
const maxRenders = 2

// thumbnailer renders each thumbnail once: concurrent requests for the
// same image and size wait for one render.
type thumbnailer struct {
	h     *Host
	slots chan struct{}

	mu       sync.Mutex
	inflight map[string]*render
}

type render struct {
	done chan struct{}
	err  error
}

func newThumbnailer(h *Host) *thumbnailer {
	return &thumbnailer{h: h, slots: make(chan struct{}, maxRenders), inflight: make(map[string]*render)}
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

// thumbFormat picks the output format: the link's extension when it names
// another format, else WebP for clients that accept it, else JPEG for
// JPEG and HEIC originals and PNG (which keeps transparency) for the rest.
func thumbFormat(r *http.Request, rec *record, ext string) (f format, negotiated, ok bool) {
	if ext != rec.Ext && !(rec.Ext == "jpg" && ext == "jpeg") {
		switch ext {
		case "jpg", "jpeg":
			return formatJPEG, false, true
		case "png":
			return formatPNG, false, true
		case "webp":
			return formatWebP, false, true
		}
		return formatNone, false, false
	}
	if strings.Contains(r.Header.Get("Accept"), "image/webp") {
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
	width, ok := thumbWidth(r.URL.Query().Get("w"))
	if !ok {
		h.fail(w, errBadWidth)
		return
	}
	rec, err := lookup(h.st.db, id, "")
	if err == nil && rec.MaxViews > 0 {
		err = errViewLimited
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	f, negotiated, ok := thumbFormat(r, rec, ext)
	if !ok {
		h.fail(w, errNotFound)
		return
	}
	if negotiated {
		w.Header().Set("Vary", "Accept")
	}
	k := thumbKey(rec.Sum, f, width)
	_, err = h.st.db.Get(k)
	if errors.Is(err, lsmgo.ErrNotFound) {
		err = h.thumbs.make(context.WithoutCancel(r.Context()), rec, f, width, k)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	etag := fmt.Sprintf("%v-%s%d", rec.Sum, f.ext(), width)
	h.serveBlob(w, r, k, rec.Sum, etag, time.Unix(0, rec.Created), h.cachePolicy(rec))
}

// make renders and stores the thumbnail k unless another request is doing
// it, in which case it waits for that one.
func (t *thumbnailer) make(ctx context.Context, rec *record, f format, width int, k []byte) error {
	t.mu.Lock()
	if r := t.inflight[string(k)]; r != nil {
		t.mu.Unlock()
		<-r.done
		return r.err
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
	t.slots <- struct{}{}
	defer func() { <-t.slots }()
	start := time.Now()
	var meta blobMeta
	if r.err = getJSON(t.h.st.db, blobKey(rec.Sum), &meta, "blob metadata"); r.err != nil {
		return r.err
	}
	var src io.ReadSeekCloser
	if src, r.err = t.h.st.open(ctx, rec.Sum, &meta); r.err != nil {
		return r.err
	}
	defer src.Close()
	var data []byte
	var tw, th int
	in := &readErr{r: src}
	data, tw, th, r.err = renderThumb(in, rec.Mime, f, width)
	if in.err != nil && in.err != io.EOF {
		// The original could not be read (a remote store failing
		// midway), which is no fault of its bytes.
		r.err = in.err
	}
	if r.err != nil {
		return r.err
	}
	if r.err = t.h.st.addThumb(ctx, rec.Sum, k, data, f.mime(), tw, th); r.err != nil {
		return r.err
	}
	t.h.metrics.thumbsMade.Inc()
	t.h.metrics.thumbSeconds.Observe(time.Since(start).Seconds())
	return nil
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
