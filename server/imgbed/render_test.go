package imgbed

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/gen2brain/avif"
	"github.com/gen2brain/webp"
)

// bands is w×h of four vertical bands, red, green, blue and yellow,
// so a crop shows which bands it kept.
func bands(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	cols := []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}
	for x := 0; x < w; x++ {
		draw.Draw(img, image.Rect(x, 0, x+1, h), image.NewUniform(cols[x*4/w]), image.Point{}, draw.Src)
	}
	return img
}

// decodeAny decodes a render in any output format.
func decodeAny(t *testing.T, mime string, body []byte) image.Image {
	t.Helper()
	var img image.Image
	var err error
	switch mime {
	case "image/webp":
		img, err = webp.Decode(bytes.NewReader(body))
	case "image/avif":
		img, err = avif.Decode(bytes.NewReader(body))
	default:
		img, _, err = image.Decode(bytes.NewReader(body))
	}
	if err != nil {
		t.Fatalf("%s render: %v", mime, err)
	}
	return img
}

// near reports whether c is within 40 of want in each channel (lossy
// formats shift colours a little; the bands are far apart).
func near(c color.Color, want color.NRGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) bool { return intAbs(int(x>>8)-int(y)) <= 40 }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

func TestRenderGeometry(t *testing.T) {
	for _, c := range []struct {
		spec   renderSpec
		sw, sh int
		crop   image.Rectangle
		w, h   int
	}{
		{renderSpec{w: 256}, 1000, 500, image.Rect(0, 0, 1000, 500), 256, 128},
		{renderSpec{w: 256}, 100, 50, image.Rect(0, 0, 100, 50), 100, 50}, // never enlarged
		{renderSpec{w: 200, h: 200, fit: fitContain}, 1000, 500, image.Rect(0, 0, 1000, 500), 200, 100},
		{renderSpec{w: 200, h: 50, fit: fitContain}, 1000, 500, image.Rect(0, 0, 1000, 500), 100, 50},
		{renderSpec{h: 50, fit: fitContain}, 1000, 500, image.Rect(0, 0, 1000, 500), 100, 50},
		{renderSpec{w: 5000, h: 5000, fit: fitContain}, 1000, 500, image.Rect(0, 0, 1000, 500), 1000, 500},
		{renderSpec{w: 200, h: 200, fit: fitCover}, 1000, 500, image.Rect(250, 0, 750, 500), 200, 200},
		{renderSpec{w: 300, h: 100, fit: fitCover}, 600, 600, image.Rect(0, 200, 600, 400), 300, 100},
		{renderSpec{w: 2000, h: 1000, fit: fitCover}, 600, 600, image.Rect(0, 150, 600, 450), 600, 300},
	} {
		crop, w, h := c.spec.geometry(c.sw, c.sh)
		if crop != c.crop || w != c.w || h != c.h {
			t.Errorf("%+v on %dx%d: %v %dx%d, want %v %dx%d", c.spec, c.sw, c.sh, crop, w, h, c.crop, c.w, c.h)
		}
	}
}

// TestSourceRect: cropping the shown image equals showing the crop of
// the stored one, for every orientation and random crops.
func TestSourceRect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		o := 1 + i%8
		sw, sh := 1+rng.IntN(9), 1+rng.IntN(9)
		src := image.NewNRGBA(image.Rect(0, 0, sw, sh))
		for j := range src.Pix {
			src.Pix[j] = uint8(rng.IntN(256))
		}
		shown := orientImage(src, o)
		x0, y0 := rng.IntN(shown.Rect.Dx()), rng.IntN(shown.Rect.Dy())
		r := image.Rect(x0, y0, x0+1+rng.IntN(shown.Rect.Dx()-x0), y0+1+rng.IntN(shown.Rect.Dy()-y0))
		want := shown.SubImage(r).(*image.NRGBA)
		sr := sourceRect(r, o, sw, sh)
		part := image.NewNRGBA(image.Rect(0, 0, sr.Dx(), sr.Dy()))
		draw.Draw(part, part.Rect, src, sr.Min, draw.Src)
		got := orientImage(part, o)
		if got.Rect.Dx() != r.Dx() || got.Rect.Dy() != r.Dy() {
			t.Fatalf("orientation %d, crop %v of %dx%d: source %v turns into %v", o, r, sw, sh, sr, got.Rect)
		}
		for y := 0; y < r.Dy(); y++ {
			for x := 0; x < r.Dx(); x++ {
				if got.NRGBAAt(x, y) != want.NRGBAAt(r.Min.X+x, r.Min.Y+y) {
					t.Fatalf("orientation %d, crop %v of %dx%d: pixel %d,%d differs", o, r, sw, sh, x, y)
				}
			}
		}
	}
}

