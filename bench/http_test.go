package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server"
)

// testJPEG is a small valid JPEG.
func testJPEG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 48, 32))
	for x := range 48 {
		img.Set(x, x%32, color.RGBA{uint8(5 * x), 90, 200, 255})
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// startImageHost runs lsmgo's server with its image host in this process
// on loopback ports, without the upload rate limit, and returns the HTTP
// base URL.
func startImageHost(t *testing.T) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Dir = t.TempDir()
	cfg.AppendFsync = "no"
	cfg.ImagesUploadRate = -1
	cfg.LogOutput = io.Discard
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return "http://" + s.HTTPAddr()
}

// httpTestConfig is a tiny run of every workload against target.
func httpTestConfig(t *testing.T, target string, body []byte) HTTPConfig {
	cfg := DefaultHTTPConfig()
	cfg.Target = target
	cfg.Body = body
	cfg.File = "test.jpg"
	cfg.Workloads = []string{"upload", "get", "thumb"}
	cfg.Levels = []int{1, 3}
	cfg.Duration = 0
	cfg.Requests = 12
	cfg.Images = 4
	cfg.ThumbWidth = 64
	cfg.Progress = "off"
	cfg.OutDir = t.TempDir()
	return cfg
}

// TestHTTPAgainstImageHost runs every workload against the real image
// host: each upload is a new image, each GET gets the whole original and
// each thumbnail request a thumbnail, with exactly --requests requests a
// row and the report files written.
func TestHTTPAgainstImageHost(t *testing.T) {
	base := startImageHost(t)
	body := testJPEG(t)
	cfg := httpTestConfig(t, base, body)
	cfg.ServerPID = os.Getpid()
	var out strings.Builder
	rep, err := RunHTTP(cfg, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 6 {
		t.Fatalf("%d rows, want 6:\n%s", len(rep.Results), out.String())
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.Ops != 12 || r.Found != 12 || r.P99Ns <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s c=%d: ops %d found %d p99 %d error %q; want 12 requests, all found", r.Workload, r.Threads, r.Ops, r.Found, r.P99Ns, r.Error)
		}
		if r.Workload == "upload" && r.UserBytesWritten != 12*int64(len(body)+4+jpegComment) {
			t.Errorf("upload c=%d wrote %d bytes", r.Threads, r.UserBytesWritten)
		}
		// CPU time comes in ticks of 10 ms, more than a tiny row takes;
		// the peak RSS is always there.
		if r.PeakRSS <= 0 {
			t.Errorf("%s c=%d: no server RSS though --server-pid names it", r.Workload, r.Threads)
		}
	}
	if !strings.Contains(out.String(), "12 new, 0 duplicates") {
		t.Errorf("the table lacks the upload note:\n%s", out.String())
	}
	for _, f := range []string{"results.json", "results.csv", "results.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, f)); err != nil {
			t.Error(err)
		}
	}
	js, _ := os.ReadFile(filepath.Join(cfg.OutDir, "results.json"))
	var back HTTPReport
	if err := json.Unmarshal(js, &back); err != nil || len(back.Results) != 6 {
		t.Errorf("results.json: %v, %d rows", err, len(back.Results))
	}
}

