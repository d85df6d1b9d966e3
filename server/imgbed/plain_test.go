package imgbed

import (
	"bufio"
	"bytes"
	"image"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestServePlainMatchesHandler sends the same requests to a host through
// the front (ServePlain, falling back to Handler) and to Handler alone,
// and compares the answers byte for byte, Date aside: originals in one
// chunk and in several, bodies held in memory and sent from the file
// (also when the memory budget is spent), stored thumbnails by width,
// by extension and negotiated by Accept, expiring and view-limited
// images, CORS, revalidations (304s and 200s), each as a GET and a HEAD,
// and every kind of request the front must leave to net/http (errors,
// ranges, other preconditions, unrendered thumbnails, other render
// links), each asked three times so that the
// last answers come from the bodies kept in memory. It also checks which
// answers the front gave itself.
func TestServePlainMatchesHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"defaults", Config{}},
		{"small chunks", Config{ChunkSize: 64 << 10}},
		{"cors any", Config{CORSOrigins: []string{"*"}}},
		{"cors list", Config{CORSOrigins: []string{"https://a.example"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, clock := newClockHost(t, tc.cfg)
			// Counted before the answer: the front's answers are the rest.
			front, alone, fallbacks := frontAndAlone(t, th)

			upload := func(data []byte, mime string, header ...string) (id, ext string) {
				t.Helper()
				status, r := th.uploadRaw(t, data, mime, header...)
				if !r.Status {
					t.Fatalf("upload: %d %s", status, r.Message)
				}
				file := path.Base(r.Data.Links.URL)
				id, ext, _ = strings.Cut(file, ".")
				return id, ext
			}
			small, _ := upload(noiseJPEG(t), "image/jpeg")
			big, _ := upload(noisyPNG(t, 400, 300, 1), "image/png") // > plainCopyMax
			expiring, _ := upload(noisyPNG(t, 50, 40, 2), "image/png", "X-Expiration", "PT1H")
			limited, _ := upload(noisyPNG(t, 50, 40, 3), "image/png", "X-Max-Views", "100")
			// Thumbnails rendered and stored first, through Handler.
			for _, u := range []string{"/t/" + small + ".jpg?w=256", "/t/" + small + ".webp?w=128", "/t/" + big + ".png?w=64", "/t/" + expiring + ".png"} {
				if resp, _ := th.get(t, alone.URL+u); resp.StatusCode != http.StatusOK {
					t.Fatalf("render %s: %d", u, resp.StatusCode)
				}
			}
			if resp, _ := th.get(t, alone.URL+"/t/"+small+".jpg?w=64", "Accept", "image/webp,*/*"); resp.StatusCode != http.StatusOK {
				t.Fatal("webp render")
			}
			clock.advance(time.Minute) // max-age counts down

			smallTag := sha(noiseJPEG(t)).String()
			future := clock.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
			type probe struct {
				target string
				fields []string
				front  bool // answered by ServePlain
				later  bool // by ServePlain once stored, after the first GET
			}
			probes := []probe{
				{target: "/i/" + small + ".jpg", front: true},
				{target: "/i/" + small + ".jpeg", front: true},
				{target: "/i/" + big + ".png", front: true},
				{target: "/i/" + expiring + ".png", front: true},
				{target: "/t/" + small + ".jpg?w=256", front: true},
				{target: "/t/" + small + ".jpg?w=200", front: true},
				{target: "/t/" + small + ".jpg", front: true},
				{target: "/t/" + small + ".jpg?w=", front: true},
				{target: "/t/" + small + ".webp?w=100", front: true},
				{target: "/t/" + small + ".jpg?w=64", fields: []string{"Accept: image/avif,image/webp,*/*"}, front: true},
				{target: "/t/" + big + ".png?w=64", front: true},
				{target: "/t/" + expiring + ".png?w=256", fields: []string{"User-Agent: test/1.0", "Accept-Language: en"}, front: true},
				{target: "/i/" + limited + ".png"},
				{target: "/t/" + limited + ".png"},
				{target: "/i/" + small + ".png"},
				{target: "/i/nope.jpg"},
				{target: "/i/" + small},
				{target: "/t/" + small + ".jpg?w=abc"},
				{target: "/t/" + small + ".jpg?w=64&w=128"},
				{target: "/t/" + small + ".jpg?w=64&h=64"},
				{target: "/t/" + small + ".jpg?format=png"},
				{target: "/t/" + small + ".jpg?w=1024", later: true}, // not rendered yet: Handler renders it
				{target: "/i/" + small + ".jpg", fields: []string{"Range: bytes=10-99"}},
				// Revalidations: 304s and 200s, as http.ServeContent
				// reads the fields.
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "x", "` + smallTag + `"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match:  ,W/"` + smallTag + `"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: *`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "x"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: ` + smallTag + `, "` + smallTag + `"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "a b", "` + smallTag + `"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "` + smallTag}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "x"`, "If-Modified-Since: " + future}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: `, "If-Modified-Since: " + future}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{`If-None-Match: "x"`, `If-None-Match: "` + smallTag + `"`}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{"If-Modified-Since: " + future}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{"If-Modified-Since: Mon, 02 Jan 2006 15:04:05 GMT"}, front: true},
				{target: "/i/" + small + ".jpg", fields: []string{"If-Modified-Since: yesterday"}, front: true},
				{target: "/i/" + big + ".png", fields: []string{"If-Modified-Since: " + future}, front: true},
				{target: "/t/" + small + ".jpg?w=256", fields: []string{"If-None-Match: *"}, front: true},
				{target: "/t/" + small + ".jpg?w=64", fields: []string{"Accept: image/webp,*/*", "If-Modified-Since: " + future}, front: true},
				{target: "/i/" + limited + ".png", fields: []string{`If-None-Match: "x"`}},
				{target: "/i/" + small + ".jpg", fields: []string{`If-Match: "` + smallTag + `"`}},
				{target: "/i/" + small + ".jpg", fields: []string{"If-Unmodified-Since: " + future}},
				{target: "/i/" + small + ".jpg", fields: []string{"Origin: https://a.example"}, front: len(tc.cfg.CORSOrigins) == 0},
				{target: "/i/" + small + ".jpg", fields: []string{"Origin: https://b.example"}, front: len(tc.cfg.CORSOrigins) == 0},
				{target: "/i/" + small + ".jpg", fields: []string{"Connection: close"}},
				{target: "/", fields: nil},
				{target: "/api/v1/images/" + small},
			}
			if len(tc.cfg.CORSOrigins) > 0 && tc.cfg.CORSOrigins[0] != "*" {
				for i := range probes {
					probes[i].front, probes[i].later = false, false // Vary: Origin on every answer
				}
			}
			// Three passes: small bodies are read from the blob on the
			// first two, then answered from the bodies kept in memory.
			for pass := 0; pass < 3; pass++ {
				for _, method := range []string{"GET", "HEAD"} {
					for _, p := range probes {
						req := method + " " + p.target + " HTTP/1.1\r\nHost: img.test\r\n" + strings.Join(p.fields, "\r\n")
						if len(p.fields) > 0 {
							req += "\r\n"
						}
						req += "\r\n"
						before := fallbacks.Load()
						got := exchange(t, front.Listener.Addr().String(), method, req)
						byFront := fallbacks.Load() == before
						want := exchange(t, alone.Listener.Addr().String(), method, req)
						if got != want {
							t.Errorf("%s %s %v: through the front:\n%s\nHandler alone:\n%s", method, p.target, p.fields, head(got), head(want))
						}
						// A later one is stored by the first GET.
						if wantFront := p.front || p.later && (pass > 0 || method == "HEAD"); byFront != wantFront {
							t.Errorf("%s %s %v: answered by the front %v, want %v", method, p.target, p.fields, byFront, wantFront)
						}
					}
				}
			}
			hits := testutil.ToFloat64(th.metrics.hotBodyHits)
			if front := len(tc.cfg.CORSOrigins) == 0 || tc.cfg.CORSOrigins[0] == "*"; front != (hits > 0) || front != (th.bodies.held() > 0) {
				t.Errorf("%v hits from %d bytes kept in memory, want some: %v", hits, th.bodies.held(), front)
			}

			// With the memory budget spent, small bodies go out with
			// sendfile, and the answers are the same.
			th.plainHeld.Add(plainCopyBudget)
			for _, u := range []string{"/i/" + small + ".jpg", "/t/" + small + ".jpg?w=256"} {
				req := "GET " + u + " HTTP/1.1\r\nHost: img.test\r\n\r\n"
				if got, want := exchange(t, front.Listener.Addr().String(), "GET", req), exchange(t, alone.Listener.Addr().String(), "GET", req); got != want {
					t.Errorf("%s with the budget spent: through the front:\n%s\nHandler alone:\n%s", u, head(got), head(want))
				}
			}
			th.plainHeld.Add(-plainCopyBudget)
			if n := th.plainHeld.Load(); n != 0 {
				t.Errorf("%d bytes held after the answers", n)
			}
		})
	}
}

