package imgbed

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"sync"
	"testing"

	"github.com/gen2brain/webp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gpsLatitude is a value no JPEG encoder writes by itself: finding it in
// stored bytes means the GPS data survived.
var gpsLatitude = []byte{0x30, 0, 0, 0, 1, 0, 0, 0, 0x33, 0, 0, 0, 1, 0, 0, 0, 0x8f, 0x0b, 0, 0, 0x64, 0, 0, 0}

// withExif inserts an Exif APP1 segment with an orientation and a GPS IFD
// holding gpsLatitude right after the SOI of jpg.
func withExif(jpg []byte, orientation uint16) []byte {
	seg := append([]byte{0xff, 0xe1, 0, 0}, "Exif\x00\x00"...)
	seg = append(seg, gpsTIFF(orientation)...)
	binary.BigEndian.PutUint16(seg[2:], uint16(len(seg)-2))
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

// gpsTIFF is an EXIF block (TIFF data) with an orientation and a GPS IFD
// holding gpsLatitude.
func gpsTIFF(orientation uint16) []byte {
	le := binary.LittleEndian
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = le.AppendUint16(tiff, 2)                                // IFD0: 2 entries
	tiff = append(tiff, 0x12, 0x01, 3, 0, 1, 0, 0, 0)              // orientation, SHORT, 1
	tiff = le.AppendUint16(le.AppendUint16(tiff, orientation), 0)  // value
	tiff = append(tiff, 0x25, 0x88, 4, 0, 1, 0, 0, 0, 38, 0, 0, 0) // GPS IFD at 38
	tiff = le.AppendUint32(tiff, 0)                                // no IFD1
	tiff = le.AppendUint16(tiff, 1)                                // GPS IFD: 1 entry
	tiff = append(tiff, 0x02, 0x00, 5, 0, 3, 0, 0, 0, 56, 0, 0, 0) // latitude, 3 RATIONALs at 56
	tiff = le.AppendUint32(tiff, 0)                                //
	return append(tiff, gpsLatitude...)
}

// TestGPSStripped uploads a phone-style JPEG: the stored bytes lose the
// GPS data but keep the orientation, the hash is of the stored bytes, the
// dimensions are as displayed, and thumbnails come out upright.
func TestGPSStripped(t *testing.T) {
	th := newTestHost(t, Config{})
	// 40×20 stored, orientation 6: shown 20 wide and 40 high, with the
	// stored image's left column (red) at the top.
	img := image.NewNRGBA(image.Rect(0, 0, 40, 20))
	for y := 0; y < 20; y++ {
		for x := 0; x < 40; x++ {
			c := color.NRGBA{0, 0, 255, 255}
			if x < 10 {
				c = color.NRGBA{255, 0, 0, 255}
			}
			img.Set(x, y, c)
		}
	}
	data := withExif(encodeJPEG(t, img), 6)
	if o, _ := exifInfo(bytes.Clone(data), false); o != 6 {
		t.Fatalf("test image orientation %d", o)
	}
	status, r := th.uploadRaw(t, data, "image/jpeg")
	if status != 201 || r.Data.Width != 20 || r.Data.Height != 40 {
		t.Fatalf("upload: %d %+v", status, r.Data)
	}
	_, stored := th.get(t, r.Data.Links.URL)
	if bytes.Contains(stored, gpsLatitude) || len(stored) != len(data) {
		t.Fatal("GPS data stored")
	}
	if o, gps := exifInfo(bytes.Clone(stored), true); o != 6 || gps {
		t.Fatalf("stored orientation %d, GPS entry left: %v", o, gps)
	}
	if _, err := jpeg.Decode(bytes.NewReader(stored)); err != nil {
		t.Fatalf("stored JPEG does not decode: %v", err)
	}
	if r2, s := th.Host, r.Data.SHA256; r2 == nil || s != sumHex(stored) {
		t.Fatal("sha256 is not the hash of the stored bytes")
	}
	resp, thumb := th.get(t, r.Data.Links.ThumbnailURL)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("thumbnail: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	timg, err := jpeg.Decode(bytes.NewReader(thumb))
	if err != nil {
		t.Fatal(err)
	}
	if b := timg.Bounds(); b.Dx() != 20 || b.Dy() != 40 {
		t.Fatalf("thumbnail is %v, want 20×40 upright", b)
	}
	if r, _, b, _ := timg.At(10, 2).RGBA(); r < 0xc000 || b > 0x4000 {
		t.Fatalf("thumbnail top is not red: the orientation was not applied")
	}

	keep := newTestHost(t, Config{KeepGPS: true})
	_, r = keep.uploadRaw(t, data, "image/jpeg")
	if _, stored := keep.get(t, r.Data.Links.URL); !bytes.Equal(stored, data) {
		t.Fatal("KeepGPS changed the bytes")
	}
}

// TestThumbnails covers width rounding, format negotiation and the
// render-once guarantee under concurrent requests, with originals in each
// blob store.
func TestThumbnails(t *testing.T) { eachBackend(t, testThumbnails) }

func testThumbnails(t *testing.T, b backend) {
	reg := prometheus.NewRegistry()
	th := b.host(t, Config{Registerer: reg})
	_, r := th.uploadRaw(t, encodePNG(t, gradient(1500, 300)), "image/png")
	base := th.srv.URL + "/t/" + r.Data.Key
	for _, c := range []struct {
		path, accept, mime string
		width              int
	}{
		{".png?w=100", "", "image/png", 128},
		{".png?w=100", "image/avif,image/webp,*/*", "image/webp", 128},
		{".png?w=5000", "", "image/png", 1024},
		{".png", "", "image/png", defaultThumbWidth},
		{".jpg?w=64", "image/webp", "image/jpeg", 64},
		{".webp?w=64", "", "image/webp", 64},
	} {
		resp, body := th.get(t, base+c.path, "Accept", c.accept)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.mime {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var cfg image.Config
		var err error
		if c.mime == "image/webp" {
			cfg, err = webp.DecodeConfig(bytes.NewReader(body))
		} else {
			cfg, _, err = image.DecodeConfig(bytes.NewReader(body))
		}
		if err != nil || cfg.Width != c.width || abs(cfg.Height-c.width/5) > 1 { // renderers round differently
			t.Fatalf("%s: %v %dx%d, want width %d", c.path, err, cfg.Width, cfg.Height, c.width)
		}
	}
	made := counterValue(th.metrics.thumbsMade)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(base + ".png?w=512")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	th.get(t, base+".png?w=400") // rounds to 512: stored already
	if n := counterValue(th.metrics.thumbsMade) - made; n != 1 {
		t.Fatalf("%v renders of one thumbnail", n)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var renders uint64
	for _, f := range families {
		if f.GetName() == "lsmgo_imgbed_thumbnail_seconds" {
			renders = f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if renders != 7 {
		t.Fatalf("thumbnail latency histogram has %d samples, want 7", renders)
	}
}

// TestSweep leaves bytes as a crash would (written, never committed) and
// checks that New removes them, in each blob store; but not on a replica,
// where they are the primary's upload in flight.
func TestSweep(t *testing.T) { eachBackend(t, testSweep) }

func testSweep(t *testing.T, b backend) {
	var cfg Config
	b.apply(t, &cfg)
	th := newTestHost(t, cfg)
	var s sum
	s[0] = 1
	size := int64(3*th.st.local.chunk + 5)
	if _, err := th.st.stage(context.Background(), th.st.originals, s, bytes.NewReader(make([]byte, size)), size, ""); err != nil {
		t.Fatal(err)
	}
	if n := th.countKeys(t); th.stored(t) == 0 || n.pending != 1 {
		t.Fatalf("before: %+v, %d objects", n, th.objects(t))
	}
	replica := cfg
	replica.Follower = func() bool { return true }
	if _, err := New(th.db, replica); err != nil {
		t.Fatal(err)
	}
	if n := th.countKeys(t); th.stored(t) == 0 || n.pending != 1 {
		t.Fatalf("after New on a replica: %+v, %d objects", n, th.objects(t))
	}
	if _, err := New(th.db, cfg); err != nil {
		t.Fatal(err)
	}
	if n := th.countKeys(t); n != (keyCounts{}) || th.objects(t) != 0 {
		t.Fatalf("after New: %+v, %d objects", n, th.objects(t))
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}

func abs(n int) int { return max(n, -n) }
