package imgbed

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

var albumTokens = []Token{
	{Name: "alice", Secret: "alice-secret"},
	{Name: "bob", Secret: "bob-secret"},
	{Name: "root", Secret: "root-secret", Admin: true},
}

// call sends a request with a token (empty: none) and decodes the JSON
// answer's data into out (when not nil).
func (th *testHost) call(t *testing.T, method, path, token string, body io.Reader, contentType string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, th.srv.URL+path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, raw := th.do(t, req)
	if out != nil && resp.StatusCode/100 == 2 {
		var env struct{ Data json.RawMessage }
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatalf("%s %s: %v %s", method, path, err, raw)
		}
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s %s: %v %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

type albumPageData struct {
	Album   albumData
	Data    []imageData
	HasMore bool `json:"has_more"`
}

// TestAlbums: albums belong to their token, hold only their owner's
// images (an admin may do anything), are public to read, and lose an
// image when it is deleted.
func TestAlbums(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: albumTokens})
	var a, b albumData
	if st := th.call(t, "POST", "/api/v1/albums", "alice-secret", strings.NewReader(`{"name":"Holiday 假期","description":"sea"}`), "application/json", &a); st != 201 || a.Name != "Holiday 假期" || a.Owner != "alice" {
		t.Fatalf("create: %d %+v", st, a)
	}
	form := url.Values{"name": {"bob's"}}.Encode()
	if st := th.call(t, "POST", "/api/v1/albums", "bob-secret", strings.NewReader(form), "application/x-www-form-urlencoded", &b); st != 201 {
		t.Fatalf("create from a form: %d", st)
	}
	if st := th.call(t, "POST", "/api/v1/albums", "", strings.NewReader(`{"name":"x"}`), "application/json", nil); st != 401 {
		t.Errorf("anonymous create: %d", st)
	}
	if st := th.call(t, "POST", "/api/v1/albums", "alice-secret", strings.NewReader(`{"name":""}`), "application/json", nil); st != 400 {
		t.Errorf("create without a name: %d", st)
	}
	up := func(token string, w int) response {
		t.Helper()
		status, r := th.uploadRaw(t, encodePNG(t, gradient(w, 10)), "image/png", "Authorization", "Bearer "+token)
		if status != 201 {
			t.Fatalf("upload: %d", status)
		}
		return r
	}
	a1, a2, a3, b1 := up("alice-secret", 10), up("alice-secret", 11), up("alice-secret", 12), up("bob-secret", 13)
	member := func(method, album, image, token string) int {
		t.Helper()
		return th.call(t, method, "/api/v1/albums/"+album+"/images/"+image, token, nil, "", nil)
	}
	for _, c := range []struct {
		method, album, image, token string
		want                        int
	}{
		{"PUT", a.ID, a1.Data.Key, "alice-secret", 200},
		{"PUT", a.ID, a2.Data.Key, "alice-secret", 200},
		{"PUT", a.ID, a2.Data.Key, "alice-secret", 200}, // again: no change
		{"PUT", a.ID, b1.Data.Key, "alice-secret", 403}, // not her image
		{"PUT", a.ID, a3.Data.Key, "bob-secret", 403},   // not his album
		{"PUT", b.ID, b1.Data.Key, "bob-secret", 200},
		{"PUT", b.ID, a3.Data.Key, "root-secret", 200}, // an admin may
		{"PUT", a.ID, "nosuchid", "alice-secret", 404},
		{"PUT", "nosuchal", a1.Data.Key, "alice-secret", 404},
		{"PUT", a.ID, a3.Data.Key, "", 401},
	} {
		if got := member(c.method, c.album, c.image, c.token); got != c.want {
			t.Errorf("%s %s %s as %q: %d, want %d", c.method, c.album, c.image, c.token, got, c.want)
		}
	}
	var page albumPageData
	if st := th.call(t, "GET", "/api/v1/albums/"+a.ID, "", nil, "", &page); st != 200 || len(page.Data) != 2 ||
		page.Data[0].Key != a2.Data.Key || page.Data[1].Key != a1.Data.Key || page.Album.Name != a.Name {
		t.Fatalf("public album: %d %+v", st, page)
	}
	resp, html := th.get(t, th.srv.URL+"/a/"+a.ID)
	if resp.StatusCode != 200 || !strings.Contains(string(html), a1.Data.Links.ThumbnailURL) ||
		!strings.Contains(string(html), "Holiday 假期") || resp.Header.Get("Content-Security-Policy") != pagePolicy {
		t.Fatalf("album page: %d %s", resp.StatusCode, html)
	}
	var mine struct{ Data []albumData }
	if st := th.call(t, "GET", "/api/v1/albums", "alice-secret", nil, "", &mine); st != 200 || len(mine.Data) != 1 || mine.Data[0].ID != a.ID {
		t.Fatalf("alice's albums: %d %+v", st, mine)
	}

	// Taking an image out, deleting one, renaming, deleting the album.
	if got := member("DELETE", a.ID, a1.Data.Key, "alice-secret"); got != 200 {
		t.Fatalf("remove: %d", got)
	}
	if st := th.call(t, "DELETE", "/api/v1/images/"+a2.Data.Key, "alice-secret", nil, "", nil); st != 200 {
		t.Fatalf("delete image: %d", st)
	}
	th.call(t, "GET", "/api/v1/albums/"+a.ID, "", nil, "", &page)
	if len(page.Data) != 0 {
		t.Fatalf("album after its images left: %+v", page.Data)
	}
	if err := th.Check(); err != nil {
		t.Fatal(err)
	}
	var renamed albumData
	if st := th.call(t, "PATCH", "/api/v1/albums/"+a.ID, "alice-secret", strings.NewReader(`{"name":"Trip"}`), "application/json", &renamed); st != 200 || renamed.Name != "Trip" {
		t.Fatalf("rename: %d %+v", st, renamed)
	}
	if st := th.call(t, "DELETE", "/api/v1/albums/"+b.ID, "alice-secret", nil, "", nil); st != 403 {
		t.Fatalf("deleting another's album: %d", st)
	}
	if st := th.call(t, "DELETE", "/api/v1/albums/"+b.ID, "bob-secret", nil, "", nil); st != 200 {
		t.Fatalf("delete album: %d", st)
	}
	if resp, _ := th.get(t, th.srv.URL+"/a/"+b.ID); resp.StatusCode != 404 {
		t.Errorf("deleted album's page: %d", resp.StatusCode)
	}
	if th.status(t, b1.URL) != 200 || th.status(t, a3.URL) != 200 {
		t.Error("deleting an album deleted its images")
	}
}

