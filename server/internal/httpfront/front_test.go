package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testFront serves handler through a Listener in front of an http.Server
// whose own handler answers every request with "net/http PATH", but
// /hijack (see netHTTP).
type testFront struct {
	l    *Listener
	srv  *http.Server
	addr string
}

func startFront(t *testing.T, handler Handler, cfg Config) *testFront {
	return startFrontWith(t, handler, cfg, true)
}

// startFrontWith starts a testFront, whose http.Server calls the
// Listener's ConnState if connState.
func startFrontWith(t *testing.T, handler Handler, cfg Config, connState bool) *testFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tf := &testFront{l: Listen(ln, handler, cfg), addr: ln.Addr().String()}
	tf.srv = &http.Server{Handler: http.HandlerFunc(netHTTP)}
	if connState {
		tf.srv.ConnState = tf.l.ConnState
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		tf.srv.Serve(tf.l)
	}()
	t.Cleanup(func() {
		tf.srv.Close()
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tf.l.Wait(ctx); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
	return tf
}

// netHTTP is testFront's net/http handler. /hijack takes the connection,
// reads the next line sent on it and answers "hijacked LINE", closing the
// connection; /body answers with the request's body.
func netHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/hijack":
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer c.Close()
		line, _ := rw.ReadString('\n')
		body := "hijacked " + strings.TrimSpace(line)
		fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		rw.Flush()
	case "/body":
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	default:
		io.WriteString(w, "net/http "+r.URL.Path)
	}
}

func (tf *testFront) dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", tf.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// fastHandler answers GET /fast/... with "front PATH" and declines the
// rest, HEADs and the conditional requests it does not evaluate.
func fastHandler(w *Writer, r *Request) bool {
	if !strings.HasPrefix(r.Path, "/fast/") || r.Method != http.MethodGet || r.Header("If-None-Match") != "" || r.Header("If-Modified-Since") != "" {
		return false
	}
	body := "front " + r.Path
	w.Respond([]byte("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n"), []byte(body), time.Minute)
	return true
}

func readAnswer(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func get(path string, fields ...string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: test\r\n" + strings.Join(fields, "") + "\r\n"
}

// TestFrontHandsOff sends pipelined requests in one write: the front
// answers the plain ones it takes until the first it does not, and
// net/http gets that one with no byte lost. With the http.Server calling
// the Listener's ConnState, the connection comes back to the front after
// net/http answered a request without a body; without, it stays with
// net/http.
func TestFrontHandsOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests []string
		want     []string // with ConnState; without, "front" after the first "net/http" is "net/http"
	}{
		{"declined", []string{get("/fast/a"), get("/fast/b"), get("/slow"), get("/fast/c")},
			[]string{"front /fast/a", "front /fast/b", "net/http /slow", "front /fast/c"}},
		{"not plain", []string{get("/fast/a"), get("/fast/b", "Range: bytes=0-1\r\n"), get("/fast/c")},
			[]string{"front /fast/a", "net/http /fast/b", "front /fast/c"}},
		{"head", []string{"HEAD /fast/a HTTP/1.1\r\nHost: test\r\n\r\n", get("/fast/b")},
			[]string{"", "front /fast/b"}},
		{"conditional", []string{get("/fast/a", "If-None-Match: \"x\"\r\n"), get("/slow", "If-Modified-Since: Thu, 01 Jan 2026 00:00:00 GMT\r\n"), get("/fast/b")},
			[]string{"net/http /fast/a", "net/http /slow", "front /fast/b"}},
		{"http/1.0 keep-alive", []string{"GET /slow HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", get("/fast/a")},
			[]string{"net/http /slow", "front /fast/a"}},
		{"post", []string{get("/fast/a"), "POST /fast/b HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello", get("/fast/c")},
			[]string{"front /fast/a", "net/http /fast/b", "net/http /fast/c"}},
		{"chunked", []string{"POST /body HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", get("/fast/a")},
			[]string{"hello", "net/http /fast/a"}},
		{"bare lf", []string{"GET /slow HTTP/1.1\nHost: test\n\n", get("/fast/a")},
			[]string{"net/http /slow", "net/http /fast/a"}},
		{"long head", []string{get("/fast/a"), get("/fast/b", "X-Long: "+strings.Repeat("x", HeadBytes)+"\r\n"), get("/fast/c")},
			[]string{"front /fast/a", "net/http /fast/b", "net/http /fast/c"}},
		{"hijack", []string{get("/hijack"), get("/fast/a")},
			[]string{"hijacked GET /fast/a HTTP/1.1"}},
	} {
		for _, connState := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/connstate=%v", tc.name, connState), func(t *testing.T) {
				tf := startFrontWith(t, fastHandler, Config{}, connState)
				c, br := tf.dial(t)
				if _, err := io.WriteString(c, strings.Join(tc.requests, "")); err != nil {
					t.Fatal(err)
				}
				handed := false
				for i, want := range tc.want {
					if handed && !connState {
						want = strings.Replace(want, "front ", "net/http ", 1)
					}
					handed = handed || strings.HasPrefix(want, "net/http ") || want == ""
					method := "GET"
					if strings.HasPrefix(tc.requests[i], "HEAD ") {
						method = "HEAD"
					}
					resp, err := http.ReadResponse(br, &http.Request{Method: method})
					if err != nil {
						t.Fatalf("answer %d: %v", i, err)
					}
					body, err := io.ReadAll(resp.Body)
					if err != nil || string(body) != want {
						t.Fatalf("answer %d: %q (%v), want %q", i, body, err, want)
					}
				}
			})
		}
	}
}

