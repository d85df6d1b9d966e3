package httpfront

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const get = "GET /i/abc.jpg HTTP/1.1\r\nHost: example.com\r\n"
	for _, tc := range []struct {
		name, head string
		plain      bool // else: not plain, or more (below)
		more       bool
		path, q    string
	}{
		{name: "plain", head: get + "\r\n", plain: true, path: "/i/abc.jpg"},
		{name: "query", head: "GET /t/a.png?w=256&x=y HTTP/1.1\r\nHost: h:80\r\n\r\n", plain: true, path: "/t/a.png", q: "w=256&x=y"},
		{name: "fields", head: get + "Accept: image/webp,*/*\r\nUser-Agent: x/1.0 (y)\r\nConnection: Keep-Alive\r\n\r\n", plain: true, path: "/i/abc.jpg"},
		{name: "trailing slash", head: "GET /i/ HTTP/1.1\r\nHost: h\r\n\r\n", plain: true, path: "/i/"},
		{name: "empty", head: "", more: true},
		{name: "prefix", head: "GE", more: true},
		{name: "partial line", head: "GET /i/abc.jpg HTT", more: true},
		{name: "partial head", head: get, more: true},
		{name: "post", head: "POST /upload HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "head method", head: "HEAD /i/abc.jpg HTTP/1.1\r\nHost: h\r\n\r\n", plain: true, path: "/i/abc.jpg"},
		{name: "head prefix", head: "HEA", more: true},
		{name: "head partial", head: "HEAD /i/abc.jpg HTTP/1.1\r\nHost: h\r\n", more: true},
		{name: "options", head: "OPTIONS /i/abc.jpg HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "lower-case method", head: "get /i/abc.jpg HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "http/1.0", head: "GET /i/abc.jpg HTTP/1.0\r\nHost: h\r\n\r\n"},
		{name: "http/2 preface", head: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{name: "absolute form", head: "GET http://h/i/abc.jpg HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "escape", head: "GET /i/a%62c.jpg HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "plus in query", head: "GET /t/a.jpg?w=1+2 HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "semicolon", head: "GET /t/a.jpg?w=1;x HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "dot segment", head: "GET /i/../x HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "dot end", head: "GET /i/. HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "double slash", head: "GET //i/x HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "no host", head: "GET /i/abc.jpg HTTP/1.1\r\nAccept: */*\r\n\r\n"},
		{name: "two hosts", head: get + "Host: other\r\n\r\n"},
		{name: "empty host", head: "GET /i/abc.jpg HTTP/1.1\r\nHost: \r\n\r\n"},
		{name: "odd host", head: "GET /i/abc.jpg HTTP/1.1\r\nHost: a b\r\n\r\n"},
		{name: "range", head: get + "Range: bytes=0-1\r\n\r\n"},
		{name: "if-none-match", head: get + "if-none-match: \"x\"\r\n\r\n", plain: true, path: "/i/abc.jpg"},
		{name: "if-modified-since", head: get + "If-Modified-Since: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n", plain: true, path: "/i/abc.jpg"},
		{name: "if-match", head: get + "If-Match: \"x\"\r\n\r\n"},
		{name: "if-unmodified-since", head: get + "If-Unmodified-Since: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n"},
		{name: "if-range", head: get + "If-Range: \"x\"\r\n\r\n"},
		{name: "body", head: get + "Content-Length: 3\r\n\r\nabc"},
		{name: "chunked", head: get + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{name: "upgrade", head: get + "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n"},
		{name: "close", head: get + "Connection: close\r\n\r\n"},
		{name: "folded", head: get + "X-A: a\r\n b\r\n\r\n"},
		{name: "space before colon", head: get + "X-A : a\r\n\r\n"},
		{name: "control byte", head: get + "X-A: a\x01b\r\n\r\n"},
		{name: "high byte", head: get + "X-A: caf\xc3\xa9\r\n\r\n"},
		{name: "bare lf", head: "GET /i/abc.jpg HTTP/1.1\nHost: h\n\n"},
		{name: "bare lf pending", head: "GET /i/abc.jpg HTTP/1.1\r\nHost: h\n"},
		{name: "no colon", head: get + "X-A\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			n, more := parse([]byte(tc.head), &r)
			switch {
			case tc.plain:
				if n == 0 || r.Path != tc.path || r.Query != tc.q {
					t.Fatalf("parse = %d, %v, path %q query %q; want plain %q %q", n, more, r.Path, r.Query, tc.path, tc.q)
				}
				if n != len(tc.head) {
					t.Fatalf("head length %d, want %d", n, len(tc.head))
				}
				if method, _, _ := strings.Cut(tc.head, " "); r.Method != method {
					t.Fatalf("method %q, want %q", r.Method, method)
				}
			case n != 0 || more != tc.more:
				t.Fatalf("parse = %d, %v; want 0, %v", n, more, tc.more)
			}
		})
	}
}

func TestRequestHeader(t *testing.T) {
	head := "GET /x HTTP/1.1\r\nHost: h\r\nAccept:  image/webp,*/* \r\naccept: second\r\nX-Empty:\r\n\r\n"
	var r Request
	if n, _ := parse([]byte(head), &r); n == 0 {
		t.Fatal("not plain")
	}
	for name, want := range map[string]string{"Accept": "image/webp,*/*", "ACCEPT": "image/webp,*/*", "host": "h", "X-Empty": "", "Origin": ""} {
		if got := r.Header(name); got != want {
			t.Errorf("Header(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzParse checks that whatever the front takes as a plain request is one
// net/http reads the same way: a GET over HTTP/1.1, with no body, the same
// path, query and fields. Whatever it does not take, net/http gets whole.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"GET /i/abc.jpg HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET /t/a.png?w=256 HTTP/1.1\r\nHost: h:80\r\nAccept: image/webp\r\nConnection: keep-alive\r\n\r\n",
		"GET /i/x HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\n\r\n",
		"GET /a/./b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\n",
		"GET /x HTTP/1.1\r\nHost: h\r\nX:\ty\t\r\n\r\n",
		"HEAD /i/x HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /i/x HTTP/1.1\r\nHost: h\r\nIf-None-Match: W/\"a\", \"b\"\r\nIf-Modified-Since: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Request
		n, more := parse(b, &r)
		if n == 0 {
			if more && !bytes.HasPrefix(getPrefix, b) && !bytes.HasPrefix(b, getPrefix) && !bytes.HasPrefix(headPrefix, b) && !bytes.HasPrefix(b, headPrefix) {
				t.Fatalf("wants more of %q", b)
			}
			return
		}
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b[:n])))
		if err != nil {
			t.Fatalf("plain to the front, refused by net/http: %v\n%q", err, b[:n])
		}
		if hr.Method != r.Method || hr.Method != http.MethodGet && hr.Method != http.MethodHead || hr.ProtoMajor != 1 || hr.ProtoMinor != 1 || hr.ContentLength != 0 || hr.Close ||
			len(hr.TransferEncoding) != 0 || hr.URL.Path != r.Path || hr.URL.RawQuery != r.Query || hr.URL.RawPath != "" {
			t.Fatalf("net/http reads %q as %s %q ?%q (proto %s, length %d, close %v); the front as %q ?%q",
				b[:n], hr.Method, hr.URL.Path, hr.URL.RawQuery, hr.Proto, hr.ContentLength, hr.Close, r.Path, r.Query)
		}
		for name := range hr.Header {
			if got, want := r.Header(name), hr.Header.Get(name); got != want {
				t.Fatalf("field %s: the front reads %q, net/http %q", name, got, want)
			}
		}
		if r.Header("Host") != hr.Host {
			t.Fatalf("host %q, net/http %q", r.Header("Host"), hr.Host)
		}
		for _, name := range notPlainFields {
			if _, ok := hr.Header[http.CanonicalHeaderKey(name)]; ok {
				t.Fatalf("plain with %s", name)
			}
		}
		if strings.Contains(hr.URL.Path, "//") || strings.Contains(hr.URL.Path, "/./") || strings.Contains(hr.URL.Path, "/../") {
			t.Fatalf("unclean path %q", hr.URL.Path)
		}
	})
}
