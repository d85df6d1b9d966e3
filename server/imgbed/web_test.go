package imgbed

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPage checks that the page and its assets are served with a policy
// that forbids anything from elsewhere, and reference nothing external.
func TestPage(t *testing.T) {
	th := newTestHost(t, Config{})
	resp, body := th.get(t, th.srv.URL+"/")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="drop"`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{"/", "/assets/app.js", "/assets/style.css"} {
		resp, body := th.get(t, th.srv.URL+p)
		if resp.StatusCode != 200 || strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
			t.Errorf("%s: %d, or it references another site", p, resp.StatusCode)
		}
	}
	if resp, _ := th.get(t, th.srv.URL+"/nothing"); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// TestUploaderConfigs checks the ShareX and PicGo files: the fields the
// clients read, and the token only for callers who hold one.
func TestUploaderConfigs(t *testing.T) {
	th := newTestHost(t, Config{Tokens: testTokens})
	var sx map[string]any
	resp, body := th.get(t, th.srv.URL+"/api/v1/sharex.sxcu")
	if err := json.Unmarshal(body, &sx); err != nil || resp.StatusCode != 200 {
		t.Fatalf("sxcu: %d %v", resp.StatusCode, err)
	}
	for k, want := range map[string]string{
		"RequestURL": th.srv.URL + "/api/v1/upload", "Body": "MultipartFormData", "FileFormName": "file",
		"URL": "{json:data.links.url}", "ThumbnailURL": "{json:data.links.thumbnail_url}",
		"DeletionURL": "{json:data.links.delete_url}", "ErrorMessage": "{json:message}",
	} {
		if sx[k] != want {
			t.Errorf("sxcu %s = %v, want %q", k, sx[k], want)
		}
	}
	if sx["Headers"] != nil {
		t.Error("anonymous caller got a token")
	}
	_, body = th.get(t, th.srv.URL+"/api/v1/sharex.sxcu?for=alice", "Authorization", "Bearer root-secret")
	if !strings.Contains(string(body), `"Authorization":"Bearer alice-secret"`) {
		t.Errorf("admin asking for alice's file: %s", body)
	}
	if resp, _ := th.get(t, th.srv.URL+"/api/v1/sharex.sxcu?for=root", "Authorization", "Bearer alice-secret"); resp.StatusCode != 401 {
		t.Errorf("user asking for another token: %d", resp.StatusCode)
	}
	resp, body = th.get(t, th.srv.URL+"/api/v1/picgo.json?key=alice-secret")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"jsonPath":"url"`) ||
		!strings.Contains(string(body), `Bearer alice-secret`) {
		t.Errorf("picgo: %d %s", resp.StatusCode, body)
	}
}