// TestFrontTakesBack sends requests one at a time on a connection that
// net/http answered: each plain one that the Handler takes is the
// front's, whole or a byte at a time, and each other one is net/http's.
func TestFrontTakesBack(t *testing.T) {
	tf := startFront(t, fastHandler, Config{HeaderTimeout: time.Minute})
	c, br := tf.dial(t)
	for i, step := range []struct {
		req, want string
		bytewise  bool
	}{
		{get("/page"), "net/http /page", false},
		{get("/fast/a"), "front /fast/a", false},
		{get("/page"), "net/http /page", true},
		{get("/fast/b"), "front /fast/b", true},
		{get("/fast/c"), "front /fast/c", false},
		{get("/fast/d", "Range: bytes=0-1\r\n"), "net/http /fast/d", true},
		{get("/fast/e"), "front /fast/e", false},
	} {
		if step.bytewise {
			for _, b := range []byte(step.req) {
				if _, err := c.Write([]byte{b}); err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := io.WriteString(c, step.req); err != nil {
			t.Fatal(err)
		}
		if _, body := readAnswer(t, br); body != step.want {
			t.Fatalf("step %d: answer %q, want %q", i, body, step.want)
		}
	}
}

// TestFrontTakesBackRandom sends random sequences of requests on a
// connection, in writes cut at random places: every plain request the
// Handler takes is the front's unless a request before it on the
// connection left it with net/http for good (a body, a bare LF), and
// every answer comes in order, no byte lost.
func TestFrontTakesBackRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	tf := startFront(t, fastHandler, Config{HeaderTimeout: time.Minute})
	type request struct {
		raw, method, want string
		sticky            bool // the connection is net/http's after it
	}
	kinds := []func(i int) request{
		func(i int) request { p := fmt.Sprint("/fast/", i); return request{get(p), "GET", "front " + p, false} },
		func(i int) request {
			p := fmt.Sprint("/slow/", i)
			return request{get(p), "GET", "net/http " + p, false}
		},
		func(i int) request {
			return request{"HEAD /fast/" + fmt.Sprint(i) + " HTTP/1.1\r\nHost: test\r\n\r\n", "HEAD", "", false}
		},
		func(i int) request {
			p := fmt.Sprint("/fast/", i)
			return request{get(p, "If-None-Match: \"x\"\r\n"), "GET", "net/http " + p, false}
		},
		func(i int) request {
			p := fmt.Sprint("/slow/", i)
			return request{"GET " + p + " HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET", "net/http " + p, false}
		},
		func(i int) request {
			body := fmt.Sprint("body ", i)
			return request{fmt.Sprintf("POST /body HTTP/1.1\r\nHost: test\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "POST", body, true}
		},
		func(i int) request {
			p := fmt.Sprint("/slow/", i)
			return request{"GET " + p + " HTTP/1.1\nHost: test\n\n", "GET", "net/http " + p, true}
		},
	}
	for iter := range 100 {
		var reqs []request
		var all []byte
		var raws []string // for messages
		for i := range 1 + rng.IntN(8) {
			// Plain GETs twice as often as each other kind.
			k := rng.IntN(len(kinds) + 1)
			r := kinds[max(0, k-1)](i)
			reqs = append(reqs, r)
			raws = append(raws, r.raw)
			all = append(all, r.raw...)
		}
		c, br := tf.dial(t)
		cuts := rand.New(rand.NewPCG(uint64(seed), uint64(iter)+1)) // the writer's own
		go func() {
			for len(all) > 0 {
				n := min(len(all), 1+cuts.IntN(40))
				if _, err := c.Write(all[:n]); err != nil {
					return
				}
				all = all[n:]
				if n%3 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		sticky := false
		for i, r := range reqs {
			want := r.want
			if sticky {
				want = strings.Replace(want, "front ", "net/http ", 1)
			}
			sticky = sticky || r.sticky
			resp, err := http.ReadResponse(br, &http.Request{Method: r.method})
			if err != nil {
				t.Fatalf("answer %d of %q: %v", i, raws, err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || string(body) != want {
				t.Fatalf("answer %d of %q: %q (%v), want %q", i, raws, body, err, want)
			}
		}
		c.Close()
	}
}

// TestFrontTakesBackShutdown: http.Server.Shutdown closes a connection
// the front took back from net/http while it waits for a request, and
// one the front is answering on closes after the answer, which Wait
// waits for.
func TestFrontTakesBackShutdown(t *testing.T) {
	tf, entered, release := startSlowFront(t)
	idle, idleBR := tf.dial(t)
	busy, busyBR := tf.dial(t)
	for _, c := range []struct {
		net.Conn
		br *bufio.Reader
	}{{idle, idleBR}, {busy, busyBR}} {
		io.WriteString(c, get("/page"))
		if _, body := readAnswer(t, c.br); body != "net/http /page" {
			t.Fatalf("answer %q", body)
		}
	}
	io.WriteString(busy, get("/fast/slow")+get("/fast/next"))
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the front did not take /fast/slow after net/http's answer")
	}
	shut := make(chan error)
	go func() { shut <- tf.srv.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	waitOutSlowAnswer(t, tf, release, busy, busyBR, 50*time.Millisecond)
}

// TestFrontByteAtATime sends a request a byte at a time, and then one
// split across writes with a handed-off request.
func TestFrontByteAtATime(t *testing.T) {
	tf := startFront(t, fastHandler, Config{HeaderTimeout: time.Minute})
	c, br := tf.dial(t)
	for _, b := range []byte(get("/fast/a")) {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	if _, body := readAnswer(t, br); body != "front /fast/a" {
		t.Fatalf("answer %q", body)
	}
	req := get("/slow")
	io.WriteString(c, req[:7])
	io.WriteString(c, req[7:])
	if _, body := readAnswer(t, br); body != "net/http /slow" {
		t.Fatalf("answer %q", body)
	}
}

// TestFrontRespondFrom sends a file's bytes through RespondFrom (with
// sendfile on a TCP connection), ranges of a file shared by every answer
// through SendFile (sendfile at an offset, and a copy from a reader that
// is no file), an empty body, and a send that fails before its first
// byte, which the handler then declines.
func TestFrontRespondFrom(t *testing.T) {
	data := []byte(strings.Repeat("0123456789abcdef", 40000))
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	shared, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	// Two pieces of a range, as a body of two stored chunks.
	const lo, mid, hi = 1000, 300001, 555555
	tf := startFront(t, func(w *Writer, r *Request) bool {
		var n int64
		var src io.ReaderAt
		switch r.Path {
		case "/file/all":
			n = int64(len(data))
		case "/file/at":
			n, src = hi-lo, shared
		case "/bytes/at":
			n, src = hi-lo, bytes.NewReader(data)
		case "/file/empty":
		case "/file/fail":
			n = -1
		default:
			return false
		}
		head := []byte("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.FormatInt(max(n, 0), 10) + "\r\n")
		err := w.RespondFrom(head, time.Minute, func(dst io.Writer) error {
			if n < 0 {
				return errors.New("storage failed")
			}
			if src != nil {
				fs := dst.(FileSender)
				if m, err := fs.SendFile(src, lo, mid-lo); err != nil || m != mid-lo {
					return fmt.Errorf("first piece: %d bytes, %v", m, err)
				}
				if m, err := fs.SendFile(src, mid, hi-mid); err != nil || m != hi-mid {
					return fmt.Errorf("second piece: %d bytes, %v", m, err)
				}
				return nil
			}
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(dst, io.LimitReader(f, n))
			return err
		})
		return err == nil || w.Started()
	}, Config{})
	c, br := tf.dial(t)
	io.WriteString(c, get("/file/all")+get("/file/at")+get("/bytes/at"))
	if _, body := readAnswer(t, br); body != string(data) {
		t.Fatalf("body of %d bytes, want the file's %d", len(body), len(data))
	}
	for _, what := range []string{"sendfile at an offset", "a copy"} {
		if _, body := readAnswer(t, br); body != string(data[lo:hi]) {
			t.Fatalf("body by %s: %d bytes, want the range's %d", what, len(body), hi-lo)
		}
	}
	if pos, err := shared.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
		t.Fatalf("the shared file's position moved to %d (%v)", pos, err)
	}
	io.WriteString(c, get("/file/empty")+get("/file/fail"))
	if resp, body := readAnswer(t, br); body != "" || resp.ContentLength != 0 {
		t.Fatalf("empty answer: %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	if _, body := readAnswer(t, br); body != "net/http /file/fail" {
		t.Fatalf("answer %q", body)
	}
}

// TestFrontSendFileStalled stops reading a large body sent by SendFile:
// the write deadline (idle) ends the answer with a timeout, rather than
// the front waiting on the client forever.
func TestFrontSendFileStalled(t *testing.T) {
	name := filepath.Join(t.TempDir(), "big")
	const size = 64 << 20 // far more than the socket buffers hold
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, size); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ended := make(chan error, 1)
	tf := startFront(t, func(w *Writer, r *Request) bool {
		head := []byte("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(size) + "\r\n")
		ended <- w.RespondFrom(head, 200*time.Millisecond, func(dst io.Writer) error {
			_, err := dst.(FileSender).SendFile(f, 0, size)
			return err
		})
		return true
	}, Config{})
	c, err := net.Dial("tcp", tf.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096) // and never read
	io.WriteString(c, get("/big"))
	select {
	case err := <-ended:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the stalled answer ended with %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the front still sends to a client that stopped reading")
	}
}

// TestFrontDate checks the Date field: net/http's format, now.
func TestFrontDate(t *testing.T) {
	tf := startFront(t, fastHandler, Config{})
	c, br := tf.dial(t)
	io.WriteString(c, get("/fast/a"))
	resp, _ := readAnswer(t, br)
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil || time.Since(d) > time.Minute || time.Until(d) > time.Second {
		t.Fatalf("Date %q: %v", resp.Header.Get("Date"), err)
	}
}

// TestFrontHeaderTimeout: a fresh connection that sends nothing, and one
// that stops in the middle of a head, are closed after HeaderTimeout; a
// connection that had an answer waits for its next request as long as it
// takes, as net/http's without an IdleTimeout.
func TestFrontHeaderTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	tf := startFront(t, fastHandler, Config{HeaderTimeout: timeout})
	silent, silentBR := tf.dial(t)
	partial, partialBR := tf.dial(t)
	io.WriteString(partial, "GET /fast/a HTTP/1.1\r\nHo")
	idle, idleBR := tf.dial(t)
	io.WriteString(idle, get("/fast/a"))
	readAnswer(t, idleBR)
	for _, c := range []struct {
		net.Conn
		br *bufio.Reader
	}{{silent, silentBR}, {partial, partialBR}} {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := c.br.ReadByte(); err != io.EOF {
			t.Fatalf("read: %v, want EOF (closed by the server)", err)
		}
	}
	// Both were closed after their timeouts; the idle connection has
	// waited as long, and longer now.
	time.Sleep(3 * timeout)
	io.WriteString(idle, get("/fast/b"))
	if _, body := readAnswer(t, idleBR); body != "front /fast/b" {
		t.Fatalf("answer %q", body)
	}
}

// TestFrontClose: closing the listener (http.Server.Close or Shutdown)
// closes idle connections at once, while one in the middle of an answer
// finishes it and then closes; Wait returns once both are gone.
func TestFrontClose(t *testing.T) {
	tf, entered, release := startSlowFront(t)
	idle, idleBR := tf.dial(t)
	io.WriteString(idle, get("/fast/a"))
	readAnswer(t, idleBR)
	busy, busyBR := tf.dial(t)
	io.WriteString(busy, get("/fast/slow")+get("/fast/next"))
	<-entered
	tf.l.Close()
	idle.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	waitOutSlowAnswer(t, tf, release, busy, busyBR, 0)
	if _, err := net.Dial("tcp", tf.addr); err == nil {
		t.Fatal("dialed a closed listener")
	}
}

// TestFrontWaitCutsOff: when Wait's context ends first, it closes the
// connections still answering.
func TestFrontWaitCutsOff(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	tf := startFront(t, func(w *Writer, r *Request) bool {
		close(entered)
		<-release
		return fastHandler(w, r)
	}, Config{})
	busy, busyBR := tf.dial(t)
	io.WriteString(busy, get("/fast/slow"))
	<-entered
	tf.l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waited := make(chan error)
	go func() { waited <- tf.l.Wait(ctx) }()
	busy.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := busyBR.ReadByte(); err != io.EOF {
		t.Fatalf("read: %v, want EOF", err)
	}
	release <- struct{}{}
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v", err)
	}
}

// startSlowFront starts a front whose answer to /fast/slow closes entered
// and then waits for release to close; other paths are fastHandler's.
func startSlowFront(t *testing.T) (tf *testFront, entered, release chan struct{}) {
	t.Helper()
	entered, release = make(chan struct{}), make(chan struct{})
	tf = startFront(t, func(w *Writer, r *Request) bool {
		if r.Path == "/fast/slow" {
			close(entered)
			<-release
		}
		return fastHandler(w, r)
	}, Config{})
	return tf, entered, release
}

// waitOutSlowAnswer checks that the listener's Wait, started while busy's
// answer to /fast/slow is held up, returns only after release lets that
// answer finish (checked settle after Wait starts) and busy then closes.
func waitOutSlowAnswer(t *testing.T, tf *testFront, release chan struct{}, busy net.Conn, busyBR *bufio.Reader, settle time.Duration) {
	t.Helper()
	waited := make(chan error)
	go func() { waited <- tf.l.Wait(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while an answer was under way", err)
	case <-time.After(settle):
	}
	close(release)
	if _, body := readAnswer(t, busyBR); body != "front /fast/slow" {
		t.Fatalf("answer %q", body)
	}
	busy.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := busyBR.ReadByte(); err != io.EOF {
		t.Fatalf("after its answer: %v, want EOF", err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}
