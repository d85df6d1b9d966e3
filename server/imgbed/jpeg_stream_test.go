package imgbed

import (
	"bufio"
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// photoLike is a w×h picture with smooth gradients, soft edges and
// a little noise, closer to a photo than gradient's hard stripes.
func photoLike(w, h int, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	cx, cy := float64(w)*0.6, float64(h)*0.4
	for y := range h {
		for x := range w {
			dx, dy := float64(x)-cx, float64(y)-cy
			ring := uint8(128 + 100*sinApprox((dx*dx+dy*dy)/float64(w*w)*40))
			n := uint8(rng.IntN(9))
			img.Pix[y*img.Stride+4*x] = uint8(x*200/w) + n
			img.Pix[y*img.Stride+4*x+1] = ring
			img.Pix[y*img.Stride+4*x+2] = uint8(y*220/h) + n
			img.Pix[y*img.Stride+4*x+3] = 0xff
		}
	}
	return img
}

// sinApprox is a cheap periodic wave in [-1, 1] (a triangle).
func sinApprox(v float64) float64 {
	f := v - 2*float64(int(v/2))
	if f < 1 {
		return 2*f - 1
	}
	return 3 - 2*f
}

// vipsJPEGs encodes img with libjpeg through the vips command, once per
// option set (progressive, 4:4:4, restart markers, optimized scans),
// where the command is installed.
func vipsJPEGs(t testing.TB, img image.Image) map[string][]byte {
	vips, err := exec.LookPath("vips")
	if err != nil {
		t.Logf("no vips command (libvips-tools): libjpeg-made files untested")
		return nil
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src.png")
	if err := os.WriteFile(src, encodePNG(t, img), 0o644); err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for name, opts := range map[string][]string{
		"libjpeg-420":         {"--Q", "85"},
		"libjpeg-444-restart": {"--Q", "90", "--subsample-mode", "off", "--restart-interval", "3"},
		"libjpeg-progressive": {"--Q", "80", "--interlace"},
		"libjpeg-prog-scans":  {"--Q", "80", "--interlace", "--optimize-scans", "--optimize-coding"},
	} {
		dst := filepath.Join(dir, name+".jpg")
		if b, err := exec.Command(vips, append([]string{"jpegsave", src, dst}, opts...)...).CombinedOutput(); err != nil {
			t.Fatalf("vips %s: %v %s", name, err, b)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// renderBoth renders data's crop averaged by k both ways, resampled to
// the output size planRender gives k: streamJPEG, and image/jpeg's full
// decode averaged in s×s blocks (the DCT scale the stream takes), then
// by what is left of k. streamed is false where
// streamJPEG left the file to image/jpeg.
// full is image/jpeg's decode of data.
func renderBoth(t *testing.T, data []byte, full image.Image, crop image.Rectangle, k int) (want, got *image.NRGBA, streamed bool) {
	t.Helper()
	b := full.Bounds()
	br := bufio.NewReader(bytes.NewReader(data))
	img, err := streamJPEG(br, func(sw, sh int) (image.Rectangle, int) {
		if sw != b.Dx() || sh != b.Dy() {
			t.Fatalf("plan saw %dx%d, not %v", sw, sh, b)
		}
		return crop, k
	})
	var fb *jpegFallback
	if errors.As(err, &fb) {
		// What decodeShrunk then gives image/jpeg decodes to the same
		// image.
		again, err := jpeg.Decode(io.MultiReader(bytes.NewReader(fb.head), br))
		if err != nil {
			t.Fatalf("the fallback's stream does not decode: %v", err)
		}
		if !sameImage(again, full) {
			t.Fatal("the fallback's stream decodes differently")
		}
		return nil, nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jpegStreamScale(data, k)
	sub := full.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(crop)
	ref := boxShrink(boxShrink(sub, s), max(1, k/s))
	g := img.(*image.RGBA)
	if g.Rect != ref.Rect {
		t.Fatalf("crop %v, k %d: streamed %v, want %v", crop, k, g.Rect, ref.Rect)
	}
	// Compared at the output size planRender gives such a factor.
	dw, dh := max(1, crop.Dx()/(2*k)), max(1, crop.Dy()/(2*k))
	return areaScale(ref, dw, dh), areaScale(g, dw, dh), true
}

func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// pixelDiff returns the mean and the largest absolute difference of
// the colour channels of two images of one size.
func pixelDiff(t *testing.T, a, b *image.NRGBA) (mean float64, most int) {
	t.Helper()
	if a.Rect != b.Rect {
		t.Fatalf("sizes differ: %v, %v", a.Rect, b.Rect)
	}
	sum, n := 0, 0
	for i := range a.Pix {
		if i%4 == 3 {
			continue
		}
		d := int(a.Pix[i]) - int(b.Pix[i])
		d = max(d, -d)
		sum += d
		most = max(most, d)
		n++
	}
	return float64(sum) / float64(n), most
}

// TestStreamJPEGMatchesDecoder: every JPEG of Go's image testdata (each
// subsampling, progressive, restart markers, separate DC scans, gray,
// CMYK and RGB), Go-encoded ones and, where the vips command is
// installed, libjpeg-made ones (4:4:4 with restarts, progressive with
// optimized scans) render, through streamJPEG at random crops and
// factors, to what image/jpeg's full decode and the block average give,
// within the limits below. Files it cannot stream (CMYK,
// RGB, progressive below 1/8) fall back with a head that image/jpeg
// decodes with the rest.
func TestStreamJPEGMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	files := make(map[string][]byte)
	for name, b := range goTestdata(t) {
		if strings.HasSuffix(name, ".jpeg") && !strings.Contains(name, "truncated") {
			files[name] = b
		}
	}
	photo := photoLike(1200, 900, 1)
	files["go-420"] = encodeJPEG(t, photo)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	files["go-gray"] = encodeJPEG(t, gray)
	for name, b := range vipsJPEGs(t, photo) {
		files[name] = b
	}
	renders := 8 // a file
	if raceEnabled {
		renders = 2 // the full decodes take minutes under the race detector
	}
	streamed, fellBack := 0, 0
	for name, data := range files {
		full, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, h := full.Bounds().Dx(), full.Bounds().Dy()
		gray := full.ColorModel() == color.GrayModel
		for range renders {
			// Crops on the block grid, their sides multiples of 8k, so
			// that both ways average the same source pixels (off the
			// grid, an edge moves by up to half a scaled pixel, a large
			// part of Go's 150-pixel-wide files).
			k := 2 + rng.IntN(min(w, h)/16-1)
			for 8*k > min(w, h) {
				k--
			}
			cw, ch := 8*k*(1+rng.IntN(w/(8*k))), 8*k*(1+rng.IntN(h/(8*k)))
			x0, y0 := 8*rng.IntN((w-cw)/8+1), 8*rng.IntN((h-ch)/8+1)
			crop := image.Rect(x0, y0, x0+cw, y0+ch)
			want, got, ok := renderBoth(t, data, full, crop, k)
			if !ok {
				fellBack++
				continue
			}
			streamed++
			// At 1/8 a block is its DC coefficient, exactly its mean:
			// a gray image matches to rounding. Elsewhere the reduced
			// transforms (and, in progressive colour files, chroma
			// blocks twice the size of the pixels they feed) differ
			// from a box average on detail: up to a mean of 10.2 on
			// these files (4:1:0 progressive, whose chroma blocks are
			// 32 pixels wide), where a wrong block, component or offset
			// gives 30 and more.
			limit := 12.0
			if s, _ := jpegStreamScale(data, k); s == 8 && gray {
				limit = 0.5
			}
			mean, most := pixelDiff(t, want, got)
			if mean > limit {
				t.Errorf("%s, crop %v, k %d: mean difference %.2f (largest %d)", name, crop, k, mean, most)
			}
		}
	}
	if streamed < 12*renders || fellBack < renders {
		t.Fatalf("streamed %d renders, fell back on %d", streamed, fellBack)
	}
}

// TestStreamJPEGScales: the scale follows the factor (up to twice it,
// at most 8, and nothing below a factor of 2), a progressive file streams at 1/8 only, and
// jpegStreamScale, which the render budget asks, agrees with what
// streamJPEG does.
func TestStreamJPEGScales(t *testing.T) {
	photo := photoLike(200, 160, 2)
	base := encodeJPEG(t, photo)
	files := map[string][]byte{"baseline": base}
	if prog, ok := goTestdata(t)["video-001.progressive.jpeg"]; ok {
		files["progressive"] = prog
	}
	for name, data := range files {
		for k, want := range map[int]int{1: 0, 2: 4, 3: 4, 4: 8, 7: 8, 20: 8} {
			if name == "progressive" && want != 8 {
				want = 0
			}
			scale, _ := jpegStreamScale(data, k)
			if scale != want {
				t.Errorf("%s, k %d: scale %d, want %d", name, k, scale, want)
			}
			_, err := streamJPEG(bufio.NewReader(bytes.NewReader(data)), func(sw, sh int) (image.Rectangle, int) {
				return image.Rect(0, 0, sw, sh), k
			})
			var fb *jpegFallback
			if fell := errors.As(err, &fb); fell != (want == 0) || !fell && err != nil {
				t.Errorf("%s, k %d: %v", name, k, err)
			}
		}
	}
}

// bigJPEGs caches bigJPEG's files by side: a 50-megapixel one takes
// seconds to encode, many under load, and -count runs a test again.
var bigJPEGs sync.Map

// bigJPEG encodes a side×side 4:2:0 colour JPEG of smooth planes (~2 MB
// at 50 megapixels).
func bigJPEG(t testing.TB, side int) []byte {
	if b, ok := bigJPEGs.Load(side); ok {
		return b.([]byte)
	}
	img := image.NewYCbCr(image.Rect(0, 0, side, side), image.YCbCrSubsampleRatio420)
	for y := range side {
		for x := range side {
			img.Y[y*img.YStride+x] = uint8((x + y) * 255 / (2 * side))
		}
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = uint8(i%200+20), 128
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	bigJPEGs.Store(side, b.Bytes())
	return b.Bytes()
}

// TestStreamJPEGBoundedHeap: a 50-megapixel JPEG's 256-pixel thumbnail
// and its 1024-pixel cover render (the factors renders plan) take at
// most the scaled image's 12.5 MB of heap, where image/jpeg's full decode takes 75 MB; and the
// render budget's estimate for them is as small.
func TestStreamJPEGBoundedHeap(t *testing.T) {
	if testing.Short() && raceEnabled {
		t.Skip("seconds of encoding under the race detector")
	}
	const side = 7072
	data := bigJPEG(t, side)
	for _, spec := range []renderSpec{{w: 256, fit: fitWidth}, {w: 1024, h: 1024, fit: fitCover}} {
		p := planRender(spec, 1, side, side)
		var img image.Image
		var err error
		grew := peakHeap(func() {
			img, err = streamJPEG(bufio.NewReader(bytes.NewReader(data)), func(int, int) (image.Rectangle, int) { return p.crop, p.k })
		})
		if err != nil {
			t.Fatal(err)
		}
		if grew > 24<<20 {
			t.Errorf("%+v: streaming a 50-megapixel JPEG took %d MiB of heap", spec, grew>>20)
		}
		if b := img.Bounds(); b.Dx() < p.dw || b.Dy() < p.dh {
			t.Errorf("%+v: streamed %v, smaller than the %dx%d output", spec, b, p.dw, p.dh)
		}
		if cost := renderCost(formatJPEG.mime(), data[:min(len(data), exifHeadLen)], side, side, int64(len(data)), p, formatWebP); streamsJPEG && cost > 64<<20 {
			t.Errorf("%+v: the budget reserves %d MiB", spec, cost>>20)
		}
	}
}

// TestStreamJPEGHostile: truncated, corrupted and lying JPEGs fail with
// an error or decode to something, never panic; a 50-megapixel frame
// whose data stops at once (a bomb of a few hundred bytes) decodes, as
// libjpeg does, to the flat picture its missing data pads to, within a
// few MiB of heap; frames too large to stream are refused before
// anything is allocated for them.
func TestStreamJPEGHostile(t *testing.T) {
	good := encodeJPEG(t, photoLike(120, 90, 3))
	whole := func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), 8 }
	half := func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), 2 }
	for name, data := range map[string][]byte{
		"cut in half":   good[:len(good)/2],
		"header only":   good[:bytes.Index(good, []byte{0xff, 0xda})],
		"soi only":      good[:2],
		"not a jpeg":    []byte("GIF89a........"),
		"no scan":       append(good[:bytes.Index(good, []byte{0xff, 0xda})], 0xff, 0xd9),
		"huge frame":    sofSized(good, 65535, 65535),
		"bad huffman":   corruptDHT(good),
		"lying segment": append([]byte{0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff}, good[2:]...),
	} {
		for _, plan := range []shrinkPlan{whole, half} {
			_, err := streamJPEG(bufio.NewReader(bytes.NewReader(data)), plan)
			var fb *jpegFallback
			if err == nil || errors.As(err, &fb) {
				t.Errorf("%s: no error (%v)", name, err)
			}
		}
	}
	// A zero height (the DNL marker's) is left to image/jpeg, which
	// refuses it.
	br := bufio.NewReader(bytes.NewReader(sofSized(good, 100, 0)))
	_, err := streamJPEG(br, half)
	var fb *jpegFallback
	if !errors.As(err, &fb) {
		t.Fatalf("zero height: %v", err)
	}
	if _, err := jpeg.Decode(io.MultiReader(bytes.NewReader(fb.head), br)); err == nil {
		t.Fatal("zero height: image/jpeg decoded it")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 { // random damage: an error or an image, no panic
		data := bytes.Clone(good)
		for range 1 + rng.IntN(4) {
			data[rng.IntN(len(data))] = byte(rng.Uint32())
		}
		streamJPEG(bufio.NewReader(bytes.NewReader(data)), half)
	}
	bomb := sofSized(bigJPEG(t, 64), 7072, 7072)
	bomb = append(bomb[:bytes.Index(bomb, []byte{0xff, 0xda})+14], 0xff, 0xd9)
	grew := peakHeap(func() {
		_, err = streamJPEG(bufio.NewReader(bytes.NewReader(bomb)), func(sw, sh int) (image.Rectangle, int) {
			return image.Rect(0, 0, sw, sh), 27
		})
	})
	t.Logf("a %d-byte 50-megapixel bomb: %v, %d KiB of heap", len(bomb), err, grew>>10)
	if grew > 8<<20 {
		t.Fatalf("a 50-megapixel bomb took %d MiB of heap", grew>>20)
	}
}

// sofSized returns data with its frame header declaring w×h.
func sofSized(data []byte, w, h int) []byte {
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte{0xff, 0xc0})
	out[i+5], out[i+6], out[i+7], out[i+8] = byte(h>>8), byte(h), byte(w>>8), byte(w)
	return out
}

// corruptDHT makes the first Huffman table claim more codes of length
// 1 than exist.
func corruptDHT(data []byte) []byte {
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte{0xff, 0xc4})
	out[i+5] = 3
	return out
}

// TestRenderJPEGScaled: through the renderer, a big JPEG's thumbnail
// (streamed at 1/8) equals the full decode's within the tolerance, and
// a CMYK one (left to image/jpeg) still renders.
func TestRenderJPEGScaled(t *testing.T) {
	if vipsBuild {
		t.Skip("the vips build renders with libvips")
	}
	photo := photoLike(2400, 1600, 4)
	data := encodeJPEG(t, photo)
	spec := renderSpec{w: 256, fit: fitWidth, f: formatPNG}
	got, w, h, err := renderThumb(bytes.NewReader(data), formatJPEG.mime(), spec)
	if err != nil {
		t.Fatal(err)
	}
	p := planRender(spec, 1, 2400, 1600)
	if s, _ := jpegStreamScale(data, p.k); s < 4 || w != 256 || h != 170 {
		t.Fatalf("plan %+v, rendered %dx%d", p, w, h)
	}
	full, _ := jpeg.Decode(bytes.NewReader(data))
	want := areaScale(boxShrink(full, p.k), p.dw, p.dh)
	img, err := decodePNGNRGBA(got)
	if err != nil {
		t.Fatal(err)
	}
	if mean, most := pixelDiff(t, want, img); mean > 2 {
		t.Fatalf("thumbnail differs from the full decode's: mean %.2f, largest %d", mean, most)
	}
	cmyk := goTestdata(t)["video-001.cmyk.jpeg"]
	if _, _, _, err := renderThumb(bytes.NewReader(cmyk), formatJPEG.mime(), renderSpec{w: 64, fit: fitWidth, f: formatPNG}); err != nil {
		t.Fatalf("CMYK: %v", err)
	}
}

// decodePNGNRGBA decodes a PNG into NRGBA.
func decodePNGNRGBA(data []byte) (*image.NRGBA, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out := image.NewNRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			out.Set(x, y, color.NRGBAModel.Convert(img.At(x, y)))
		}
	}
	return out, nil
}
