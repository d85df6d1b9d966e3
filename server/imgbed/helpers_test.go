package imgbed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gen2brain/webp"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/httpfront"
)

type testHost struct {
	*Host
	db  *lsmgo.DB
	srv *httptest.Server
	// skipRemoteCheck leaves remote blobs out of the Check at cleanup:
	// the test stopped S3.
	skipRemoteCheck bool
}

func newTestHost(t testing.TB, cfg Config) *testHost {
	t.Helper()
	return newTestHostOn(t, cfg, nil)
}

// newTestHostOn is newTestHost on a DB opened with opts.
func newTestHostOn(t testing.TB, cfg Config, opts *lsmgo.Options) *testHost {
	t.Helper()
	db, err := lsmgo.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UploadRate == 0 {
		cfg.UploadRate = -1 // tests that want the limits set them
	}
	if cfg.TokenUploadRate == 0 {
		cfg.TokenUploadRate = -1
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = t.TempDir()
	}
	h, err := New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	th := &testHost{Host: h, db: db}
	var stop func()
	th.srv, stop = serve(h)
	t.Cleanup(func() {
		stop()
		if err := h.check(!th.skipRemoteCheck); err != nil {
			t.Errorf("Check: %v", err)
		}
		db.Close()
	})
	return th
}

// serve starts a test server of h as lsmgo serve runs it: plain GETs
// answered by ServePlain on the connection (httpfront), everything else
// by Handler. stop closes it and waits for every answer to end.
func serve(h *Host) (srv *httptest.Server, stop func()) {
	return serveFront(h.Handler(), h.ServePlain)
}

// serveFront is serve with handler behind plain.
func serveFront(handler http.Handler, plain httpfront.Handler) (srv *httptest.Server, stop func()) {
	srv = httptest.NewUnstartedServer(handler)
	front := httpfront.Listen(srv.Listener, plain, httpfront.Config{HeaderTimeout: 10 * time.Second})
	srv.Listener = front
	srv.Config.ConnState = front.ConnState
	srv.Start()
	return srv, func() {
		srv.Close()
		front.Wait(context.Background())
	}
}

// response is an upload or metadata answer.
type response struct {
	Status  bool      `json:"status"`
	Message string    `json:"message"`
	URL     string    `json:"url"`
	Data    imageData `json:"data"`
	Files   []struct {
		Status bool      `json:"status"`
		Data   imageData `json:"data"`
	} `json:"files"`
}

func (th *testHost) do(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := th.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func (th *testHost) get(t testing.TB, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return th.do(t, req)
}

// uploadRaw posts data as a raw body and decodes the JSON answer.
func (th *testHost) uploadRaw(t testing.TB, data []byte, contentType string, header ...string) (int, response) {
	t.Helper()
	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload?filename=a.png", bytes.NewReader(data))
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, body := th.do(t, req)
	return resp.StatusCode, decodeResponse(t, body)
}

func decodeResponse(t testing.TB, body []byte) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("answer is not JSON: %v: %q", err, body)
	}
	return r
}

// multipartBody builds a multipart form with one file part per entry of
// files, under field.
func multipartBody(t testing.TB, field string, files ...[]byte) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("note", "ignored")
	for i, f := range files {
		w, err := mw.CreateFormFile(field, "shot"+string(rune('0'+i))+".png")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

// gradient is a w×h test picture.
func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8((x + y) % 256), 255})
		}
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeWebP(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := webp.Encode(&b, img, webp.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// goTestdata returns the images shipped in Go's source tree.
func goTestdata(t testing.TB) map[string][]byte {
	t.Helper()
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(root)), "src", "image", "testdata")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	out := make(map[string][]byte)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// peakHeap samples the heap while fn runs and returns the highest value
// seen above the heap in use before it.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var p uint64
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			p = max(p, ms.HeapAlloc)
			select {
			case <-done:
				peak <- p
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	p := <-peak
	if p < base {
		return 0
	}
	return p - base
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
