package imgbed

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gen2brain/webp"
	xdraw "golang.org/x/image/draw"
	xwebp "golang.org/x/image/webp"

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
// JPEG originals and PNG (which keeps transparency) for the rest.
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
	if rec.Mime == formatJPEG.mime() {
		return formatJPEG, true, true
	}
	return formatPNG, true, true
}

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
		err = h.thumbs.make(rec, f, width, k)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	etag := fmt.Sprintf("%v-%s%d", rec.Sum, f.ext(), width)
	h.serveBlob(w, r, k, rec.Sum, etag, time.Unix(0, rec.Created))
}

// make renders and stores the thumbnail k unless another request is doing
// it, in which case it waits for that one.
func (t *thumbnailer) make(rec *record, f format, width int, k []byte) error {
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
	snap := t.h.st.db.NewSnapshot()
	defer snap.Close()
	var meta blobMeta
	if r.err = getJSON(snap, blobKey(rec.Sum), &meta, "blob metadata"); r.err != nil {
		return r.err
	}
	var data []byte
	var tw, th int
	data, tw, th, r.err = renderThumb(newChunkReader(snap, rec.Sum, meta), rec.Mime, f, width)
	if r.err != nil {
		return r.err
	}
	if r.err = t.h.st.addThumb(rec.Sum, k, data, f.mime(), tw, th); r.err != nil {
		return r.err
	}
	t.h.metrics.thumbsMade.Inc()
	t.h.metrics.thumbSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// renderThumb decodes the original in src, scales it to width (never up),
// applies its EXIF orientation and encodes it as f.
func renderThumb(src io.Reader, mime string, f format, width int) (data []byte, w, h int, err error) {
	orient := 1
	if mime == formatJPEG.mime() {
		head := make([]byte, exifHeadLen)
		n, err := io.ReadFull(src, head)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, 0, 0, err
		}
		head = head[:n]
		orient, _ = exifInfo(head, false)
		src = io.MultiReader(bytes.NewReader(head), src)
	}
	img, err := decodeImage(mime, src)
	if err != nil {
		return nil, 0, 0, invalid("cannot decode the original: %v", err)
	}
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if orient >= 5 { // a quarter turn: the displayed width is the source height
		sw, sh = sh, sw
	}
	w = min(width, sw)
	h = max(1, int(int64(sh)*int64(w)/int64(sw)))
	// Scale in source orientation, then turn: scaling is the expensive
	// part and the turn is cheaper on fewer pixels.
	dw, dh := w, h
	if orient >= 5 {
		dw, dh = h, w
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	out := orientImage(dst, orient)
	var buf bytes.Buffer
	switch f {
	case formatJPEG:
		err = jpeg.Encode(&buf, out, &jpeg.Options{Quality: 85})
	case formatPNG:
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, out)
	case formatWebP:
		err = webp.Encode(&buf, out, webp.Options{Quality: 80, Method: 4})
	default:
		err = errors.New("imgbed: no encoder")
	}
	return buf.Bytes(), w, h, err
}

func decodeImage(mime string, r io.Reader) (image.Image, error) {
	switch mime {
	case formatJPEG.mime():
		return jpeg.Decode(r)
	case formatPNG.mime():
		return png.Decode(r)
	case formatGIF.mime():
		return gif.Decode(r) // the first frame
	case formatWebP.mime():
		return xwebp.Decode(r)
	}
	return nil, errors.New("unsupported type")
}

// orientImage turns src as EXIF orientation o says, so that it shows
// upright: 2 mirrors, 3 turns half, 4 flips, 5-8 transpose then as 1-4.
func orientImage(src *image.NRGBA, o int) *image.NRGBA {
	if o <= 1 || o > 8 {
		return src
	}
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dw, dh := sw, sh
	if o >= 5 {
		dw, dh = sh, sw
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	for y := 0; y < sh; y++ {
		for x := 0; x < sw; x++ {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = sw-1-x, y
			case 3:
				dx, dy = sw-1-x, sh-1-y
			case 4:
				dx, dy = x, sh-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = sh-1-y, x
			case 7:
				dx, dy = sh-1-y, sw-1-x
			case 8:
				dx, dy = y, sw-1-x
			}
			copy(dst.Pix[dy*dst.Stride+dx*4:dy*dst.Stride+dx*4+4], src.Pix[y*src.Stride+x*4:])
		}
	}
	return dst
}
