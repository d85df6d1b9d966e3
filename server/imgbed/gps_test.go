package imgbed

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"image"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gen2brain/webp"
	xwebp "golang.org/x/image/webp"
)

// xmpPacket holds the location twice, as XMP writers do (attributes and
// elements), next to properties that must survive.
const xmpPacket = `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:exif="http://ns.adobe.com/exif/1.0/"
 xmp:CreatorTool="lsmgo-test" exif:GPSLatitude="51,30.4417N" exif:GPSLongitude='0,7.5367W'>
<exif:GPSAltitude>17/1</exif:GPSAltitude>
<exif:GPSTimeStamp
>2026-12-02T04:00:00Z</exif:GPSTimeStamp>
<exif:GPSVersionID/>
<xmp:Rating>5</xmp:Rating>
</rdf:Description></rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>`

// gpsLeft reports which location data survived in stored bytes.
func gpsLeft(b []byte) []string {
	var left []string
	for _, s := range []string{"51,30.4417N", "0,7.5367W", "17/1", "2026-12-02T04", "GPSVersionID", string(gpsLatitude)} {
		if bytes.Contains(b, []byte(s)) {
			left = append(left, s)
		}
	}
	return left
}

// pngWithGPS adds an eXIf chunk and an XMP iTXt chunk after the IHDR.
func pngWithGPS(p []byte) []byte {
	const ihdrEnd = 8 + 8 + 13 + 4
	itxt := append(append([]byte(nil), xmpPNGTitle...), 0, 0, 0, 0) // uncompressed, no language or translated keyword
	out := append([]byte(nil), p[:ihdrEnd]...)
	out = pngChunk(out, "eXIf", gpsTIFF(1))
	out = pngChunk(out, "iTXt", append(itxt, xmpPacket...))
	return append(out, p[ihdrEnd:]...)
}

// webpWithGPS wraps a simple WebP's image chunk in the extended format
// with EXIF and XMP chunks after it, where the format puts them.
func webpWithGPS(t *testing.T, w []byte, width, height int) []byte {
	chunk := func(typ string, data []byte) []byte {
		c := binary.LittleEndian.AppendUint32([]byte(typ), uint32(len(data)))
		c = append(c, data...)
		if len(data)%2 == 1 {
			c = append(c, 0)
		}
		return c
	}
	vp8x := []byte{0x08 | 0x04, 0, 0, 0} // EXIF and XMP present
	vp8x = append(vp8x, byte(width-1), byte((width-1)>>8), byte((width-1)>>16))
	vp8x = append(vp8x, byte(height-1), byte((height-1)>>8), byte((height-1)>>16))
	body := append([]byte("WEBP"), chunk("VP8X", vp8x)...)
	body = append(body, w[12:]...) // the image chunk
	body = append(body, chunk("EXIF", gpsTIFF(1))...)
	body = append(body, chunk("XMP ", []byte(xmpPacket))...)
	out := binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(len(body)))
	out = append(out, body...)
	if _, err := xwebp.DecodeConfig(bytes.NewReader(out)); err != nil {
		t.Fatalf("test WebP: %v", err)
	}
	return out
}

// jpegWithXMP adds an XMP APP1 segment after the SOI.
func jpegWithXMP(j []byte) []byte {
	seg := append([]byte{0xff, 0xe1, 0, 0}, xmpJPEG...)
	seg = append(seg, xmpPacket...)
	binary.BigEndian.PutUint16(seg[2:], uint16(len(seg)-2))
	return append(append(append([]byte(nil), j[:2]...), seg...), j[2:]...)
}

func noise(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	return img
}

// TestGPSStrippedEverywhere uploads a PNG, a WebP (small, and one large
// enough that its metadata, at the end, lies in the spool file) and a
// JPEG carrying GPS in EXIF and XMP: the stored bytes keep their length,
// other metadata and validity (PNG checksums included) and lose every
// trace of the location; sha256 is the stored bytes'.
func TestGPSStrippedEverywhere(t *testing.T) {
	th := newTestHost(t, Config{})
	var big bytes.Buffer
	if err := webp.Encode(&big, noise(640, 640), webp.Options{Lossless: true}); err != nil {
		t.Fatal(err)
	}
	if big.Len() <= headLen {
		t.Fatalf("the large WebP is %d bytes, not past the %d-byte head", big.Len(), headLen)
	}
	for name, data := range map[string][]byte{
		"png":        pngWithGPS(encodePNG(t, gradient(30, 20))),
		"webp":       webpWithGPS(t, encodeWebP(t, gradient(30, 20)), 30, 20),
		"large webp": webpWithGPS(t, big.Bytes(), 640, 640),
		"jpeg xmp":   jpegWithXMP(withExif(encodeJPEG(t, gradient(30, 20)), 1)),
	} {
		if len(gpsLeft(data)) == 0 {
			t.Fatalf("%s: the test file carries no location", name)
		}
		status, r := th.uploadRaw(t, data, "application/octet-stream")
		if status != 201 && status != 200 { // 200: a fresh file identical to its fixture
			t.Fatalf("%s: %d %s", name, status, r.Message)
		}
		_, stored := th.get(t, r.URL)
		if left := gpsLeft(stored); len(left) > 0 || len(stored) != len(data) {
			t.Errorf("%s: %v left, %d bytes stored of %d", name, left, len(stored), len(data))
		}
		if !bytes.Contains(stored, []byte(`xmp:CreatorTool="lsmgo-test"`)) || !bytes.Contains(stored, []byte("<xmp:Rating>5</xmp:Rating>")) {
			t.Errorf("%s: other XMP properties were lost", name)
		}
		if err := checkStructure(sniff(stored[:sniffLen]), bytes.NewReader(stored)); err != nil {
			t.Errorf("%s: stored file is damaged: %v", name, err)
		}
		if _, _, err := image.Decode(bytes.NewReader(stored)); err != nil {
			t.Errorf("%s: stored file does not decode: %v", name, err)
		}
		if r.Data.SHA256 != sumHex(stored) {
			t.Errorf("%s: sha256 is not the stored bytes'", name)
		}
	}
	keep := newTestHost(t, Config{KeepGPS: true})
	data := pngWithGPS(encodePNG(t, gradient(30, 20)))
	_, r := keep.uploadRaw(t, data, "image/png")
	if _, stored := keep.get(t, r.URL); !bytes.Equal(stored, data) {
		t.Error("KeepGPS changed a PNG")
	}
}

