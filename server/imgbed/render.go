package imgbed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lsmgo-dev/lsmgo"
)

// fitMode says how a render fills its size.
type fitMode byte

const (
	// fitWidth: a ladder thumbnail (?w= alone), the height follows.
	fitWidth fitMode = iota
	// fitContain: the whole image inside w×h, aspect kept, nothing
	// added: one side is the box's, the other at most the box's.
	fitContain
	// fitCover: w×h filled, aspect kept, the overflow cut off evenly on
	// both sides (a centred crop).
	fitCover
)

// renderSpec is what one render link asks for. In a box (fitContain,
// fitCover) a zero w or h follows the image's aspect ratio.
type renderSpec struct {
	w, h int
	fit  fitMode
	f    format
}

var (
	errBadSize = &apiError{http.StatusBadRequest, "bad_request", "w and h must be positive numbers of pixels"}
	errBadFit  = &apiError{http.StatusBadRequest, "bad_request", "fit must be cover or contain; cover needs w and h"}
	errBadSig  = &apiError{http.StatusForbidden, "signature", "this render needs a valid sig (the host signs its render links)"}
)

// parseRender reads a render link's query: w, h, fit and format (which
// overrides the extension), checking the signature when the host wants
// one. It leaves f to thumbFormat when the link names none.
func (h *Host) parseRender(r *http.Request) (renderSpec, error) {
	q := r.URL.Query()
	var s renderSpec
	box := q.Has("h") || q.Has("fit")
	if box || q.Has("format") {
		if err := h.checkSignature(r); err != nil {
			return s, err
		}
	}
	if !box {
		w, ok := thumbWidth(q.Get("w"))
		if !ok {
			return s, errBadWidth
		}
		s.w = w
	} else {
		var err error
		if s.w, err = h.side(q.Get("w")); err != nil {
			return s, err
		}
		if s.h, err = h.side(q.Get("h")); err != nil {
			return s, err
		}
		switch q.Get("fit") {
		case "", "contain":
			s.fit = fitContain
		case "cover":
			s.fit = fitCover
		default:
			return s, errBadFit
		}
		if s.w == 0 && s.h == 0 || s.fit == fitCover && (s.w == 0 || s.h == 0) {
			return s, errBadFit
		}
	}
	if name := q.Get("format"); name != "" {
		if s.f = formatByName(name); s.f == formatNone {
			return s, errNotFound
		}
	}
	return s, nil
}

// side reads one side of a box: empty is 0 (follows the aspect ratio).
func (h *Host) side(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, errBadSize
	}
	if n > h.cfg.RenderMaxSide {
		return 0, &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("w and h are at most %d pixels", h.cfg.RenderMaxSide)}
	}
	return n, nil
}

// formatByName maps a format name or extension to an output format.
func formatByName(name string) format {
	switch strings.ToLower(name) {
	case "jpg", "jpeg":
		return formatJPEG
	case "png":
		return formatPNG
	case "webp":
		return formatWebP
	case "avif":
		return formatAVIF
	}
	return formatNone
}

// key names the stored render of the blob s. Ladder thumbnails keep the
// key they always had; a box adds its height and fit.
func (s renderSpec) key(b sum) []byte { return s.appendKey(nil, b) }

// appendKey appends key(b) to dst.
func (s renderSpec) appendKey(dst []byte, b sum) []byte {
	k := appendThumbKey(dst, b, s.f, s.w)
	if s.fit == fitWidth {
		return k
	}
	k = binary.BigEndian.AppendUint16(k, uint16(s.h))
	return append(k, byte(s.fit))
}

// appendETag appends the render's entity tag: the original's hash and
// the spec.
func (s renderSpec) appendETag(dst []byte, b sum) []byte {
	dst = append(hex.AppendEncode(dst, b[:]), '-')
	dst = strconv.AppendInt(append(dst, s.f.ext()...), int64(s.w), 10)
	if s.fit == fitWidth {
		return dst
	}
	dst = strconv.AppendInt(append(dst, 'x'), int64(s.h), 10)
	return append(dst, "wic"[s.fit])
}

// geometry places the render on a source shown sw×sh (after its EXIF
// orientation): the part of it used, and the output size. Nothing is
// ever enlarged; a cover box larger than the source shrinks, keeping its
// aspect ratio, until it fits.
func (s renderSpec) geometry(sw, sh int) (crop image.Rectangle, w, h int) {
	crop = image.Rect(0, 0, sw, sh)
	switch s.fit {
	case fitWidth:
		w = min(s.w, sw)
		return crop, w, max(1, int(int64(sh)*int64(w)/int64(sw)))
	case fitContain:
		bw, bh := s.w, s.h
		if bw == 0 {
			bw = sw
		}
		if bh == 0 {
			bh = sh
		}
		// The scale is min(bw/sw, bh/sh, 1); compare as products.
		switch {
		case bw >= sw && bh >= sh:
			return crop, sw, sh
		case int64(bw)*int64(sh) <= int64(bh)*int64(sw): // the width binds
			return crop, bw, max(1, int(int64(sh)*int64(bw)/int64(sw)))
		default:
			return crop, max(1, int(int64(sw)*int64(bh)/int64(sh))), bh
		}
	}
	// Cover: the largest centred part of the source with the box's
	// aspect ratio.
	cw, ch := sw, int(int64(sw)*int64(s.h)/int64(s.w))
	if ch > sh {
		cw, ch = int(int64(sh)*int64(s.w)/int64(s.h)), sh
	}
	cw, ch = max(1, cw), max(1, ch)
	x, y := (sw-cw)/2, (sh-ch)/2
	crop = image.Rect(x, y, x+cw, y+ch)
	if s.w > cw { // the box is larger than the source: the crop itself
		return crop, cw, ch
	}
	w, h = s.w, s.h
	return crop, w, h
}

