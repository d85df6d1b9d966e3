package imgbed

import (
	"bytes"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamPNGMatchesDecoder: for every non-interlaced file of the PNG
// suite in Go's source tree (each colour type and bit depth, palettes
// with and without tRNS, every filter) and random crops and factors,
// streamPNG gives exactly what image/png and boxShrink give.
func TestStreamPNGMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	files := goTestdata(t)
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	suite := filepath.Join(strings.TrimSpace(string(root)), "src", "image", "png", "testdata", "pngsuite")
	entries, err := os.ReadDir(suite)
	if err != nil {
		t.Skipf("no PNG suite: %v", err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(suite, e.Name())); err == nil {
			files[e.Name()] = b
		}
	}
	tried := 0
	for name, data := range files {
		if !strings.HasSuffix(name, ".png") || len(data) < 29 || pngInterlaced(data) {
			continue
		}
		want, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			continue // the suite's broken files: streamPNG must fail too, or at least not panic
		}
		tried++
		b := want.Bounds()
		for range 6 {
			x0, y0 := rng.IntN(b.Dx()), rng.IntN(b.Dy())
			crop := image.Rect(x0, y0, x0+1+rng.IntN(b.Dx()-x0), y0+1+rng.IntN(b.Dy()-y0))
			k := 1 + rng.IntN(min(crop.Dx(), crop.Dy(), 4))
			got, err := streamPNG(bytes.NewReader(data), func(sw, sh int) (image.Rectangle, int) {
				if sw != b.Dx() || sh != b.Dy() {
					t.Fatalf("%s: plan saw %dx%d", name, sw, sh)
				}
				return crop, k
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			exp := boxShrink(want.(interface {
				SubImage(image.Rectangle) image.Image
			}).SubImage(crop), k)
			g := got.(*image.RGBA)
			if g.Rect != exp.Rect || !bytes.Equal(g.Pix, exp.Pix) {
				t.Fatalf("%s, crop %v, k %d: differs from image/png (%v vs %v)", name, crop, k, g.Rect, exp.Rect)
			}
		}
	}
	if tried < 20 {
		t.Fatalf("only %d PNG suite files found", tried)
	}
}

// TestStreamPNGHostile: truncated, corrupted and lying PNGs fail with an
// error, never a panic, and a 50-megapixel one streams in a few MiB.
func TestStreamPNGHostile(t *testing.T) {
	good := encodePNG(t, gradient(64, 48))
	whole := func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), 2 }
	for name, data := range map[string][]byte{
		"cut in half":    good[:len(good)/2],
		"rows missing":   craftPNG(200, 200, 100),
		"signature only": good[:8],
		"bad crc":        append(append(append([]byte{}, good[:30]...), good[30]^1), good[31:]...),
	} {
		if _, err := streamPNG(bytes.NewReader(data), whole); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	bomb := craftPNG(7072, 7072, 7072) // 50 megapixels of zeros: a few KB
	var err error
	grew := peakHeap(func() {
		_, err = streamPNG(bytes.NewReader(bomb), func(sw, sh int) (image.Rectangle, int) {
			return image.Rect(0, 0, sw, sh), 27 // down to about 256 wide
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if grew > 8<<20 {
		t.Fatalf("streaming a 50-megapixel PNG took %d MiB of heap", grew>>20)
	}
}
