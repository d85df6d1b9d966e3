package imgbed

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// rgbGradientPNG is a w×h RGB PNG of 8 or 16 bits a sample, red rising
// to the right and green downwards, with grain of ±10 levels (a photo's
// sensor noise and texture: without it x265 codes the gradient in a few
// KB and leaves libde265's in-loop filters idle, which undercounts their
// memory), compressed a row at a time so that a 48-megapixel one never
// exists decoded here.
func rgbGradientPNG(w, h, depth int) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, byte(depth), 2, 0, 0, 0) // RGB
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	size := depth / 8
	row := make([]byte, 1+3*size*w)
	for y := range h {
		for x := range w {
			for i, v := range [3]int{x * 255 / w, y * 255 / h, 128} {
				g := uint32(x*3+i)*2654435761 ^ uint32(y)*2246822519
				v = min(255, max(0, v+int((g^g>>15)%21)-10))
				at := 1 + (3*x+i)*size
				if size == 2 {
					binary.BigEndian.PutUint16(row[at:], uint16(v*257))
				} else {
					row[at] = uint8(v)
				}
			}
		}
		zw.Write(row)
	}
	zw.Close()
	out := pngChunk([]byte("\x89PNG\r\n\x1a\n"), "IHDR", ihdr)
	out = pngChunk(out, "IDAT", z.Bytes())
	return pngChunk(out, "IEND", nil)
}

// encodeHEIC makes a w×h HEIC of rgbGradientPNG with the installed
// heif-enc (x265), of 10 bits a sample if deep, skipping the test
// without heif-enc. x265's fastest preset
// keeps a 48-megapixel encode to seconds; SAO, which that preset turns
// off and phones' encoders use, is turned back on since it makes
// libde265 hold a copy of the picture. Files are kept for the tests
// that follow in this process (read only).
func encodeHEIC(t *testing.T, w, h int, deep bool) []byte {
	t.Helper()
	key := [3]int{w, h, map[bool]int{false: 8, true: 10}[deep]}
	if b, ok := encodedHEICs.Load(key); ok {
		return b.([]byte)
	}
	enc, err := exec.LookPath("heif-enc")
	if err != nil {
		t.Skip("no heif-enc (Debian libheif-examples)")
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.png"), filepath.Join(dir, "out.heic")
	depth, args := 8, []string{"-q", "50", "-p", "preset=ultrafast", "-p", "x265:sao=1", "-o", dst, src}
	if deep {
		depth, args = 16, append([]string{"-b", "10"}, args...)
	}
	if err := os.WriteFile(src, rgbGradientPNG(w, h, depth), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(enc, args...).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc: %v %s", err, out)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	encodedHEICs.Store(key, b)
	return b
}

var encodedHEICs sync.Map // [w, h, bits] -> file

// TestHEICLargeThumbnail: a phone-sized HEIC (48 megapixels, as a
// 48-megapixel phone's "HEIF Max"; 3 in -short) made by heif-enc gets
// its thumbnail under the default render budget where libde265 decodes
// it, right in size and colour, with Go's heap holding little more than
// the file (the WebAssembly decoder's memory, 20 bytes a pixel and
// more, is Go heap); a render budget below its estimate refuses it with
// 422, and so does MaxPixels below its size, at upload.
func TestHEICLargeThumbnail(t *testing.T) {
	if !libheifLoaded() {
		t.Skip("no libheif to load: HEICs go to the WebAssembly decoder (TestAVIFAndHEICUploads)")
	}
	w, h := 8064, 6048 // a 48-megapixel phone's
	if testing.Short() {
		w, h = 2016, 1512
	}
	data := encodeHEIC(t, w, h, false)
	px := int64(w) * int64(h)
	th := newTestHost(t, Config{})
	if th.cfg.RenderMemory != DefaultRenderMemory {
		t.Fatalf("render budget %d, want the default", th.cfg.RenderMemory)
	}
	status, r := th.uploadRaw(t, data, "application/octet-stream")
	if status != 201 || r.Data.Width != w || r.Data.Height != h {
		t.Fatalf("upload: %d %+v", status, r.Data)
	}
	thumb := th.srv.URL + "/t/" + r.Data.Key + ".jpg?w=256"
	var body []byte
	var code int
	grew := peakHeap(func() {
		resp, b := th.get(t, thumb)
		code, body = resp.StatusCode, b
	})
	if code != 200 {
		t.Fatalf("thumbnail: %d %.300s", code, body)
	}
	checkGradientThumb(t, body, w, h)
	if limit := uint64(32<<20 + 4*len(data)); grew > limit {
		t.Errorf("heap grew %d MiB rendering a %d-megapixel HEIC, want under %d MiB", grew>>20, px/1e6, limit>>20)
	}
	t.Logf("%d×%d HEIC of %d bytes: thumbnail with the heap %d MiB up", w, h, len(data), grew>>20)

	small := newTestHost(t, Config{RenderMemory: heicCost(data, px, int64(len(data))) / 2})
	_, r = small.uploadRaw(t, data, "application/octet-stream")
	resp, body := small.get(t, small.srv.URL+"/t/"+r.Data.Key+".jpg?w=256")
	if resp.StatusCode != 422 || !strings.Contains(string(body), "render_memory") {
		t.Errorf("thumbnail over the render budget: %d %.300s", resp.StatusCode, body)
	}
	status, r = newTestHost(t, Config{MaxPixels: px - 1}).uploadRaw(t, data, "application/octet-stream")
	if status != 422 {
		t.Errorf("upload over MaxPixels: %d %+v", status, r)
	}
}

// checkGradientThumb checks a 4:3 rgbGradientPNG's 256-pixel JPEG
// thumbnail for size and the colours of its corners.
func checkGradientThumb(t *testing.T, body []byte, w, h int) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(body))
	if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 256*h/w {
		t.Fatalf("thumbnail: %v %v, want 256×%d", err, img.Bounds(), 256*h/w)
	}
	for _, c := range []struct {
		x, y   int
		r0, g0 uint32
	}{{2, 2, 0, 0}, {253, 2, 255, 0}, {2, 189, 0, 255}, {253, 189, 255, 255}} {
		r0, g0, b0, _ := img.At(c.x, c.y).RGBA()
		if d := max(absDiff(r0>>8, c.r0), absDiff(g0>>8, c.g0), absDiff(b0>>8, 128)); d > 32 {
			t.Errorf("pixel %d,%d is %d,%d,%d, want about %d,%d,128", c.x, c.y, r0>>8, g0>>8, b0>>8, c.r0, c.g0)
		}
	}
}

// TestHEIC10Bit: a 10-bit HEIC (as many Android phones and cameras
// write) gets its thumbnail, right in colour: libde265 hands its planes
// over at 16 bits a sample (narrowed in place, heic_de265.go), and so
// does libheif even when asked for 8.
func TestHEIC10Bit(t *testing.T) {
	w, h := 1024, 768
	data := encodeHEIC(t, w, h, true)
	th := newTestHost(t, Config{})
	status, r := th.uploadRaw(t, data, "application/octet-stream")
	if status != 201 || r.Data.Width != w || r.Data.Height != h {
		t.Fatalf("upload: %d %+v", status, r.Data)
	}
	resp, body := th.get(t, th.srv.URL+"/t/"+r.Data.Key+".jpg?w=256")
	if resp.StatusCode != 200 {
		t.Fatalf("thumbnail: %d %.300s", resp.StatusCode, body)
	}
	checkGradientThumb(t, body, w, h)
}

func absDiff(a, b uint32) uint32 { return max(a, b) - min(a, b) }
