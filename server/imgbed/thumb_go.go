//go:build !vips

package imgbed

import (
	"bufio"
	"bytes"
	"errors"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"

	"github.com/gen2brain/avif"
	"github.com/gen2brain/heic"
	"github.com/gen2brain/webp"
	xdraw "golang.org/x/image/draw"
	xwebp "golang.org/x/image/webp"
)

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
	dst := image.NewNRGBA(image.Rect(0, 0, p.dw, p.dh))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), from, from.Bounds(), draw.Src, nil)
	out := orientImage(dst, orient)
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

// shrinkPlan chooses, from a source's size, the part of it to render
// and the factor k to average it down by first.
type shrinkPlan func(sw, sh int) (crop image.Rectangle, k int)

// decodeShrunk decodes the part of the image in r that plan picks,
// averaged down by its factor. Non-interlaced PNGs are streamed row by
// row (png_stream.go), so their memory is a few rows whatever their
// size; the other decoders give the whole image first.
func decodeShrunk(mime string, r io.Reader, plan shrinkPlan) (image.Image, error) {
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

// boxShrink averages the k×k blocks of src, converting k rows at a time
// so that memory stays at one strip whatever the image size. Premultiplied
// RGBA averages transparent pixels correctly. The last Dx()%k columns and
// Dy()%k rows, fewer than k pixels, are left out.
func boxShrink(src image.Image, k int) *image.RGBA {
	b := src.Bounds()
	avg := newBlockAverager(b.Dx()/k, b.Dy()/k, k)
	for y := 0; y < avg.dst.Rect.Dy(); y++ {
		draw.Draw(avg.strip, avg.strip.Rect, src, image.Pt(b.Min.X, b.Min.Y+y*k), draw.Src)
		avg.addStrip()
	}
	return avg.dst
}

// blockAverager averages strips of k rows, w×k pixels wide, each into
// one row of dst.
type blockAverager struct {
	dst   *image.RGBA
	strip *image.RGBA // filled by the caller before each addStrip
	k     int
	sums  []uint32
	y     int
}

func newBlockAverager(w, h, k int) *blockAverager {
	return &blockAverager{
		dst:   image.NewRGBA(image.Rect(0, 0, w, h)),
		strip: image.NewRGBA(image.Rect(0, 0, w*k, k)),
		k:     k,
		sums:  make([]uint32, 4*w),
	}
}

func (a *blockAverager) addStrip() {
	k, w := a.k, a.dst.Rect.Dx()
	n := uint32(k * k)
	clear(a.sums)
	for r := 0; r < k; r++ {
		row := a.strip.Pix[r*a.strip.Stride : r*a.strip.Stride+4*w*k]
		for x := 0; x < w; x++ {
			block := row[4*k*x : 4*k*(x+1)]
			s := a.sums[4*x : 4*x+4]
			for i := 0; i < len(block); i += 4 {
				s[0] += uint32(block[i])
				s[1] += uint32(block[i+1])
				s[2] += uint32(block[i+2])
				s[3] += uint32(block[i+3])
			}
		}
	}
	out := a.dst.Pix[a.y*a.dst.Stride : a.y*a.dst.Stride+4*w]
	for i, v := range a.sums {
		out[i] = uint8((v + n/2) / n)
	}
	a.y++
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

// animatedWebP reports whether data is an extended WebP with the
// animation flag.
func animatedWebP(data []byte) bool {
	return len(data) >= 21 && string(data[12:16]) == "VP8X" && data[20]&0x02 != 0
}

// decodeHEIC decodes with libheif and libde265 in WebAssembly, as AVIF.
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
