package imgbed

import (
	"bytes"
	"encoding/binary"
	"image"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gen2brain/avif"
)

// The fixtures were made by a real encoder, libheif's heif-enc 1.15.1
// (Debian libheif-examples; x265 for HEIC, aom for AVIF), from a 96×64
// gradient PNG:
//
//	heif-enc -q 60 -o gradient-96x64.heic gradient.png
//	heif-enc -A -q 60 -o gradient-96x64.avif gradient.png
//
// and gradient-160x96.heic the same way from a 160×96 one (the
// WebAssembly decoder garbles HEICs under 128 pixels wide; decodeHEIC).
//
// TestHEIFFreshFromEncoder makes new ones where heif-enc is installed.
func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAVIFAndHEICUploads: both are accepted with their type and size from
// the container, stored as sent, served with their own Content-Type, and
// get thumbnails (libavif in WebAssembly; libheif, the system's or in
// WebAssembly).
func TestAVIFAndHEICUploads(t *testing.T) {
	th := newTestHost(t, Config{})
	for _, c := range []struct {
		file, mime, ext string
		w, h            int
	}{
		{"gradient-96x64.avif", "image/avif", "avif", 96, 64},
		{"gradient-160x96.heic", "image/heic", "heic", 160, 96},
	} {
		data := readFixture(t, c.file)
		status, r := th.uploadRaw(t, data, "application/octet-stream")
		if status != 201 || r.Data.Mimetype != c.mime || r.Data.Extension != c.ext || r.Data.Width != c.w || r.Data.Height != c.h {
			t.Fatalf("%s: %d %+v", c.file, status, r.Data)
		}
		resp, body := th.get(t, r.URL)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != c.mime {
			t.Fatalf("%s served: %d %q", c.file, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		thumb := strings.Replace(r.Data.Links.ThumbnailURL, "."+c.ext, ".png", 1)
		resp, body = th.get(t, thumb)
		if resp.StatusCode != 200 {
			t.Fatalf("%s thumbnail: %d %.200s", c.ext, resp.StatusCode, body)
		}
		img, _, err := image.Decode(bytes.NewReader(body))
		if err != nil || img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h {
			t.Fatalf("%s thumbnail: %v %v", c.ext, err, img.Bounds())
		}
		// The gradient survives the round trip: a lossy encode and our
		// decode keep the corners' colours near the source's.
		r0, g0, _, _ := img.At(c.w-1, c.h-1).RGBA()
		if r0>>8 < 150 || g0>>8 < 150 {
			t.Errorf("%s thumbnail's bottom-right corner is %d,%d, want both above 150", c.ext, r0>>8, g0>>8)
		}
	}
	// A HEIC under 128 pixels wide is stored and served, but where
	// the WebAssembly decoder renders gets no thumbnail rather than a
	// scrambled one; libheif (loaded, or in libvips) renders it.
	_, r := th.uploadRaw(t, readFixture(t, "gradient-96x64.heic"), "image/heic")
	resp, body := th.get(t, r.Data.Links.ThumbnailURL)
	if libheifLoaded() {
		img, _, err := image.Decode(bytes.NewReader(body))
		if resp.StatusCode != 200 || err != nil || img.Bounds().Dx() != 96 || img.Bounds().Dy() != 64 {
			t.Fatalf("narrow HEIC thumbnail with libheif: %d %v", resp.StatusCode, err)
		}
		r0, g0, _, _ := img.At(95, 63).RGBA()
		if r0>>8 < 150 || g0>>8 < 150 {
			t.Errorf("narrow HEIC thumbnail's bottom-right corner is %d,%d, want both above 150", r0>>8, g0>>8)
		}
	} else if resp.StatusCode != 422 || !strings.Contains(string(body), "128 pixels") {
		t.Errorf("narrow HEIC thumbnail: %d %s", resp.StatusCode, body)
	}
}

// heifWithISPE returns the AVIF fixture with every ispe box saying w×h.
func heifWithISPE(t *testing.T, w, h uint32) []byte {
	return fixtureWithISPE(t, "gradient-96x64.avif", w, h)
}

// fixtureWithISPE returns a HEIF fixture with every ispe box saying w×h.
func fixtureWithISPE(t *testing.T, name string, w, h uint32) []byte {
	data := readFixture(t, name)
	found := false
	for off := 0; ; {
		j := bytes.Index(data[off:], []byte("ispe"))
		if j < 0 {
			break
		}
		i := off + j // the type; then version and flags, width, height
		binary.BigEndian.PutUint32(data[i+8:], w)
		binary.BigEndian.PutUint32(data[i+12:], h)
		off, found = i+4, true
	}
	if !found {
		t.Fatal("no ispe in the fixture")
	}
	return data
}

// TestHEIFHostile: truncated files, a pixel bomb declared in ispe, broken
// box sizes and a meta box too large to read are refused (422) without
// decoding, and the thumbnail decoder of a lying file fails cleanly with
// bounded heap.
func TestHEIFHostile(t *testing.T) {
	th := newTestHost(t, Config{})
	avifData := readFixture(t, "gradient-96x64.avif")
	heic := readFixture(t, "gradient-96x64.heic")
	bigMeta := append([]byte(nil), avifData[:28]...)
	bigMeta = binary.BigEndian.AppendUint32(bigMeta, 2<<20)
	bigMeta = append(append(bigMeta, "meta"...), make([]byte, 64)...)
	badSize := append([]byte(nil), avifData...)
	binary.BigEndian.PutUint32(badSize[28:], 3) // meta box of 3 bytes
	for name, data := range map[string][]byte{
		"avif cut in half":    avifData[:len(avifData)/2],
		"heic cut in half":    heic[:len(heic)/2],
		"avif ftyp only":      avifData[:28],
		"pixel bomb":          heifWithISPE(t, 60000, 60000),
		"meta over 1 MiB":     bigMeta,
		"box of 3 bytes":      badSize,
		"avif missing 1 byte": avifData[:len(avifData)-1],
	} {
		if status, r := th.uploadRaw(t, data, "image/avif"); status != 422 {
			t.Errorf("%s: %d %q", name, status, r.Message)
		}
	}
	// Files that pass the upload's checks but lie to the decoders: an
	// ispe smaller than the coded frame (the pixel limit is on what a
	// file declares), and coded data overwritten with noise. Each
	// render, in every output format, renders or fails with a 4xx,
	// never holding on to memory.
	garbled := func(name string) []byte {
		b := readFixture(t, name)
		i := bytes.Index(b, []byte("mdat")) + 4 + 8 // past the box header and a few coded bytes
		rng := rand.New(rand.NewPCG(uint64(len(b)), 7))
		for j := i; j < len(b); j++ {
			b[j] = byte(rng.IntN(256))
		}
		return b
	}
	for name, data := range map[string][]byte{
		"avif, small ispe":  heifWithISPE(t, 8, 8),
		"heic, small ispe":  fixtureWithISPE(t, "gradient-160x96.heic", 130, 8),
		"avif, noise coded": garbled("gradient-96x64.avif"),
		"heic, noise coded": garbled("gradient-160x96.heic"),
	} {
		status, r := th.uploadRaw(t, data, "application/octet-stream")
		if status != 201 {
			t.Fatalf("%s: %d %s", name, status, r.Message)
		}
		for _, q := range []string{"", "?w=64&h=64&fit=cover&format=avif"} {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, body := th.get(t, r.Data.Links.ThumbnailURL+strings.Replace(q, "?", "&", 1))
			runtime.GC()
			runtime.ReadMemStats(&after)
			if resp.StatusCode != 200 && (resp.StatusCode < 400 || resp.StatusCode >= 500) {
				t.Errorf("%s%s: %d %s", name, q, resp.StatusCode, body)
			}
			if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
				t.Errorf("%s%s: heap grew %d MiB after a render of a tiny file", name, q, grew>>20)
			}
		}
	}
}

// TestHEIFFreshFromEncoder round-trips files the installed encoder makes
// now (skipped without heif-enc): a 640×480 HEIC and AVIF are accepted
// with their size, and the AVIF decodes to the same size.
func TestHEIFFreshFromEncoder(t *testing.T) {
	enc, err := exec.LookPath("heif-enc")
	if err != nil {
		t.Skip("no heif-enc (Debian libheif-examples)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "big.png")
	if err := os.WriteFile(src, encodePNG(t, gradient(640, 480)), 0o644); err != nil {
		t.Fatal(err)
	}
	th := newTestHost(t, Config{})
	for _, args := range [][]string{{"-q", "50", "-o", filepath.Join(dir, "big.heic"), src}, {"-A", "-q", "50", "-o", filepath.Join(dir, "big.avif"), src}} {
		if out, err := exec.Command(enc, args...).CombinedOutput(); err != nil {
			t.Fatalf("heif-enc %v: %v %s", args, err, out)
		}
		data, err := os.ReadFile(args[len(args)-2])
		if err != nil {
			t.Fatal(err)
		}
		status, r := th.uploadRaw(t, data, "application/octet-stream")
		if status != 201 || r.Data.Width != 640 || r.Data.Height != 480 {
			t.Fatalf("%s: %d %+v", args[len(args)-2], status, r.Data)
		}
		if r.Data.Extension == "avif" {
			img, err := avif.Decode(bytes.NewReader(data))
			if err != nil || img.Bounds().Dx() != 640 {
				t.Fatalf("decode: %v", err)
			}
		}
	}
}