// TestLskyV1: Lsky Pro's token, profile and strategies routes, as its
// clients call them.
func TestLskyV1(t *testing.T) {
	th := newTestHost(t, Config{Tokens: []Token{{Name: "alice", Secret: "alice-secret", QuotaBytes: 1 << 20}}})
	var tok struct{ Token string }
	form := url.Values{"email": {"alice"}, "password": {"alice-secret"}}.Encode()
	if st := th.call(t, "POST", "/api/v1/tokens", "", strings.NewReader(form), "application/x-www-form-urlencoded", &tok); st != 200 || len(tok.Token) != issuedLen {
		t.Fatalf("tokens: %d %+v", st, tok)
	}
	for _, body := range []string{`{"email":"alice","password":"wrong"}`, `{"email":"bob","password":"alice-secret"}`, `{}`} {
		if st := th.call(t, "POST", "/api/v1/tokens", "", strings.NewReader(body), "application/json", nil); st != 401 {
			t.Errorf("tokens with %s: %d", body, st)
		}
	}
	th.uploadRaw(t, encodePNG(t, gradient(10, 10)), "image/png", "Authorization", "Bearer "+tok.Token)
	var profile struct {
		Name     string
		Capacity float64
		Used     float64 `json:"used_capacity"`
		Images   int     `json:"image_num"`
	}
	if st := th.call(t, "GET", "/api/v1/profile", tok.Token, nil, "", &profile); st != 200 || profile.Name != "alice" ||
		profile.Capacity != 1024 || profile.Images != 1 || profile.Used <= 0 {
		t.Errorf("profile: %d %+v", st, profile)
	}
	var strategies struct{ Strategies []struct{ ID int } }
	if st := th.call(t, "GET", "/api/v1/strategies", tok.Token, nil, "", &strategies); st != 200 || len(strategies.Strategies) != 1 {
		t.Errorf("strategies: %d %+v", st, strategies)
	}
}

// TestUploadIntoAlbum: Lsky's album_id puts an upload into the
// uploader's album; someone else's album refuses the upload before
// anything is stored.
func TestUploadIntoAlbum(t *testing.T) {
	th := newTestHost(t, Config{Tokens: albumTokens})
	var a albumData
	th.call(t, "POST", "/api/v1/albums", "alice-secret", strings.NewReader(`{"name":"a"}`), "application/json", &a)
	mine := encodePNG(t, gradient(21, 10))
	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload?album_id="+a.ID, bytes.NewReader(mine))
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Authorization", "Bearer alice-secret")
	if resp, body := th.do(t, req); resp.StatusCode != 201 {
		t.Fatalf("upload into her album: %d %s", resp.StatusCode, body)
	}
	theirs := encodePNG(t, gradient(22, 10))
	req, _ = http.NewRequest("POST", th.srv.URL+"/api/v1/upload?album_id="+a.ID, bytes.NewReader(theirs))
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Authorization", "Bearer bob-secret")
	if resp, _ := th.do(t, req); resp.StatusCode != 403 {
		t.Fatalf("upload into another's album: %d", resp.StatusCode)
	}
	var page albumPageData
	if th.call(t, "GET", "/api/v1/albums/"+a.ID, "", nil, "", &page); len(page.Data) != 1 || page.Data[0].SHA256 != sumHex(mine) {
		t.Fatalf("album: %+v", page.Data)
	}
	if th.chunkCount(t, theirs) != 0 {
		t.Error("the refused upload was stored")
	}
}
