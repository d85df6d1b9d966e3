package httpfront

import (
	"bytes"
	"net"
	"net/http"
)

// Request is a plain GET or HEAD the front read (see the package doc).
// Its strings and its head are valid during the Handler call only.
type Request struct {
	// Method is "GET" or "HEAD"; a HEAD is answered with the head alone.
	Method string
	// Path is the request target's path, clean and unescaped (it has no
	// escapes); Query is what follows the '?', without it, or "".
	Path, Query string
	// fields are the head's header lines, CRLF-separated, after the
	// request line.
	fields []byte
	nc     net.Conn
}

// RemoteAddr returns the client's address, as http.Request.RemoteAddr.
func (r *Request) RemoteAddr() string { return r.nc.RemoteAddr().String() }

// Header returns the value of the first header field called name (any
// case), with surrounding blanks trimmed, or "", as http.Header.Get does.
func (r *Request) Header(name string) string {
	for rest := r.fields; len(rest) > 0; {
		var line []byte
		line, rest = cutLine(rest)
		colon := bytes.IndexByte(line, ':')
		if colon == len(name) && equalFold(line[:colon], name) {
			return string(trimBlanks(line[colon+1:]))
		}
	}
	return ""
}

var (
	crlf       = []byte("\r\n")
	headEnd    = []byte("\r\n\r\n")
	getPrefix  = []byte("GET /")
	headPrefix = []byte("HEAD /")
	protoHTTP1 = []byte(" HTTP/1.1")
)

// parse reads the request head at the start of b into r. It returns the
// head's length (its blank line included) when b starts with the whole
// head of a plain request; 0 and more when b may still become one once
// more bytes arrive; 0 and !more when the request is not plain, or not
// valid, and goes to net/http.
func parse(b []byte, r *Request) (n int, more bool) {
	prefix := getPrefix
	if len(b) > 0 && b[0] == 'H' {
		prefix = headPrefix
	}
	if len(b) < len(prefix) {
		return 0, bytes.HasPrefix(prefix, b)
	}
	if !bytes.HasPrefix(b, prefix) {
		return 0, false
	}
	end := bytes.Index(b, headEnd)
	if bareLF(b, end) {
		// net/http takes a bare LF as a line end; this parser does not.
		return 0, false
	}
	if end < 0 {
		return 0, true
	}
	head := b[:end+2] // each line with its CRLF
	eol := bytes.Index(head, crlf)
	target, ok := bytes.CutSuffix(head[len(prefix)-1:eol], protoHTTP1)
	if !ok || !plainTarget(target, r) {
		return 0, false
	}
	r.Method = http.MethodGet
	if prefix[0] == 'H' {
		r.Method = http.MethodHead
	}
	r.fields = nil
	if eol < end { // else no field at all
		r.fields = head[eol+2 : end]
	}
	if !plainFields(r.fields) {
		return 0, false
	}
	return end + 4, false
}

// bareLF reports whether b has a LF without a CR before it, up to the
// head's end (end, or all of b when end < 0).
func bareLF(b []byte, end int) bool {
	if end >= 0 {
		b = b[:end+4]
	}
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// plainTarget splits an origin-form target made of unreserved characters
// into r.Path, a clean path (what http.ServeMux would not redirect), and
// r.Query, of unreserved characters, '=' and '&'. Escapes, '+' and ';'
// are not plain: net/url would decode them.
func plainTarget(t []byte, r *Request) bool {
	path, query, _ := bytes.Cut(t, []byte{'?'})
	if len(path) == 0 || path[0] != '/' || !clean(path) {
		return false
	}
	for _, c := range path {
		if !unreserved(c) && c != '/' {
			return false
		}
	}
	for _, c := range query {
		if !unreserved(c) && c != '=' && c != '&' {
			return false
		}
	}
	r.Path, r.Query = string(path), string(query)
	return true
}

// clean reports whether path (which starts with '/') has no empty, "."
// or ".." segment but possibly a last empty one (a trailing slash), as
// path.Clean keeps it.
func clean(path []byte) bool {
	for seg := range bytes.SplitSeq(path[1:], []byte{'/'}) {
		if string(seg) == "." || string(seg) == ".." {
			return false
		}
	}
	return !bytes.Contains(path, []byte("//"))
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// plainFields checks the header lines: well formed (a token, a colon,
// visible ASCII, spaces and tabs), exactly one Host of plain characters,
// and no field that makes the request more than a plain GET — one that
// frames a body, asks for a range or a precondition other than the
// revalidation of a cached answer, or changes the connection.
func plainFields(fields []byte) bool {
	hosts := 0
	for rest := fields; len(rest) > 0; {
		var line []byte
		line, rest = cutLine(rest)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return false
		}
		name, value := line[:colon], line[colon+1:]
		for _, c := range name {
			if !tokenChar(c) {
				return false
			}
		}
		for _, c := range value {
			if (c < ' ' && c != '\t') || c >= 0x7f {
				return false
			}
		}
		value = trimBlanks(value)
		switch {
		case equalFold(name, "Host"):
			hosts++
			if len(value) == 0 || !hostChars(value) {
				return false
			}
		case equalFold(name, "Connection"):
			if !equalFold(value, "keep-alive") {
				return false
			}
		case notPlain(name):
			return false
		}
	}
	return hosts == 1
}

// notPlainFields are the fields a request that carries any of is not
// plain.
// If-None-Match and If-Modified-Since, which a browser sends to
// revalidate what it cached, are plain: the Handler answers them (a 304)
// or declines.
var notPlainFields = []string{
	"Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "Trailer",
	"Range", "If-Range", "If-Match", "If-Unmodified-Since",
}

func notPlain(name []byte) bool {
	for _, f := range notPlainFields {
		if equalFold(name, f) {
			return true
		}
	}
	return false
}

// tokenChar reports whether c may be in a field name (RFC 9110's tchar).
func tokenChar(c byte) bool {
	if unreserved(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '^', '`', '|':
		return true
	}
	return false
}

// hostChars reports whether a Host value is a plain name or address with
// a port: net/http refuses some others, the front refuses all others.
func hostChars(v []byte) bool {
	for _, c := range v {
		if !unreserved(c) && c != ':' && c != '[' && c != ']' {
			return false
		}
	}
	return true
}

func trimBlanks(v []byte) []byte {
	return bytes.TrimFunc(v, func(r rune) bool { return r == ' ' || r == '\t' })
}

// equalFold is strings.EqualFold for ASCII, without a conversion.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// cutLine splits the first CRLF-ended line (or the last, unended one)
// off header fields.
func cutLine(fields []byte) (line, rest []byte) {
	if i := bytes.Index(fields, crlf); i >= 0 {
		return fields[:i], fields[i+2:]
	}
	return fields, nil
}