// TestRenderLinks: exact sizes, cover crops that keep the centre,
// contain fits with no bars, every output format by its magic bytes, a
// second GET read from the engine, and the bounds on what may be asked.
func TestRenderLinks(t *testing.T) {
	th := newTestHost(t, Config{RendersPerImage: 8})
	_, r := th.uploadRaw(t, encodeJPEG(t, bands(1200, 600)), "image/jpeg")
	base := th.srv.URL + "/t/" + r.Data.Key
	magic := map[string]func([]byte) bool{
		"image/jpeg": func(b []byte) bool { return bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) },
		"image/png":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) },
		"image/webp": func(b []byte) bool { return len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" },
		"image/avif": func(b []byte) bool { return sniffHEIF(b) == formatAVIF },
	}
	green, blue := color.NRGBA{0, 255, 0, 255}, color.NRGBA{0, 0, 255, 255}
	for _, c := range []struct {
		query, mime string
		w, h        int
		// left and right are the bands at the render's edges.
		left, right color.NRGBA
	}{
		{".jpg?w=200&h=200&fit=cover", "image/jpeg", 200, 200, green, blue},
		{".jpg?w=200&h=200", "image/jpeg", 200, 100, color.NRGBA{255, 0, 0, 255}, color.NRGBA{255, 255, 0, 255}},
		{".jpg?h=50&fit=contain", "image/jpeg", 100, 50, color.NRGBA{255, 0, 0, 255}, color.NRGBA{255, 255, 0, 255}},
		{".jpg?w=90&h=120&fit=cover&format=png", "image/png", 90, 120, green, blue},
		{".jpg?w=120&h=120&fit=cover&format=webp", "image/webp", 120, 120, green, blue},
		{".png?w=120&h=120&fit=cover&format=avif", "image/avif", 120, 120, green, blue},
		{".avif?w=64&h=64&fit=cover", "image/avif", 64, 64, green, blue},
		{".jpg?w=2000&h=2000&fit=cover", "image/jpeg", 600, 600, green, blue}, // never enlarged
	} {
		resp, body := th.get(t, base+c.query)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.mime || !magic[c.mime](body) {
			t.Fatalf("%s: %d %s %.60q", c.query, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		img := decodeAny(t, c.mime, body)
		b := img.Bounds()
		if b.Dx() != c.w || b.Dy() != c.h {
			t.Fatalf("%s: %dx%d, want %dx%d", c.query, b.Dx(), b.Dy(), c.w, c.h)
		}
		// A few pixels in: a cover crop's edges fall on band boundaries
		// of the source JPEG, which libjpeg's chroma upsampling (the vips
		// build) blurs over a few pixels.
		if l, r := img.At(4, b.Dy()/2), img.At(b.Dx()-5, b.Dy()/2); !near(l, c.left) || !near(r, c.right) {
			t.Errorf("%s: edges %v %v, want %v %v", c.query, l, r, c.left, c.right)
		}
		made := counterValue(th.metrics.thumbsMade)
		resp2, body2 := th.get(t, base+c.query)
		if resp2.StatusCode != 200 || !bytes.Equal(body, body2) || counterValue(th.metrics.thumbsMade) != made {
			t.Fatalf("%s: the second GET rendered again or differs", c.query)
		}
	}
	for query, status := range map[string]int{
		".jpg?w=3000&h=10":             400, // above RenderMaxSide
		".jpg?w=0&h=10":                400,
		".jpg?w=-5&h=10":               400,
		".jpg?w=10&h=x":                400,
		".jpg?w=100&fit=cover":         400, // cover needs both sides
		".jpg?w=100&h=100&fit=stretch": 400,
		".jpg?fit=contain":             400,
		".jpg?w=100&h=100&format=gif":  404,
		".jpg?w=100&h=100&format=heic": 404,
	} {
		if resp, body := th.get(t, base+query); resp.StatusCode != status || !strings.Contains(string(body), `"message"`) {
			t.Errorf("%s: %d %s, want %d", query, resp.StatusCode, body, status)
		}
	}
}

// TestRendersPerImage: past the limit, new sizes are still answered but
// not stored.
func TestRendersPerImage(t *testing.T) {
	th := newTestHost(t, Config{RendersPerImage: 2})
	_, r := th.uploadRaw(t, encodePNG(t, gradient(300, 200)), "image/png")
	base := th.srv.URL + "/t/" + r.Data.Key + ".png"
	for i, size := range []string{"?w=10&h=10", "?w=20&h=20", "?w=30&h=30", "?w=30&h=30", "?w=64"} {
		made := counterValue(th.metrics.thumbsMade)
		resp, body := th.get(t, base+size)
		if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d %s", size, resp.StatusCode, body)
		}
		stored := counterValue(th.metrics.thumbsMade) - made
		if want := map[bool]float64{true: 1, false: 0}[i < 2 || i == 4]; stored != want {
			t.Fatalf("%s: stored %v renders, want %v", size, stored, want)
		}
	}
}

// TestSignedRenders: with a secret, box and format renders need the
// host's signature; ladder thumbnails do not.
func TestSignedRenders(t *testing.T) {
	const secret = "s3cret"
	th := newTestHost(t, Config{RenderSecret: secret})
	_, r := th.uploadRaw(t, encodePNG(t, gradient(300, 200)), "image/png")
	path := "/t/" + r.Data.Key + ".webp?w=100&h=100&fit=cover"
	signed := SignRenderPath(secret, path)
	for _, c := range []struct {
		url    string
		status int
	}{
		{path, 403},
		{signed, 200},
		{SignRenderPath("other", path), 403},
		{strings.Replace(signed, "w=100", "w=101", 1), 403},
		{signed + "&x=1", 403},
		{SignRenderPath(secret, "/t/"+r.Data.Key+".png?format=avif&w=64"), 200},
		{"/t/" + r.Data.Key + ".png?format=avif", 403},
		{"/t/" + r.Data.Key + ".png?w=64", 200},
		{"/t/" + r.Data.Key + ".webp", 200},
	} {
		resp, body := th.get(t, th.srv.URL+c.url)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.url, resp.StatusCode, body, c.status)
		}
	}
	// The same signature, with sig moved before the other parameters.
	rest, sig := splitSig(strings.SplitN(signed, "?", 2)[1])
	req, _ := http.NewRequest("GET", th.srv.URL+"/t/"+r.Data.Key+".webp?sig="+sig+"&"+rest, nil)
	if resp, _ := th.do(t, req); resp.StatusCode != 200 {
		t.Errorf("sig first: %d", resp.StatusCode)
	}
}
