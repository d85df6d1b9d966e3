package imgbed

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// pngChunk appends one PNG chunk with its CRC.
func pngChunk(dst []byte, typ string, data []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	start := len(dst)
	dst = append(dst, typ...)
	dst = append(dst, data...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// craftPNG builds a grayscale PNG declaring w×h whose image data is the
// zlib stream of rows zero rows (the rest is missing, which only a full
// decode would notice).
func craftPNG(w, h, rows int) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 0, 0, 0, 0) // 8-bit gray
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	row := make([]byte, 1+w)
	for range rows {
		zw.Write(row)
	}
	zw.Close()
	out := []byte("\x89PNG\r\n\x1a\n")
	out = pngChunk(out, "IHDR", ihdr)
	out = pngChunk(out, "IDAT", z.Bytes())
	return pngChunk(out, "IEND", nil)
}

// TestHostileUploads sends what attackers and broken clients send; each
// gets its 4xx with a JSON error, none makes the heap grow with the size
// the file claims, and none leaves anything in either blob store.
func TestHostileUploads(t *testing.T) { eachBackend(t, testHostileUploads) }

func testHostileUploads(t *testing.T, b backend) {
	th := b.host(t, Config{MaxBytes: 1 << 20})
	jpg := encodeJPEG(t, gradient(200, 100))
	png := encodePNG(t, gradient(200, 100))
	gif := encodeGIF(t, gradient(200, 100))
	webp := encodeWebP(t, gradient(200, 100))
	cases := []struct {
		name   string
		data   []byte
		status int
	}{
		{"text", []byte("hello, world, this is not an image"), 415},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), 415},
		{"html", []byte("<!doctype html><script>alert(1)</script>"), 415},
		{"empty", nil, 415},
		{"magic only", []byte("\x89PNG\r\n\x1a\n"), 422},
		{"truncated jpeg", jpg[:len(jpg)*2/3], 422},
		{"truncated png", png[:len(png)*2/3], 422},
		{"truncated gif", gif[:len(gif)*2/3], 422},
		{"truncated webp", webp[:len(webp)*2/3], 422},
		{"png with bad crc", append(append([]byte{}, png[:40]...), append([]byte{png[40] ^ 1}, png[41:]...)...), 422},
		{"jpeg magic then junk", append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte{7}, 5000)...), 422},
		{"declares 100000x100000", craftPNG(100000, 100000, 1), 422},
		{"compression bomb", craftPNG(10000, 10000, 10000), 422},
		{"oversized", append(append([]byte{}, png...), make([]byte, 2<<20)...), 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var status int
			var r response
			grew := peakHeap(func() { status, r = th.uploadRaw(t, c.data, "image/png") })
			if status != c.status || r.Status || r.Message == "" {
				t.Fatalf("got %d %+v, want %d with a message", status, r, c.status)
			}
			if grew > 16<<20 {
				t.Fatalf("heap grew by %d MiB", grew>>20)
			}
		})
	}
	if n := th.countKeys(t); n != (keyCounts{}) || th.objects(t) != 0 {
		t.Fatalf("refused uploads left keys: %+v, %d objects", n, th.objects(t))
	}
}

