//go:build !vips && linux

package imgbed

import (
	"encoding/binary"
	"image"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// A HEIC whose primary image is one HEVC picture (what heif-enc and
// most cameras but Apple's write; 8 to 16 bits a sample) is decoded
// here by libde265 itself, the HEVC decoder libheif uses, called
// through purego like libheif. Its peak memory is about 60% of
// libheif's for the same picture
// (doc/imgbed.md, TestHEICDecodeCost): libheif starts libde265 with a
// worker thread, which makes its in-loop filter (SAO) write into a
// second whole picture, and then copies the picture into an image of
// its own. Without worker threads libde265 filters in place with a copy
// of one plane at a time, and the shrink reads its picture where it
// lies. Grids of tiles (Apple's) and primaries with a crop (clap) or
// another property it does not apply go to libheif (heic_libheif.go).

// libde265's enumerations (de265.h, 1.0).
const (
	de265WaitingForInput = 13
	de265Chroma420       = 1
)

var libde265 libde265Funcs

type libde265Funcs struct {
	once sync.Once
	ok   bool

	newDecoder     func() uintptr
	freeDecoder    func(uintptr) int32
	pushNAL        func(ctx uintptr, data *byte, length int32, pts int64, user uintptr) int32
	flushData      func(ctx uintptr) int32
	decode         func(ctx uintptr, more *int32) int32
	isOK           func(err int32) int32
	nextPicture    func(ctx uintptr) uintptr
	releasePicture func(ctx uintptr)
	chromaFormat   func(img uintptr) int32
	imageWidth     func(img uintptr, channel int32) int32
	imageHeight    func(img uintptr, channel int32) int32
	bitsPerPixel   func(img uintptr, channel int32) int32
	imagePlane     func(img uintptr, channel int32, stride *int32) *byte
}

// de265Loaded reports whether HEICs of one HEVC picture are decoded by
// libde265 here: where libheif loads (which links it), and so does it.
func de265Loaded() bool {
	libde265.once.Do(func() {
		if !libheifLoaded() {
			return
		}
		lib, err := purego.Dlopen("libde265.so.0", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return
		}
		l := &libde265
		for name, fn := range map[string]any{
			"de265_new_decoder":          &l.newDecoder,
			"de265_free_decoder":         &l.freeDecoder,
			"de265_push_NAL":             &l.pushNAL,
			"de265_flush_data":           &l.flushData,
			"de265_decode":               &l.decode,
			"de265_isOK":                 &l.isOK,
			"de265_get_next_picture":     &l.nextPicture,
			"de265_release_next_picture": &l.releasePicture,
			"de265_get_chroma_format":    &l.chromaFormat,
			"de265_get_image_width":      &l.imageWidth,
			"de265_get_image_height":     &l.imageHeight,
			"de265_get_bits_per_pixel":   &l.bitsPerPixel,
			"de265_get_image_plane":      &l.imagePlane,
		} {
			if _, err := purego.Dlsym(lib, name); err != nil {
				return
			}
			purego.RegisterLibFunc(fn, lib, name)
		}
		l.ok = true
	})
	return libde265.ok
}

// decodeHEICDe265 decodes the primary image described by img (plain:
// one HEVC picture) out of the HEIC in data and averages the part plan
// picks straight out of libde265's planes.
func decodeHEICDe265(data []byte, img heifImage, plan shrinkPlan) (image.Image, error) {
	coded, err := itemBytes(data, img.extents)
	if err != nil {
		return nil, err
	}
	l := &libde265
	if libheif.mallocTrim != nil {
		defer libheif.mallocTrim(0) // as decodeHEICLibheif does
	}
	defer runtime.KeepAlive(data)
	ctx := l.newDecoder()
	if ctx == 0 {
		return nil, invalid("libde265 gave no decoder")
	}
	defer l.freeDecoder(ctx)
	// The parameter sets (VPS, SPS, PPS) from hvcC, then the item's
	// NAL units.
	params, ok := hvcCNALs(img.hvcC)
	if !ok {
		return nil, invalid("hvcC cut off")
	}
	for _, nal := range params {
		if err := l.push(ctx, nal); err != nil {
			return nil, err
		}
	}
	nals, pictures := len(params), 0
	lengthSize := int(img.hvcC[21]&3) + 1
	// The item's data: NALs, each after a length of lengthSize bytes.
	for len(coded) > 0 {
		if len(coded) < lengthSize {
			return nil, invalid("HEVC data cut off")
		}
		n := uint64(0)
		for _, c := range coded[:lengthSize] {
			n = n<<8 | uint64(c)
		}
		if n > uint64(len(coded)-lengthSize) {
			return nil, invalid("HEVC NAL of %d bytes overruns its item", n)
		}
		nal := coded[lengthSize : lengthSize+int(n)]
		// Parameter sets belong in hvcC, whose SPS primaryImage bounded;
		// libde265 would take a VPS, SPS or PPS here as well, and so a
		// picture of any size.
		t := nalType(nal)
		if t >= 32 && t <= 34 {
			return nil, invalid("HEVC parameter set (NAL type %d) in the item's data", t)
		}
		// An image item is one picture; libde265 would decode more (up
		// to its queue of some 16) before handing out the first, each
		// as large as the price counts once.
		if t >= 0 && t < 32 && len(nal) > 2 && nal[2]&0x80 != 0 { // a slice, first_slice_segment_in_pic_flag
			if pictures++; pictures > 1 {
				return nil, invalid("HEIC item of more than one picture")
			}
		}
		if err := l.push(ctx, nal); err != nil {
			return nil, err
		}
		nals++
		coded = coded[lengthSize+int(n):]
	}
	if err := l.check(l.flushData(ctx), "flush"); err != nil {
		return nil, err
	}
	// de265_decode takes a NAL a call and reports more work while one
	// is left or a picture waits in the output queue, so the loop ends
	// when the picture comes out; input ends at the flush, so waiting
	// for more means there is none to come.
	var pic uintptr
	for calls := 0; pic == 0; calls++ {
		var more int32
		err := l.decode(ctx, &more)
		if err != de265WaitingForInput {
			if err := l.check(err, "decode"); err != nil {
				return nil, err
			}
		}
		pic = l.nextPicture(ctx)
		if pic == 0 && (more == 0 || err == de265WaitingForInput || calls > nals+16) {
			return nil, invalid("libde265 decoded no picture")
		}
	}
	defer l.releasePicture(ctx)
	w, hh := int(l.imageWidth(pic, 0)), int(l.imageHeight(pic, 0))
	if l.chromaFormat(pic) != de265Chroma420 || w != img.w || hh != img.h {
		return nil, invalid("libde265 gave a %d×%d picture, not the %d×%d 4:2:0 one the file says", w, hh, img.w, img.h)
	}
	var p [3]*byte
	var s [3]int32
	for c := range p {
		p[c] = l.imagePlane(pic, int32(c), &s[c])
		bits := int(l.bitsPerPixel(pic, int32(c)))
		if bits < 8 || bits > 16 || p[c] == nil {
			return nil, invalid("libde265 gave a plane of %d bits", bits)
		}
		if bits > 8 {
			cw, ch := w, hh
			if c > 0 {
				cw, ch = (w+1)/2, (hh+1)/2
			}
			if int(s[c]) < 2*cw {
				return nil, invalid("libde265 gave a plane of %d bits in rows of %d bytes", bits, s[c])
			}
			narrowPlane(unsafe.Slice(p[c], int(s[c])*ch), int(s[c]), cw, bits)
		}
	}
	return shrinkPlanes(p, s, w, hh, img.orient, plan)
}

// narrowPlane turns a plane of cw samples of 9 to 16 bits a row (two
// bytes each, native order) into one of 8 bits in the first cw bytes of
// each row, in place: the picture is libde265's, released right after
// the shrink, so no second plane is needed. The low bits are dropped,
// as libheif's conversion to 8 bits does, so that both routes give the
// same pixels.
func narrowPlane(plane []byte, stride, cw, bits int) {
	for row := 0; row+2*cw <= len(plane); row += stride {
		r := plane[row : row+2*cw]
		for x := range cw {
			r[x] = uint8(min(255, binary.NativeEndian.Uint16(r[2*x:])>>(bits-8)))
		}
	}
}

// push hands libde265 one NAL unit, which it copies.
func (l *libde265Funcs) push(ctx uintptr, nal []byte) error {
	if len(nal) == 0 {
		return nil
	}
	if len(nal) > 1<<30 { // de265_push_NAL takes an int
		return invalid("HEVC NAL of %d bytes", len(nal))
	}
	return l.check(l.pushNAL(ctx, &nal[0], int32(len(nal)), 0, 0), "NAL")
}

// check turns a de265_error into an error; warnings pass.
func (l *libde265Funcs) check(err int32, what string) error {
	if err == 0 || l.isOK(err) != 0 {
		return nil
	}
	return invalid("libde265 %s: error %d", what, err)
}

// itemBytes returns an item's bytes: in place for one extent (as
// encoders write the picture), else joined. The extents may all name
// the same bytes (iloc allows 65,535 of them), so the joined length is
// bounded by the file's before anything is allocated: no honest item is
// larger than the file that holds it.
func itemBytes(data []byte, extents [][2]int64) ([]byte, error) {
	var total int64
	for _, e := range extents {
		if e[0] < 0 || e[1] <= 0 || e[0] > int64(len(data)) || e[1] > int64(len(data))-e[0] {
			return nil, invalid("HEIC item extent %d+%d outside the file", e[0], e[1])
		}
		if total += e[1]; total > int64(len(data)) {
			return nil, invalid("HEIC item extents add up to more than the file's %d bytes", len(data))
		}
	}
	if len(extents) == 1 {
		e := extents[0]
		return data[e[0] : e[0]+e[1]], nil
	}
	out := make([]byte, 0, total)
	for _, e := range extents {
		out = append(out, data[e[0]:e[0]+e[1]]...)
	}
	return out, nil
}

// shrinkPlanes averages the part plan picks of a w×h 8-bit 4:2:0 picture
// in planes p (Y, Cb, Cr) with strides s, shown turned as EXIF
// orientation orient says: plan sees the picture upright, and the
// average, copied into Go's heap, is turned upright. The planes stay
// the decoder's.
func shrinkPlanes(p [3]*byte, s [3]int32, w, h, orient int, plan shrinkPlan) (image.Image, error) {
	ch := (h + 1) / 2
	if p[0] == nil || p[1] == nil || p[2] == nil || int(s[0]) < w || int(s[1]) < (w+1)/2 || s[2] != s[1] {
		return nil, invalid("the decoder gave no 4:2:0 planes")
	}
	src := &image.YCbCr{
		Y:              unsafe.Slice(p[0], int(s[0])*h),
		Cb:             unsafe.Slice(p[1], int(s[1])*ch),
		Cr:             unsafe.Slice(p[2], int(s[1])*ch),
		YStride:        int(s[0]),
		CStride:        int(s[1]),
		SubsampleRatio: image.YCbCrSubsampleRatio420,
		Rect:           image.Rect(0, 0, w, h),
	}
	vw, vh := w, h
	if orient >= 5 {
		vw, vh = h, w
	}
	crop, k := plan(vw, vh)
	out := boxShrink(src.SubImage(sourceRect(crop, orient, w, h)), max(k, 1))
	if orient <= 1 {
		return out, nil
	}
	// Opaque: the premultiplied average is also the plain one.
	return orientImage(&image.NRGBA{Pix: out.Pix, Stride: out.Stride, Rect: out.Rect}, orient), nil
}
