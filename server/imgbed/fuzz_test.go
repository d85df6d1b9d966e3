package imgbed

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"image"
	"os"
	"path/filepath"
	"testing"
)

// FuzzInspect feeds arbitrary bytes through everything an upload's bytes
// meet before they are stored: sniffing, EXIF parsing and GPS stripping,
// the header decoders, the structure walk, the GPS stripping of every
// container (HEIF items included), the streaming PNG and JPEG
// decoders and the reading of a HEIC's primary image. None
// may panic; stripping
// never changes the length or any byte outside the EXIF segment, and
// stripping twice changes nothing more.
func FuzzInspect(f *testing.F) {
	f.Add(withExif(encodeJPEG(f, gradient(8, 8)), 6))
	f.Add(encodePNG(f, gradient(8, 8)))
	f.Add(encodeGIF(f, gradient(8, 8)))
	f.Add(encodeWebP(f, gradient(8, 8)))
	f.Add(craftPNG(100000, 100000, 1))
	f.Add(pngWithGPS(encodePNG(f, gradient(8, 8))))
	f.Add(jpegWithXMP(encodeJPEG(f, gradient(8, 8))))
	for _, name := range []string{"gradient-96x64.avif", "gradient-96x64.heic", "gps-160x96.heic", "gps-160x96.avif"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		head := bytes.Clone(data)
		exifInfo(head, true)
		if len(head) != len(data) {
			t.Fatal("stripping changed the length")
		}
		if seg := exifSegment(data); seg == nil && !bytes.Equal(head, data) {
			t.Fatal("stripping changed a file without an Exif segment")
		}
		again := bytes.Clone(head)
		if exifInfo(again, true); !bytes.Equal(again, head) {
			t.Fatal("stripping is not idempotent")
		}
		if x := bytes.Clone(data); stripXMPGPS(x) && len(x) != len(data) {
			t.Fatal("XMP stripping changed the length")
		}
		f := sniff(data[:min(len(data), sniffLen)])
		if f == formatNone {
			return
		}
		decodeConfig(f, bytes.NewReader(data))
		checkStructure(f, bytes.NewReader(data))
		sp := &spool{head: bytes.Clone(data), size: int64(len(data)), format: f, sha: sha256.New(), md5: md5.New()}
		if sp.stripGPS(); len(sp.head) != len(data) {
			t.Fatal("GPS stripping changed the length")
		}
		// Planned as a render into a 64×64 box is.
		plan := func(sw, sh int) (image.Rectangle, int) {
			p := planRender(renderSpec{w: 64, h: 64, fit: fitContain}, 1, sw, sh)
			return p.crop, p.k
		}
		switch {
		case f == formatPNG && !pngInterlaced(data):
			streamPNG(bytes.NewReader(data), plan)
		case f == formatJPEG:
			streamJPEG(bufio.NewReader(bytes.NewReader(data)), plan)
			jpegStreamScale(data, 4)
		case f == formatHEIC:
			if meta, off, ok := findMetaBox(data); ok {
				parseHEIFMeta(meta, off).primaryImage() // items, properties, SPS
			}
		}
	})
}
