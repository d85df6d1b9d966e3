package imgbed

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestJSONErrorsForRoutes: an unknown path and a method a route does not
// take answer Lsky's JSON error, not Go's plain text, and a 405 says what
// is allowed.
func TestJSONErrorsForRoutes(t *testing.T) {
	th := newTestHost(t, Config{})
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/nothing", 404, ""},
		{"GET", "/api/v1/nope", 404, ""},
		{"POST", "/nothing/at/all", 404, ""},
		{"PUT", "/api/v1/upload", 405, "POST"},
		{"DELETE", "/i/abc.png", 405, "GET, HEAD"},
		{"POST", "/api/v1/images/abc", 405, "DELETE, GET, HEAD"},
	} {
		req, _ := http.NewRequest(tc.method, th.srv.URL+tc.path, nil)
		resp, body := th.do(t, req)
		r := decodeResponse(t, body)
		if resp.StatusCode != tc.status || r.Status || r.Message == "" ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %q Allow %q: %s", tc.method, tc.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), body)
		}
	}
}

// TestCORS: allowed origins get the CORS headers and their preflights an
// answer; other origins get neither, and without the setting nothing
// changes.
func TestCORS(t *testing.T) {
	preflight := func(h http.Handler, origin string) *http.Response {
		req := httptest.NewRequest("OPTIONS", "/api/v1/upload", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Result()
	}
	some := newTestHost(t, Config{CORSOrigins: []string{"https://blog.example"}}).Handler()
	resp := preflight(some, "https://blog.example")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://blog.example" ||
		resp.Header.Get("Access-Control-Allow-Headers") != corsHeaders || resp.Header.Get("Vary") != "Origin" {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp = preflight(some, "https://evil.example")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode != 405 {
		t.Errorf("other origin's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req := httptest.NewRequest("GET", "/api/v1/images/abc", nil)
	req.Header.Set("Origin", "https://blog.example")
	w := httptest.NewRecorder()
	some.ServeHTTP(w, req)
	if w.Code != 404 || w.Header().Get("Access-Control-Allow-Origin") != "https://blog.example" ||
		w.Header().Get("Access-Control-Expose-Headers") == "" {
		t.Errorf("allowed GET: %d %v", w.Code, w.Header())
	}
	anyOrigin := newTestHost(t, Config{CORSOrigins: []string{"*"}}).Handler()
	if resp := preflight(anyOrigin, "https://x.example"); resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("* preflight: %d %v", resp.StatusCode, resp.Header)
	}
	none := newTestHost(t, Config{}).Handler()
	if resp := preflight(none, "https://blog.example"); resp.StatusCode != 405 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no CORS setting: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestPageLang(t *testing.T) {
	for _, tc := range []struct{ query, cookie, accept, want string }{
		{"", "", "", "en"},
		{"", "", "zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"", "", "en-US,en;q=0.9,zh;q=0.8", "en"},
		{"", "", "fr-FR, zh-Hans;q=0.7, en;q=0.3", "zh"},
		{"", "", "de, fr", "en"},
		{"", "", "zh;q=0", "en"},
		{"", "en", "zh-CN", "en"},
		{"zh", "en", "en", "zh"},
		{"xx", "yy", "zh-TW", "zh"},
	} {
		req := httptest.NewRequest("GET", "/?lang="+tc.query, nil)
		req.Header.Set("Accept-Language", tc.accept)
		if tc.cookie != "" {
			req.AddCookie(&http.Cookie{Name: langCookie, Value: tc.cookie})
		}
		if got := pageLang(req); got != tc.want {
			t.Errorf("%+v: %s", tc, got)
		}
	}
}

// TestPageStringsComplete: every language has every string, so no label
// falls back to its key.
func TestPageStringsComplete(t *testing.T) {
	en := slices.Sorted(maps.Keys(pageStrings["en"]))
	for lang, m := range pageStrings {
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, en) {
			t.Errorf("%s has keys %v, English %v", lang, got, en)
		}
		for k, v := range m {
			if v == "" {
				t.Errorf("%s: %s is empty", lang, k)
			}
		}
	}
	th := newTestHost(t, Config{})
	_, body := th.get(t, th.srv.URL+"/", "Accept-Language", "zh-CN")
	if !strings.Contains(string(body), `<html lang="zh">`) || !strings.Contains(string(body), pageStrings["zh"]["drop"]) {
		t.Errorf("Chinese page: %s", body)
	}
}

// TestVaryKeepsOrigin: with CORS limited to a list of origins, answers
// vary by Origin; a negotiated thumbnail varies by Accept as well, and
// neither header replaces the other (a cache would otherwise give one
// origin's answer, or one format, to the other).
func TestVaryKeepsOrigin(t *testing.T) {
	th := newTestHost(t, Config{CORSOrigins: []string{"https://blog.example"}})
	status, up := th.uploadRaw(t, encodePNG(t, gradient(64, 48)), "image/png")
	if status != http.StatusCreated || up.Data.Links.ThumbnailURL == "" {
		t.Fatalf("upload: %d %+v", status, up)
	}
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{up.Data.Links.ThumbnailURL, []string{"Origin", "Accept"}},
		{up.Data.Links.URL, []string{"Origin"}},
		{th.srv.URL + "/", []string{"Origin", "Accept-Language, Cookie"}},
	} {
		resp, _ := th.get(t, tc.url, "Origin", "https://blog.example", "Accept", "image/webp,*/*")
		if got := resp.Header.Values("Vary"); resp.StatusCode != 200 || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("GET %s: %d, Vary %q, want %q", tc.url, resp.StatusCode, got, tc.want)
		}
	}
}