// TestOversizedBodyBoundedHeap streams a body far above MaxBytes: it is
// refused without being held in memory.
func TestOversizedBodyBoundedHeap(t *testing.T) {
	th := newTestHost(t, Config{MaxBytes: 1 << 20})
	png := encodePNG(t, gradient(100, 100))
	var status int
	grew := peakHeap(func() {
		body := io.MultiReader(bytes.NewReader(png), io.LimitReader(zeros{}, 64<<20))
		req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload", body)
		req.Header.Set("Content-Type", "image/png")
		resp, err := th.srv.Client().Do(req)
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
	})
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", status)
	}
	if grew > 16<<20 {
		t.Fatalf("heap grew by %d MiB", grew>>20)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestSlowBody stalls in the middle of a body: the upload ends with 408
// after the idle timeout instead of holding its slot forever.
func TestSlowBody(t *testing.T) {
	th := newTestHost(t, Config{ReadIdleTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", th.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	png := encodePNG(t, gradient(50, 50))
	fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n", len(png))
	conn.Write(png[:20])
	// The client's own deadline only keeps a broken server from hanging
	// the test; it is far above the idle timeout so that a loaded machine
	// cannot fail it. The 408 itself shows the server's timeout fired.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408 after the 200ms idle timeout", resp.StatusCode)
	}
}

// TestJunkPaths asks for ids that cannot exist: traversal, junk, too long.
func TestJunkPaths(t *testing.T) {
	th := newTestHost(t, Config{})
	_, r := th.uploadRaw(t, encodePNG(t, gradient(10, 10)), "image/png")
	for _, p := range []string{
		"/i/../../etc/passwd", "/i/..%2f..%2fetc%2fpasswd", "/i/%00.png", "/i/" + r.Data.Key,
		"/i/" + r.Data.Key + ".jpg", "/i/ABCDEFGHIJK.png", "/i/ZZZZZZZZ.png", "/i/a-b.png", "/i/.png",
		"/t/" + r.Data.Key + ".gif", "/t/../" + r.Data.Key + ".png", "/api/v1/images/..%2f", "/api/v1/images/AAAAAAAAAAAAAA",
	} {
		resp, body := th.get(t, th.srv.URL+p)
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
	resp, _ := th.get(t, th.srv.URL+"/t/"+r.Data.Key+".png?w=abc")
	if resp.StatusCode != 400 {
		t.Errorf("w=abc: %d", resp.StatusCode)
	}
}

var testTokens = []Token{
	{Name: "alice", Secret: "alice-secret", QuotaCount: 2},
	{Name: "root", Secret: "root-secret", Admin: true},
}

// TestTokens checks every place a client can put its token, and that
// missing or wrong tokens are refused.
func TestTokens(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: testTokens})
	data := encodePNG(t, gradient(10, 10))
	for _, c := range []struct {
		header []string
		query  string
		status int
	}{
		{nil, "", 401},
		{[]string{"Authorization", "Bearer wrong"}, "", 401},
		{[]string{"Authorization", "Bearer root-secret"}, "", 201},
		{[]string{"Authorization", "root-secret"}, "", 200},
		{[]string{"Token", "root-secret"}, "", 200},
		{[]string{"X-API-Key", "root-secret"}, "", 200},
		{nil, "key=root-secret", 200},
		{nil, "key=wrong", 401},
	} {
		req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload?"+c.query, bytes.NewReader(data))
		req.Header.Set("Content-Type", "image/png")
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		resp, body := th.do(t, req)
		if resp.StatusCode != c.status {
			t.Errorf("%v %q: %d %s, want %d", c.header, c.query, resp.StatusCode, body, c.status)
		}
	}
	// Everyone's uploads are listed for admins only; a user token lists
	// its own, no token nothing.
	if resp, _ := th.get(t, th.srv.URL+"/api/v1/images"); resp.StatusCode != 401 {
		t.Errorf("list without a token: %d", resp.StatusCode)
	}
	if status, _ := th.uploadRaw(t, encodePNG(t, gradient(11, 10)), "image/png", "Authorization", "Bearer alice-secret"); status != 201 {
		t.Fatalf("alice's upload: %d", status)
	}
	var own struct{ Data struct{ Data []imageData } }
	resp, body := th.get(t, th.srv.URL+"/api/v1/images", "Authorization", "Bearer alice-secret")
	if err := json.Unmarshal(body, &own); err != nil || resp.StatusCode != 200 || len(own.Data.Data) != 1 {
		t.Fatalf("list with a user token: %d %s", resp.StatusCode, body)
	}
	for _, d := range own.Data.Data {
		if rec, err := th.st.record(d.Key); err != nil || rec.Owner != "alice" {
			t.Errorf("alice's list holds %s of %q (%v)", d.Key, rec.Owner, err)
		}
	}
	resp, body = th.get(t, th.srv.URL+"/api/v1/images?per_page=2", "Authorization", "Bearer root-secret")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"has_more":true`) {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	// Hot reload: the old token stops working.
	th.SetTokens([]Token{{Name: "root", Secret: "new"}})
	if status, _ := th.uploadRaw(t, data, "image/png", "Authorization", "Bearer root-secret"); status != 401 {
		t.Errorf("replaced token still accepted: %d", status)
	}
}

// TestQuotaAndRate checks the per-token count quota (freed by deleting)
// and the per-client rate limit.
func TestQuotaAndRate(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: testTokens})
	auth := []string{"Authorization", "Bearer alice-secret"}
	var first response
	for i := range 3 {
		status, r := th.uploadRaw(t, encodePNG(t, gradient(10+i, 10)), "image/png", auth...)
		if i == 0 {
			first = r
		}
		if want := map[bool]int{true: 201, false: 403}[i < 2]; status != want {
			t.Fatalf("upload %d: %d %+v, want %d", i, status, r, want)
		}
	}
	req, _ := http.NewRequest("DELETE", th.srv.URL+"/api/v1/images/"+first.Data.Key, nil)
	req.Header.Set(auth[0], auth[1]) // the owner may delete without the delete token
	if resp, body := th.do(t, req); resp.StatusCode != 200 {
		t.Fatalf("owner delete: %d %s", resp.StatusCode, body)
	}
	if status, _ := th.uploadRaw(t, encodePNG(t, gradient(20, 10)), "image/png", auth...); status != 201 {
		t.Fatalf("after delete: %d", status)
	}

	rl := newTestHost(t, Config{UploadRate: 0.001, UploadBurst: 2})
	data := encodePNG(t, gradient(10, 10))
	for i, want := range []int{201, 200, 429} {
		if status, _ := rl.uploadRaw(t, data, "image/png"); status != want {
			t.Fatalf("upload %d: %d, want %d", i, status, want)
		}
	}
}

// TestAnonymousAuto allows anonymous uploads on loopback listeners only;
// the peer address does not count, so a local reverse proxy in front of a
// public listener gains nothing.
func TestAnonymousAuto(t *testing.T) {
	h := &Host{cfg: Config{Anonymous: AnonymousAuto}}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "192.0.2.1:80": false, "[2001:db8::1]:80": false} {
		r := httptest.NewRequest("POST", "/api/v1/upload", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		local, _ := net.ResolveTCPAddr("tcp", addr)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		if got := h.anonymousAllowed(r); got != want {
			t.Errorf("listener %s: anonymous %v, want %v", addr, got, want)
		}
	}
}

// TestShareXRequest replays a request as ShareX sends it: multipart with
// field "file", a CRLF-framed body and the token in a Bearer header.
func TestShareXRequest(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: testTokens})
	png := encodePNG(t, gradient(64, 48))
	boundary := "--------------------8dd1d3e1a2b3c4d"
	var body bytes.Buffer
	fmt.Fprintf(&body, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"Xc7ZbG2.png\"\r\nContent-Type: image/png\r\n\r\n", boundary)
	body.Write(png)
	fmt.Fprintf(&body, "\r\n--%s--\r\n", boundary)
	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload", &body)
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	req.Header.Set("Authorization", "Bearer root-secret")
	req.Header.Set("User-Agent", "ShareX/17.0.0")
	resp, out := th.do(t, req)
	r := decodeResponse(t, out)
	if resp.StatusCode != 201 || r.Data.OriginName != "Xc7ZbG2.png" || r.Data.Links.ThumbnailURL == "" || r.Data.Links.DeleteURL == "" {
		t.Fatalf("ShareX upload: %d %s", resp.StatusCode, out)
	}
}

// TestStalledDownload stops reading a large download: the server closes
// the connection after the write idle timeout instead of waiting forever.
func TestStalledDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a large image")
	}
	th := newTestHost(t, Config{WriteIdleTimeout: 200 * time.Millisecond})
	img := image.NewNRGBA(image.Rect(0, 0, 1400, 1100))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32()) // noise: about 6 MB of PNG
	}
	status, r := th.uploadRaw(t, encodePNG(t, img), "image/png")
	if status != 201 {
		t.Fatalf("upload: %d", status)
	}
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(th.Handler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	conn, err := net.DialTCP("tcp", nil, srv.Listener.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadBuffer(4096) // and never read
	fmt.Fprintf(conn, "GET /i/%s HTTP/1.1\r\nHost: x\r\n\r\n", r.Data.Name)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still waits on a client that stopped reading")
	}
}
