package imgbed

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzInspect feeds arbitrary bytes through everything an upload's bytes
// meet before they are stored: sniffing, EXIF parsing and GPS stripping,
// the header decoders and the structure walk. None may panic; stripping
// never changes the length or any byte outside the EXIF segment, and
// stripping twice changes nothing more.
func FuzzInspect(f *testing.F) {
	f.Add(withExif(encodeJPEG(f, gradient(8, 8)), 6))
	f.Add(encodePNG(f, gradient(8, 8)))
	f.Add(encodeGIF(f, gradient(8, 8)))
	f.Add(encodeWebP(f, gradient(8, 8)))
	f.Add(craftPNG(100000, 100000, 1))
	for _, name := range []string{"gradient-96x64.avif", "gradient-96x64.heic"} {
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
		f := sniff(data[:min(len(data), sniffLen)])
		if f == formatNone {
			return
		}
		decodeConfig(f, bytes.NewReader(data))
		checkStructure(f, bytes.NewReader(data))
	})
}