// TestHTTPDedup checks --dedup: identical bytes every time, so only the
// first upload of the run stores an image.
func TestHTTPDedup(t *testing.T) {
	cfg := httpTestConfig(t, startImageHost(t), testJPEG(t))
	cfg.Workloads = []string{"upload"}
	cfg.Levels = []int{2}
	cfg.Dedup = true
	rep, err := RunHTTP(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Error != "" || r.Ops != 12 || r.Found != 1 || !strings.Contains(r.Note, "1 new, 11 duplicates") {
		t.Errorf("ops %d new %d note %q error %q; want 12 uploads, 1 new", r.Ops, r.Found, r.Note, r.Error)
	}
}

// TestHTTPErrorAnswers checks that refused requests make a row fail: a
// token the host does not know gets 401 for every upload.
func TestHTTPErrorAnswers(t *testing.T) {
	cfg := httpTestConfig(t, startImageHost(t), testJPEG(t))
	cfg.Workloads = []string{"upload"}
	cfg.Levels = []int{1}
	cfg.Token = "nosuch"
	rep, err := RunHTTP(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; !strings.Contains(r.Error, "12 error answers, first: HTTP 401") {
		t.Errorf("error %q; want 12 answers of 401", r.Error)
	}
	// Get needs images it cannot upload: the run fails before its row.
	cfg.Workloads = []string{"get"}
	if _, err := RunHTTP(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("get with a wrong token: %v", err)
	}
}

// TestHTTPReference runs upload and get against the reference handler:
// every upload becomes a file holding exactly the bytes sent, and the
// reference has no thumbnails.
func TestHTTPReference(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(NewReferenceHandler(dir))
	defer srv.Close()
	body := testJPEG(t)
	cfg := httpTestConfig(t, srv.URL, body)
	rep, err := RunHTTP(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		bad := r.Error != "" || r.Ops != 12 || r.Found != 12
		if r.Workload == "thumb" {
			bad = !strings.Contains(r.Error, "no thumbnail link")
		}
		if bad {
			t.Errorf("%s c=%d: ops %d found %d error %q", r.Workload, r.Threads, r.Ops, r.Found, r.Error)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jpg"))
	if len(files) != 2*12+cfg.Images {
		t.Errorf("%d files, want %d", len(files), 2*12+cfg.Images)
	}
	got, _ := os.ReadFile(files[0])
	if !bytes.Equal(got[:2], body[:2]) || !bytes.Equal(got[2+4+jpegComment:], body[2:]) || len(got) != len(body)+4+jpegComment {
		t.Errorf("a stored file is not the template with its comment")
	}
	if _, _, err := image.Decode(bytes.NewReader(got)); err != nil {
		t.Errorf("the upload with its comment does not decode: %v", err)
	}
}

func TestParseHTTPFlags(t *testing.T) {
	dir := t.TempDir()
	jpg := filepath.Join(dir, "a.jpg")
	os.WriteFile(jpg, testJPEG(t), 0o644)
	var pngBuf bytes.Buffer
	png.Encode(&pngBuf, image.NewGray(image.Rect(0, 0, 2, 2)))
	pngFile := filepath.Join(dir, "a.png")
	os.WriteFile(pngFile, pngBuf.Bytes(), 0o644)

	c, err := ParseHTTPFlags(strings.Fields("--target http://[::1]:8080 --connections 50,2000 --requests 1000 --workloads upload,thumb --file "+jpg), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != 0 || c.Requests != 1000 || len(c.Levels) != 2 || c.Levels[1] != 2000 || c.ContentType != "image/jpeg" || len(c.Workloads) != 2 {
		t.Errorf("parsed %+v", c)
	}
	if c, err := ParseHTTPFlags([]string{"--dedup", "--file", pngFile}, io.Discard); err != nil || c.ContentType != "image/png" || c.Duration != 10*time.Second {
		t.Errorf("--dedup with a PNG: %v %q %v", err, c.ContentType, c.Duration)
	}
	for _, bad := range []string{
		"--file " + pngFile, // a PNG cannot carry the JPEG comment
		"--target http://10.0.0.1:8080 --file " + jpg,
		"--target http://example.com --file " + jpg,
		"--target https://127.0.0.1 --file " + jpg,
		"--workloads nosuch --file " + jpg,
		"--connections 0 --file " + jpg,
		"--duration 0 --file " + jpg,
		"--file " + filepath.Join(dir, "missing.jpg"),
		"",
	} {
		if _, err := ParseHTTPFlags(strings.Fields(bad), io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHTTPTransportError checks that a target that stops answering ends
// the row with an error rather than hanging it.
func TestHTTPTransportError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hj, ok := w.(http.Hijacker); ok {
			c, _, _ := hj.Hijack()
			c.Close()
		}
	}))
	defer srv.Close()
	cfg := httpTestConfig(t, srv.URL, testJPEG(t))
	cfg.Workloads = []string{"upload"}
	cfg.Levels = []int{2}
	rep, err := RunHTTP(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; !strings.Contains(r.Error, "2 of 2 connections failed") {
		t.Errorf("error %q", r.Error)
	}
}