// TestServePlainKeepAlive sends, on one connection to a host through the
// front and on one to Handler alone, what a browser sends on a
// keep-alive connection — a page, a HEAD, revalidations answered 304, a
// range, an If-Match, plain GETs between them — one at a time and then
// pipelined in one write, and compares the answers byte for byte, Date
// aside. The plain GETs and revalidations after net/http's answers are
// the front's: the connection comes back to it.
func TestServePlainKeepAlive(t *testing.T) {
	th, clock := newClockHost(t, Config{})
	// Uploads at a fraction of a second: Last-Modified, and so an
	// If-Modified-Since that repeats it, is before the upload's time.
	clock.advance(1500 * time.Millisecond)
	front, alone, fallbacks := frontAndAlone(t, th)
	var ids []string
	for _, data := range [][]byte{noiseJPEG(t), noisyPNG(t, 400, 300, 1)} { // the second > plainCopyMax
		status, r := th.uploadRaw(t, data, http.DetectContentType(data))
		if !r.Status {
			t.Fatalf("upload: %d %s", status, r.Message)
		}
		ids = append(ids, path.Base(r.Data.Links.URL))
	}
	small, big := "/i/"+ids[0], "/i/"+ids[1]
	thumb := "/t/" + ids[0] + "?w=256"
	if resp, _ := th.get(t, alone.URL+thumb); resp.StatusCode != http.StatusOK {
		t.Fatalf("render %s: %d", thumb, resp.StatusCode)
	}
	resp, _ := th.get(t, alone.URL+small)
	etag, modified := resp.Header.Get("Etag"), resp.Header.Get("Last-Modified")

	type step struct {
		method, target string
		fields         []string
		front          bool // answered by ServePlain
	}
	steps := []step{
		{method: "GET", target: "/", fields: []string{"Accept: text/html"}},
		{method: "GET", target: small, front: true},
		{method: "HEAD", target: small, front: true},
		{method: "OPTIONS", target: small},
		{method: "GET", target: big, front: true},
		{method: "GET", target: small, fields: []string{"If-None-Match: " + etag}, front: true},
		{method: "GET", target: thumb, front: true},
		{method: "GET", target: small, fields: []string{"If-Modified-Since: " + modified}, front: true},
		{method: "GET", target: big, fields: []string{"If-Match: " + etag}},
		{method: "GET", target: big, fields: []string{"Range: bytes=100-199"}},
		{method: "GET", target: small, front: true},
		{method: "GET", target: "/i/nope.jpg"},
		{method: "GET", target: thumb, front: true},
	}
	request := func(s step) string {
		req := s.method + " " + s.target + " HTTP/1.1\r\nHost: img.test\r\n"
		for _, f := range s.fields {
			req += f + "\r\n"
		}
		return req + "\r\n"
	}
	dial := func(srv *httptest.Server) (net.Conn, *bytes.Buffer, *bufio.Reader) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(time.Minute))
		var raw bytes.Buffer
		return c, &raw, bufio.NewReader(io.TeeReader(c, &raw))
	}
	// read reads one answer to s from br and returns the bytes raw holds
	// then; raw is reset.
	read := func(br *bufio.Reader, raw *bytes.Buffer, s step) string {
		t.Helper()
		resp, err := http.ReadResponse(br, &http.Request{Method: s.method})
		if err != nil {
			t.Fatalf("%s %s: %v", s.method, s.target, err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		got := raw.String()
		raw.Reset()
		return got
	}
	undated := func(answers string) string { return dateField.ReplaceAllString(answers, "\r\nDate: (checked)\r\n") }

	t.Run("one at a time", func(t *testing.T) {
		fc, fraw, fbr := dial(front)
		ac, araw, abr := dial(alone)
		for _, s := range steps {
			before := fallbacks.Load()
			io.WriteString(fc, request(s))
			got := undated(read(fbr, fraw, s))
			if byFront := fallbacks.Load() == before; byFront != s.front {
				t.Errorf("%s %s %v: answered by the front %v, want %v", s.method, s.target, s.fields, byFront, s.front)
			}
			io.WriteString(ac, request(s))
			if want := undated(read(abr, araw, s)); got != want {
				t.Errorf("%s %s %v: through the front:\n%s\nHandler alone:\n%s", s.method, s.target, s.fields, head(got), head(want))
			}
		}
	})
	t.Run("pipelined", func(t *testing.T) {
		var all string
		for _, s := range steps {
			all += request(s)
		}
		fc, fraw, fbr := dial(front)
		ac, araw, abr := dial(alone)
		before := fallbacks.Load()
		io.WriteString(fc, all)
		io.WriteString(ac, all)
		// A reader reads ahead into the next answers (a Date field may be
		// cut): the whole streams are compared once all are read.
		var got, want string
		for _, s := range steps {
			got += read(fbr, fraw, s)
			want += read(abr, araw, s)
		}
		got, want = undated(got), undated(want)
		if got != want {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("the answers differ from byte %d: through the front:\n%q\nHandler alone:\n%q", i, got[i:min(i+200, len(got))], want[i:min(i+200, len(want))])
		}
		wantFallbacks := 0
		for _, s := range steps {
			if !s.front {
				wantFallbacks++
			}
		}
		if n := fallbacks.Load() - before; n != int64(wantFallbacks) {
			t.Errorf("net/http answered %d of %d requests, want %d", n, len(steps), wantFallbacks)
		}
	})
}

// noisyPNG is a w×h PNG of seeded noise (which does not compress).
func noisyPNG(t testing.TB, w, h int, seed uint64) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return encodePNG(t, img)
}

