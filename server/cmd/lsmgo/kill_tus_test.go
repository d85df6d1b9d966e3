package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKill9ResumableUpload kills `lsmgo serve` with SIGKILL twice in the
// middle of a tus upload, each time while a PATCH body is half sent:
// after each restart the upload's offset covers every acknowledged chunk,
// no image is visible yet, and the upload resumes from there; once
// complete, the image is the bytes sent, by SHA-256.
func TestKill9ResumableUpload(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin-token", "adm", "--loglevel", "warning"}
	data := noisePNG(t, 900, 700) // about 2.5 MB
	const chunk = 128 << 10
	srv := startChild(t, args...)
	base := "http://" + httpAddr(t, srv)
	resp := tusDo(t, "POST", base+"/api/v1/tus/", nil, "Upload-Length", strconv.Itoa(len(data)))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	path := strings.TrimPrefix(resp.Header.Get("Location"), base)
	acked := 0
	for round, stopAt := range []int{len(data) / 3, 2 * len(data) / 3} {
		for acked < stopAt {
			end := min(acked+chunk, len(data))
			resp := tusDo(t, "PATCH", base+path, data[acked:end], "Upload-Offset", strconv.Itoa(acked))
			if resp.StatusCode != 204 {
				t.Fatalf("PATCH at %d: %d", acked, resp.StatusCode)
			}
			acked = end
		}
		// A PATCH whose body stops half way, then the kill.
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("PATCH", base+path, pr)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		req.Header.Set("Upload-Offset", strconv.Itoa(acked))
		req.ContentLength = chunk
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		pw.Write(data[acked : acked+chunk/2])
		time.Sleep(50 * time.Millisecond)
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-srv.exited
		pw.CloseWithError(io.ErrUnexpectedEOF)
		<-done

		srv = startChild(t, args...)
		base = "http://" + httpAddr(t, srv)
		resp := tusDo(t, "HEAD", base+path, nil)
		off, _ := strconv.Atoi(resp.Header.Get("Upload-Offset"))
		if resp.StatusCode != 200 || off < acked || off > len(data) {
			t.Fatalf("round %d: after the kill the offset is %d (status %d), %d were acknowledged", round, off, resp.StatusCode, acked)
		}
		if n := imageCount(t, base); n != 0 {
			t.Fatalf("round %d: %d images before the upload completed", round, n)
		}
		acked = off
	}
	for acked < len(data) {
		end := min(acked+chunk, len(data))
		if resp := tusDo(t, "PATCH", base+path, data[acked:end], "Upload-Offset", strconv.Itoa(acked)); resp.StatusCode != 204 {
			t.Fatalf("PATCH at %d after restarts: %d", acked, resp.StatusCode)
		}
		acked = end
	}
	resp = tusDo(t, "GET", base+path, nil)
	var result struct {
		URL  string
		Data struct{ SHA256 string }
	}
	json.NewDecoder(resp.Body).Decode(&result)
	resp.Body.Close()
	want := sha256.Sum256(data)
	if result.Data.SHA256 != hex.EncodeToString(want[:]) {
		t.Fatalf("stored %q, sent %x", result.Data.SHA256, want)
	}
	img, err := http.Get(result.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(img.Body)
	img.Body.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("served %d bytes, sent %d, not the same", len(got), len(data))
	}
	if n := imageCount(t, base); n != 1 {
		t.Fatalf("%d images after the upload", n)
	}
}

// httpAddr is the HTTP address in the child's startup line.
func httpAddr(t *testing.T, c *child) string {
	for f := range strings.FieldsSeq(c.line) {
		if a, ok := strings.CutPrefix(f, "http="); ok {
			return a
		}
	}
	t.Fatalf("no http= in %q", c.line)
	return ""
}

// tusDo sends a tus request and returns the answer, with its body read
// unless it is a GET.
func tusDo(t *testing.T, method, url string, body []byte, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp
}

// imageCount asks the host how many images it lists to the admin.
func imageCount(t *testing.T, base string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/images?per_page=100", nil)
	req.Header.Set("Authorization", "Bearer adm")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data struct{ Data []json.RawMessage }
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("listing: %d %s", resp.StatusCode, body)
	}
	return len(list.Data.Data)
}

func noisePNG(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
