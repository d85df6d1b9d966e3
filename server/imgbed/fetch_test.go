package imgbed

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// imageServer serves data at /pics/cat.png (and other paths the tests
// use), counting the requests it gets.
func imageServer(t *testing.T, data []byte) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/pics/cat.png":
			w.Write(data)
		case "/moved":
			http.Redirect(w, r, "/pics/cat.png", http.StatusFound)
		case "/big":
			w.(http.Flusher).Flush() // no Content-Length: the limit applies while reading
			for range 100 {
				w.Write(data)
			}
		case "/slow": // a little, then nothing until the fetch gives up
			w.Write(data[:100])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		case "/text":
			w.Write([]byte(strings.Repeat("hello ", 100)))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// loopbackOnly makes th's fetches dial only loopback addresses, whatever
// its policy says, so a broken policy fails the test without a packet
// leaving the machine: the policy is asked first, and what it allows
// beyond loopback is an error.
func loopbackOnly(t *testing.T, th *testHost, policy func(netip.AddrPort) bool) {
	th.fetch = newFetchClient(th.cfg.FetchTimeout, func(ap netip.AddrPort) bool {
		ok := policy(ap)
		if ok && !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the policy allows %v", ap)
			return false
		}
		return ok
	})
}

func (th *testHost) uploadURL(t *testing.T, raw string) (int, response) {
	t.Helper()
	resp, body := th.do(t, mustRequest("POST", th.srv.URL+"/api/v1/upload?url="+url.QueryEscape(raw), nil, ""))
	return resp.StatusCode, decodeResponse(t, body)
}

func mustRequest(method, u string, body []byte, contentType string) *http.Request {
	req, _ := http.NewRequest(method, u, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// TestUploadByURL fetches images from a local server, allowed by
// FetchPrivate: by ?url=, a multipart field and a JSON body, through a
// redirect; what the server answers is checked like an upload (type,
// size) and failures are told apart (404, slow). The fetches that must
// succeed have the default FetchTimeout, since a loaded machine can take
// longer than a short one; only the fetch that never ends has 300 ms.
func TestUploadByURL(t *testing.T) {
	th := newTestHost(t, Config{FetchPrivate: true, MaxBytes: 256 << 10})
	loopbackOnly(t, th, th.fetchAllowed)
	data := encodePNG(t, noise(120, 100))
	src, _ := imageServer(t, data)

	st, r := th.uploadURL(t, src.URL+"/pics/cat.png")
	if st != 201 || r.Data.SHA256 != sumHex(data) || r.Data.OriginName != "cat.png" {
		t.Fatalf("?url=: %d %+v", st, r)
	}
	if _, body := th.get(t, r.URL); !bytes.Equal(body, data) {
		t.Fatal("stored bytes differ")
	}
	if st, r := th.uploadURL(t, src.URL+"/moved"); st != 200 || !r.Data.Duplicate {
		t.Errorf("through a redirect: %d %+v", st, r)
	}

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("expiration", "PT1H")
	mw.WriteField("url", src.URL+"/pics/cat.png")
	mw.Close()
	resp, body := th.do(t, mustRequest("POST", th.srv.URL+"/api/v1/upload", form.Bytes(), mw.FormDataContentType()))
	if r := decodeResponse(t, body); resp.StatusCode != 200 || r.Data.ExpiresAt == "" {
		t.Errorf("multipart url field: %d %s", resp.StatusCode, body)
	}
	resp, body = th.do(t, mustRequest("POST", th.srv.URL+"/api/v1/upload", []byte(`{"url":"`+src.URL+`/pics/cat.png","max_views":3}`), "application/json"))
	if r := decodeResponse(t, body); resp.StatusCode != 200 || r.Data.MaxViews != 3 {
		t.Errorf("JSON url: %d %s", resp.StatusCode, body)
	}

	for _, c := range []struct {
		path string
		want int
	}{
		{"/missing.png", 502},
		{"/big", 413},
		{"/text", 415},
	} {
		if st, r := th.uploadURL(t, src.URL+c.path); st != c.want {
			t.Errorf("%s: %d %q, want %d", c.path, st, r.Message, c.want)
		}
	}
	short := newTestHost(t, Config{FetchPrivate: true, FetchTimeout: 300 * time.Millisecond})
	loopbackOnly(t, short, short.fetchAllowed)
	if st, r := short.uploadURL(t, src.URL+"/slow"); st != 504 {
		t.Errorf("/slow: %d %q, want 504", st, r.Message)
	}
	for _, bad := range []string{"ftp://example.com/a.png", "/relative.png", "http://"} {
		if st, _ := th.uploadURL(t, bad); st != 400 {
			t.Errorf("%q: %d", bad, st)
		}
	}
}

// TestUploadByURLRefusesNonPublic: with FetchPrivate off, addresses that
// are not public are refused when dialled — literal, by name, mapped into
// IPv6, or reached by a redirect — and the local server never sees a
// request. The dialer's check runs before connect, so nothing is sent to
// a refused address; loopbackOnly keeps it so if the policy breaks.
func TestUploadByURLRefusesNonPublic(t *testing.T) {
	th := newTestHost(t, Config{})
	loopbackOnly(t, th, th.fetchAllowed)
	data := encodePNG(t, gradient(10, 10))
	src, hits := imageServer(t, data)
	port := src.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	p := ":" + itoa(int(port))
	for _, u := range []string{
		src.URL + "/pics/cat.png",
		"http://localhost" + p + "/pics/cat.png",
		"http://[::1]" + p + "/pics/cat.png",
		"http://[::ffff:127.0.0.1]" + p + "/pics/cat.png",
		"http://10.1.2.3/pics/cat.png",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1%25lo]" + p + "/",
		"http://0.0.0.0" + p + "/pics/cat.png",
	} {
		st, r := th.uploadURL(t, u)
		if st != 400 || !strings.Contains(r.Message, "not public") {
			t.Errorf("%s: %d %q", u, st, r.Message)
		}
	}

	// A public server (here: the one address allowed) that redirects to
	// loopback.
	redirector := httptest.NewServer(http.RedirectHandler(src.URL+"/pics/cat.png", http.StatusFound))
	defer redirector.Close()
	allowed := redirector.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort()
	loopbackOnly(t, th, func(ap netip.AddrPort) bool { return ap == allowed || th.fetchAllowed(ap) })
	if st, r := th.uploadURL(t, redirector.URL+"/x.png"); st != 400 || !strings.Contains(r.Message, "not public") {
		t.Errorf("redirect to loopback: %d %q", st, r.Message)
	}
	if hits.Load() != 0 {
		t.Errorf("the local server got %d requests", hits.Load())
	}
	if n := th.imageCount(t); n != 0 {
		t.Errorf("%d images stored", n)
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true, "64:ff9b::808:808": true, "2002:808:808::1": true,
		"127.0.0.1": false, "127.8.9.1": false, "::1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "fd12::1": false, "224.0.0.1": false, "ff02::1": false,
		"0.0.0.0": false, "::": false, "255.255.255.255": false, "100.64.0.1": false, "0.1.2.3": false, "240.0.0.1": false,
		"::ffff:10.0.0.1": false, "::ffff:127.0.0.1": false, "64:ff9b::7f00:1": false, "2002:7f00:1::1": false, "2001:db8::1": false,
		"198.18.0.1": false, "fec0::1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("publicAddr(%s) = %v", addr, got)
		}
	}
}