// sourceRect maps r, a rectangle of the image as shown after EXIF
// orientation o, to the stored image of sw×sh pixels (orientImage's
// mapping, inverted).
func sourceRect(r image.Rectangle, o, sw, sh int) image.Rectangle {
	switch o {
	case 2:
		return image.Rect(sw-r.Max.X, r.Min.Y, sw-r.Min.X, r.Max.Y)
	case 3:
		return image.Rect(sw-r.Max.X, sh-r.Max.Y, sw-r.Min.X, sh-r.Min.Y)
	case 4:
		return image.Rect(r.Min.X, sh-r.Max.Y, r.Max.X, sh-r.Min.Y)
	case 5:
		return image.Rect(r.Min.Y, r.Min.X, r.Max.Y, r.Max.X)
	case 6:
		return image.Rect(r.Min.Y, sh-r.Max.X, r.Max.Y, sh-r.Min.X)
	case 7:
		return image.Rect(sw-r.Max.Y, sh-r.Max.X, sw-r.Min.Y, sh-r.Min.X)
	case 8:
		return image.Rect(sw-r.Max.Y, r.Min.X, sw-r.Min.Y, r.Max.X)
	}
	return r
}

// checkSignature verifies ?sig=: the unpadded base64url HMAC-SHA256,
// keyed with Config.RenderSecret, of the request's path, "?", and its
// raw query without the sig parameter (the others in the order sent).
// Without a secret every link is accepted.
func (h *Host) checkSignature(r *http.Request) error {
	if h.cfg.RenderSecret == "" {
		return nil
	}
	rest, sig := splitSig(r.URL.RawQuery)
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, renderMAC(h.cfg.RenderSecret, r.URL.EscapedPath()+"?"+rest)) {
		return errBadSig
	}
	return nil
}

// splitSig takes the sig parameter out of a raw query.
func splitSig(raw string) (rest, sig string) {
	var kept []string
	for _, p := range strings.Split(raw, "&") {
		if v, ok := strings.CutPrefix(p, "sig="); ok {
			sig, _ = url.QueryUnescape(v)
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&"), sig
}

func renderMAC(secret, msg string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// SignRenderPath returns pathAndQuery (such as
// "/t/AbCd1234.webp?w=300&h=200&fit=cover") with the sig parameter a
// host with RenderSecret secret accepts.
func SignRenderPath(secret, pathAndQuery string) string {
	path, query, _ := strings.Cut(pathAndQuery, "?")
	sig := base64.RawURLEncoding.EncodeToString(renderMAC(secret, path+"?"+query))
	if query == "" {
		return path + "?sig=" + sig
	}
	return pathAndQuery + "&sig=" + sig
}

// rendersFull reports whether s has limit box renders stored already.
// Only keys are read, and at most limit of them.
func (st *store) rendersFull(s sum, limit int) (bool, error) {
	lo, hi := span(key(kindThumb, s[:]))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return false, err
	}
	ladder := len(thumbKey(s, formatNone, 0))
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		if len(it.Key()) > ladder {
			n++
		}
	}
	return n >= limit, it.Close()
}

// renderPlan is how a render of a stored sw×sh image with EXIF
// orientation orient goes: the crop of the stored image, the factor k
// its k×k blocks are averaged down by first, the output size as shown
// (w×h) and in stored orientation (dw×dh), since the scaling runs before
// the turn (cheaper on fewer pixels).
type renderPlan struct {
	crop         image.Rectangle
	k            int
	w, h, dw, dh int
}

func planRender(spec renderSpec, orient, sw, sh int) renderPlan {
	vw, vh := sw, sh
	if orient >= 5 { // a quarter turn: the displayed width is the stored height
		vw, vh = sh, sw
	}
	crop, w, h := spec.geometry(vw, vh)
	p := renderPlan{crop: sourceRect(crop, orient, sw, sh), w: w, h: h, dw: w, dh: h}
	if orient >= 5 {
		p.dw, p.dh = h, w
	}
	// Averaging k×k blocks first, down to about twice the output, is
	// integer work on a row at a time; areaScale's fractional weights
	// then have little left to do.
	p.k = max(1, min(p.crop.Dx()/(2*p.dw), p.crop.Dy()/(2*p.dh)))
	return p
}