// TestXMPStripLeavesValidXML: blanking keeps the packet well formed,
// whatever the quoting and element forms.
func TestXMPStripLeavesValidXML(t *testing.T) {
	x := []byte(xmpPacket)
	if !stripXMPGPS(x) || len(x) != len(xmpPacket) || len(gpsLeft(x)) != 0 {
		t.Fatalf("strip: %s", x)
	}
	if stripXMPGPS(x) {
		t.Error("stripping twice changed more")
	}
	var v struct{}
	if err := xml.Unmarshal(x[bytes.Index(x, []byte("<x:xmpmeta")):bytes.Index(x, []byte("<?xpacket end"))], &v); err != nil {
		t.Errorf("stripped XMP is not XML: %v\n%s", err, x)
	}
}

// TestHEIFGPSStripped: HEIC and AVIF files whose EXIF and XMP items hold
// a location, made by heif-enc from a JPEG with both (it copies them):
// stored with the location gone, every length unchanged, the rest of the
// metadata kept, and still decodable. The fixtures were made by
//
//	heif-enc -q 60 -o gps-160x96.heic gps.jpg
//	heif-enc -A -q 60 -o gps-160x96.avif gps.jpg
//
// from jpegWithXMP(withExif(encodeJPEG(gradient(160, 96)), 1)); where
// heif-enc is installed the test makes and checks fresh ones too.
func TestHEIFGPSStripped(t *testing.T) {
	files := map[string][]byte{
		"gps-160x96.heic": readFixture(t, "gps-160x96.heic"),
		"gps-160x96.avif": readFixture(t, "gps-160x96.avif"),
	}
	if enc, err := exec.LookPath("heif-enc"); err == nil {
		dir := t.TempDir()
		src := filepath.Join(dir, "gps.jpg")
		if err := os.WriteFile(src, jpegWithXMP(withExif(encodeJPEG(t, gradient(160, 96)), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"-q", "60", "-o", filepath.Join(dir, "fresh.heic"), src}, {"-A", "-q", "60", "-o", filepath.Join(dir, "fresh.avif"), src}} {
			if out, err := exec.Command(enc, args...).CombinedOutput(); err != nil {
				t.Fatalf("heif-enc %v: %v %s", args, err, out)
			}
			b, err := os.ReadFile(args[len(args)-2])
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(args[len(args)-2])] = b
		}
	}
	th := newTestHost(t, Config{})
	for name, data := range files {
		if len(gpsLeft(data)) < 3 {
			t.Fatalf("%s: the encoder dropped the location (%v): nothing to test", name, gpsLeft(data))
		}
		status, r := th.uploadRaw(t, data, "application/octet-stream")
		if status != 201 && status != 200 { // 200: a fresh file identical to its fixture
			t.Fatalf("%s: %d %s", name, status, r.Message)
		}
		_, stored := th.get(t, r.URL)
		if left := gpsLeft(stored); len(left) > 0 || len(stored) != len(data) {
			t.Errorf("%s: %v left, %d bytes of %d", name, left, len(stored), len(data))
		}
		if !bytes.Contains(stored, []byte("lsmgo-test")) || !bytes.Contains(stored, []byte("Exif")) {
			t.Errorf("%s: the rest of the metadata went too", name)
		}
		if r.Data.SHA256 != sumHex(stored) {
			t.Errorf("%s: the hash is not of the stored bytes", name)
		}
		if resp, body := th.get(t, r.Data.Links.ThumbnailURL); resp.StatusCode != 200 {
			t.Errorf("%s: thumbnail of the stripped file: %d %s", name, resp.StatusCode, body)
		}
		keep := newTestHost(t, Config{KeepGPS: true})
		_, r = keep.uploadRaw(t, data, "application/octet-stream")
		if _, kept := keep.get(t, r.URL); !bytes.Equal(kept, data) {
			t.Errorf("%s: KeepGPS changed the bytes", name)
		}
	}
}
