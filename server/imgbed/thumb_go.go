//go:build !vips

package imgbed

import (
	"bufio"
	"bytes"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"

	"github.com/gen2brain/avif"
	"github.com/gen2brain/heic"
	"github.com/gen2brain/webp"
	xwebp "golang.org/x/image/webp"
)

// streamsJPEG: this build decodes JPEGs with jpeg_stream.go, whose
// memory render_cost.go then estimates.
const streamsJPEG = true

// heicCost is the peak memory of decoding a HEIC of px pixels and size
// bytes, whose first bytes are head, with the decoder this process will
// use for it (heicRoute; render_cost.go): libde265 and libheif hold the
// file, their copies of its coded data besides the pixels; the
// WebAssembly decoder the file and its copy in linear memory.
func heicCost(head []byte, px, size int64) int64 {
	switch img, r := heicRoute(head); r {
	case heicDe265:
		if img.deep {
			return px*costHEICDe265Deep + 3*size
		}
		return px*costHEICDe265 + 3*size
	case heicLibheif:
		if img.deep || img.extents == nil { // deep, or not known to be 8-bit
			return px*costHEICLibheifDeep + 3*size
		}
		return px*costHEICLibheif + 3*size
	}
	return px*costHEICWasm + 2*size
}

// The HEIC decoders, by preference.
const (
	heicDe265   = iota // libde265 on the one picture (heic_de265.go)
	heicLibheif        // the system's libheif (heic_libheif.go)
	heicWasm           // libheif in WebAssembly (decodeHEIC)
)

// heicRoute picks the decoder for the HEIC whose first bytes (or all)
// are b, and returns what its meta box says of the primary image (zero
// if b does not hold the meta box).
func heicRoute(b []byte) (heifImage, int) {
	var img heifImage
	ok := false
	if meta, off, found := findMetaBox(b); found {
		img, ok = parseHEIFMeta(meta, off).primaryImage()
	}
	switch {
	case !libheifLoaded():
		return img, heicWasm
	case ok && img.plain && de265Loaded():
		return img, heicDe265
	}
	return img, heicLibheif
}

// renderThumb decodes the original in src, places spec on it (geometry:
// a crop and a size, never enlarging), applies its EXIF orientation and
// encodes it as spec.f. This is the pure-Go renderer of the default
// build; thumb_vips.go is the libvips one.
func renderThumb(src io.Reader, mime string, spec renderSpec) (data []byte, w, h int, err error) {
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
	var p renderPlan
	plan := func(sw, sh int) (image.Rectangle, int) {
		p = planRender(spec, orient, sw, sh)
		return p.crop, p.k
	}
	from, err := decodeShrunk(mime, src, plan)
	if err == errNoDecoder || err == errNarrowHEIC {
		return nil, 0, 0, err
	}
	if err != nil {
		return nil, 0, 0, invalid("cannot decode the original: %v", err)
	}
	out := orientImage(areaScale(from, p.dw, p.dh), orient)
	var buf bytes.Buffer
	switch spec.f {
	case formatJPEG:
		err = jpeg.Encode(&buf, out, &jpeg.Options{Quality: 85})
	case formatPNG:
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, out)
	case formatWebP:
		err = webp.Encode(&buf, out, webp.Options{Quality: 80, Method: 4})
	case formatAVIF:
		// libavif with aom in WebAssembly; the fastest speed, since a
		// thumbnail is made while its first viewer waits.
		err = avif.Encode(&buf, out, avif.Options{Quality: 60, QualityAlpha: 60, Speed: avif.DefaultSpeed})
	default:
		err = errors.New("imgbed: no encoder")
	}
	return buf.Bytes(), p.w, p.h, err
}

