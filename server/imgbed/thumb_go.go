//go:build !vips

package imgbed

import (
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
	"github.com/gen2brain/webp"
	xdraw "golang.org/x/image/draw"
	xwebp "golang.org/x/image/webp"
)

// renderThumb decodes the original in src, scales it to width (never up),
// applies its EXIF orientation and encodes it as f. This is the pure-Go
// renderer of the default build; thumb_vips.go is the libvips one.
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
	if err == errNoHEICDecoder {
		return nil, 0, 0, err
	}
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
	// A Catmull-Rom filter over a whole photo costs seconds; averaging
	// k×k blocks first, down to about twice the target width, costs tens
	// of milliseconds and leaves the filter little to do, with no
	// aliasing (a box average is a proper low-pass for integer factors).
	var from image.Image = img
	if k := b.Dx() / (2 * dw); k >= 2 {
		from = boxShrink(img, k)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), from, from.Bounds(), draw.Src, nil)
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

// boxShrink averages the k×k blocks of src, converting k rows at a time
// so that memory stays at one strip whatever the image size. Premultiplied
// RGBA averages transparent pixels correctly. The last Dx()%k columns and
// Dy()%k rows, fewer than k pixels, are left out.
func boxShrink(src image.Image, k int) *image.RGBA {
	b := src.Bounds()
	w, h := b.Dx()/k, b.Dy()/k
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	strip := image.NewRGBA(image.Rect(0, 0, w*k, k))
	sums := make([]uint32, 4*w)
	n := uint32(k * k)
	for y := 0; y < h; y++ {
		draw.Draw(strip, strip.Rect, src, image.Pt(b.Min.X, b.Min.Y+y*k), draw.Src)
		clear(sums)
		for r := 0; r < k; r++ {
			row := strip.Pix[r*strip.Stride : r*strip.Stride+4*w*k]
			for x := 0; x < w; x++ {
				block := row[4*k*x : 4*k*(x+1)]
				s := sums[4*x : 4*x+4]
				for i := 0; i < len(block); i += 4 {
					s[0] += uint32(block[i])
					s[1] += uint32(block[i+1])
					s[2] += uint32(block[i+2])
					s[3] += uint32(block[i+3])
				}
			}
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for i, v := range sums {
			out[i] = uint8((v + n/2) / n)
		}
	}
	return dst
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
		return nil, errNoHEICDecoder
	}
	return nil, errors.New("unsupported type")
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

// errNoHEICDecoder: no HEVC decoder is written in Go or shipped as
// WebAssembly by a well-kept library, so the pure-Go build stores HEIC
// originals and serves them as sent but renders no thumbnails of them;
// the vips build does (libvips with libheif).
var errNoHEICDecoder = &apiError{http.StatusUnsupportedMediaType, "type", "this build renders no HEIC thumbnails (build with -tags vips)"}

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