var dateField = regexp.MustCompile("\r\nDate: [^\r]*\r\n")

// exchange sends req on a new connection to addr and returns the raw
// answer, its Date field replaced by a fixed one after checking it.
func exchange(t *testing.T, addr, method, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if d, err := http.ParseTime(resp.Header.Get("Date")); err != nil || time.Since(d) > time.Minute {
		t.Fatalf("Date %q", resp.Header.Get("Date"))
	}
	return dateField.ReplaceAllString(raw.String(), "\r\nDate: (checked)\r\n")
}

// head is an answer's head, for messages.
func head(answer string) string {
	h, _, _ := strings.Cut(answer, "\r\n\r\n")
	return h
}

// frontAndAlone serves th twice: behind the front (ServePlain, falling
// back to Handler, which counts in fallbacks) and by net/http alone, the
// reference the front's answers are compared with. Both stop when t ends.
func frontAndAlone(t *testing.T, th *testHost) (front, alone *httptest.Server, fallbacks *atomic.Int64) {
	t.Helper()
	fallbacks = new(atomic.Int64)
	handler := th.Handler()
	front, stop := serveFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fallbacks.Add(1)
		handler.ServeHTTP(w, r)
	}), th.ServePlain)
	t.Cleanup(stop)
	alone = httptest.NewServer(th.Handler())
	t.Cleanup(alone.Close)
	return front, alone, fallbacks
}