// decodeShrunk decodes the part of the image in r that plan picks,
// averaged down by its factor. Non-interlaced PNGs are streamed row by
// row (png_stream.go), so their memory is a few rows whatever their
// size; JPEGs averaged by 2 or more are decoded at a reduced DCT scale
// (jpeg_stream.go); HEICs, where the system's libheif is loaded, are
// averaged out of libde265's or libheif's planes (heic_de265.go,
// heic_libheif.go); the other decoders
// give the whole image first.
func decodeShrunk(mime string, r io.Reader, plan shrinkPlan) (image.Image, error) {
	if mime == formatJPEG.mime() {
		br := bufio.NewReaderSize(r, 64<<10)
		img, err := streamJPEG(br, plan)
		var fb *jpegFallback
		if !errors.As(err, &fb) {
			return img, err
		}
		r = io.MultiReader(bytes.NewReader(fb.head), br)
	}
	if mime == formatHEIC.mime() {
		data, err := io.ReadAll(r) // at most MaxBytes: the original was checked
		if err != nil {
			return nil, err
		}
		img, route := heicRoute(data)
		if img.oversized {
			return nil, invalid("a HEVC picture is larger than the HEIC's image size (ispe)")
		}
		switch route {
		case heicDe265:
			return decodeHEICDe265(data, img, plan)
		case heicLibheif:
			return decodeHEICLibheif(data, plan)
		}
		r = bytes.NewReader(data)
	}
	if mime == formatPNG.mime() {
		br := bufio.NewReader(r)
		if head, err := br.Peek(29); err == nil && !pngInterlaced(head) {
			return streamPNG(br, plan)
		}
		r = br
	}
	img, err := decodeImage(mime, r)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	crop, k := plan(b.Dx(), b.Dy())
	if sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		img = sub.SubImage(crop.Add(b.Min))
	}
	if k >= 2 {
		return boxShrink(img, k), nil
	}
	return img, nil
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
		return decodeWebP(r)
	case formatAVIF.mime():
		// libavif in WebAssembly (wazero), no cgo: memory is the wasm
		// instance's, freed when the decode returns. libavif refuses
		// frames over 16384×16384 itself; the upload's pixel limit
		// already held the declared size.
		return avif.Decode(r)
	case formatHEIC.mime():
		return decodeHEIC(r)
	}
	return nil, errNoDecoder
}

// decodeWebP decodes a still WebP in pure Go; x/image/webp reads no
// animation, so an animated one is decoded by libwebp (WebAssembly, the
// package the encoder comes from), whose first frame is the thumbnail.
func decodeWebP(r io.Reader) (image.Image, error) {
	data, err := io.ReadAll(r) // at most MaxBytes: the original was checked
	if err != nil {
		return nil, err
	}
	img, err := xwebp.Decode(bytes.NewReader(data))
	if err != nil && animatedWebP(data) {
		return webp.Decode(bytes.NewReader(data))
	}
	return img, err
}

// decodeHEIC decodes with libheif and libde265 in WebAssembly, as AVIF,
// where the system's libheif is not loaded (heic_libheif.go).
// libheif applies the image's rotation and mirroring (irot, imir)
// itself, so no EXIF orientation is applied after it.
//
// The package's WebAssembly side copies planes with libheif's strides,
// which are never under 64 bytes, while its Go side reads them at the
// width rounded up to 16: planes narrower than 64 bytes come out
// scrambled (measured on heif-enc files 9 to 504 pixels wide; wider
// planes match). Such images are refused rather than shown wrong.
func decodeHEIC(r io.Reader) (image.Image, error) {
	img, err := heic.Decode(r)
	if err != nil {
		return nil, err
	}
	narrowest := img.Bounds().Dx() // bytes in the narrowest plane's row
	switch m := img.(type) {
	case *image.YCbCr:
		if m.SubsampleRatio != image.YCbCrSubsampleRatio444 {
			narrowest = (narrowest + 1) / 2
		}
	case *image.RGBA, *image.NRGBA:
		narrowest *= 4
	}
	if narrowest < minHEICPlane {
		return nil, errNarrowHEIC
	}
	return img, nil
}

// minHEICPlane is the narrowest plane row, in bytes, decodeHEIC trusts.
const minHEICPlane = 64

var errNarrowHEIC = &apiError{http.StatusUnprocessableEntity, "invalid", "HEIC images under 128 pixels wide get no thumbnails (the decoder garbles them); the original is served as sent"}

// errNoDecoder: the type has no decoder in this build.
var errNoDecoder = &apiError{http.StatusUnsupportedMediaType, "type", "this build renders no thumbnails of this type"}
