package imgbed

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"image"
	"image/color"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
)

// noiseJPEG is a JPEG of about 100 KB: noise does not compress.
func noiseJPEG(b testing.TB) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 400, 400))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
	}
	img.Set(0, 0, color.White)
	return encodeJPEG(b, img)
}

// uniqueJPEG returns jpg with a comment segment holding n right after
// SOI, so every upload has new bytes and nothing is deduplicated.
func uniqueJPEG(jpg []byte, n uint64) []byte {
	out := make([]byte, 0, len(jpg)+12)
	out = append(out, jpg[:2]...)
	out = append(out, 0xff, 0xfe, 0, 10)
	out = binary.BigEndian.AppendUint64(out, n)
	return append(out, jpg[2:]...)
}

func postLoop(b *testing.B, url string, jpg []byte) {
	var n atomic.Uint64
	b.SetBytes(int64(len(jpg)))
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := http.Post(url, "image/jpeg", bytes.NewReader(uniqueJPEG(jpg, n.Add(1))))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkUpload posts distinct ~100 KB JPEGs from 8×GOMAXPROCS clients;
// the Reference sub-benchmark is the practical bound: a handler that only
// hashes the body and writes it to its own file with fsync.
func BenchmarkUpload(b *testing.B) {
	jpg := noiseJPEG(b)
	b.Run("imgbed", func(b *testing.B) {
		th := newTestHost(b, Config{})
		postLoop(b, th.srv.URL+"/api/v1/upload", jpg)
	})
	b.Run("Reference", func(b *testing.B) {
		dir := b.TempDir()
		var n atomic.Uint64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			f, err := os.Create(filepath.Join(dir, strconv.FormatUint(n.Add(1), 10)))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer f.Close()
			if _, err := io.Copy(io.MultiWriter(f, h), r.Body); err != nil || f.Sync() != nil {
				http.Error(w, "write failed", 500)
				return
			}
			w.WriteHeader(201)
			w.Write(h.Sum(nil))
		}))
		defer srv.Close()
		postLoop(b, srv.URL, jpg)
	})
}

// BenchmarkGet fetches one ~100 KB original from 8×GOMAXPROCS clients.
func BenchmarkGet(b *testing.B) {
	th := newTestHost(b, Config{})
	jpg := noiseJPEG(b)
	_, r := th.uploadRaw(b, jpg, "image/jpeg")
	b.SetBytes(int64(len(jpg)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := http.Get(r.Data.Links.URL)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkThumbnail12MP renders a 256-pixel-wide JPEG thumbnail of a
// 4000×3000 JPEG photo-like gradient, with the renderer of the build
// (pure Go by default, libvips with -tags vips).
func BenchmarkThumbnail12MP(b *testing.B) {
	jpg := encodeJPEG(b, gradient(4000, 3000))
	b.SetBytes(int64(len(jpg)))
	for b.Loop() {
		if _, _, _, err := renderThumb(bytes.NewReader(jpg), formatJPEG.mime(), renderSpec{w: 256, f: formatJPEG}); err != nil {
			b.Fatal(err)
		}
	}
}
