package imgbed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRoundTrip uploads every image of Go's source tree and generated ones
// in each format, and reads each back: whole, by range, conditionally and
// with HEAD; a second upload is a duplicate sharing the bytes. In each
// blob store.
func TestRoundTrip(t *testing.T) { eachBackend(t, testRoundTrip) }

func testRoundTrip(t *testing.T, b backend) {
	th := b.host(t, Config{ChunkSize: 4096}) // several chunks per image
	th.st.local.batch = 16 << 10             // and several batches for the larger ones
	files := goTestdata(t)
	img := gradient(300, 200)
	files["gen.png"] = encodePNG(t, img)
	files["gen.jpg"] = encodeJPEG(t, img)
	files["gen.gif"] = encodeGIF(t, img)
	files["gen.webp"] = encodeWebP(t, img)
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			// The "truncated" files of Go's tree lack scan data but are
			// structurally whole: both decoders accept them.
			status, r := th.uploadRaw(t, data, "application/octet-stream")
			if status != http.StatusCreated || !r.Status {
				t.Fatalf("upload: %d %+v", status, r)
			}
			d := r.Data
			sum := sha256.Sum256(data)
			if d.SHA256 != hex.EncodeToString(sum[:]) || d.Size != int64(len(data)) || r.URL != d.Links.URL {
				t.Fatalf("envelope %+v does not describe the upload", r)
			}
			if d.Width == 0 || d.Height == 0 || len(d.Key) > 10 || d.Links.DeleteURL == "" {
				t.Fatalf("envelope %+v is incomplete", d)
			}
			resp, body := th.get(t, d.Links.URL)
			if resp.StatusCode != 200 || !bytes.Equal(body, data) {
				t.Fatalf("GET: %d, %d bytes, want the %d uploaded", resp.StatusCode, len(body), len(data))
			}
			for k, want := range map[string]string{
				"Content-Type":           d.Mimetype,
				"ETag":                   `"` + d.SHA256 + `"`,
				"Cache-Control":          "public, max-age=31536000, immutable",
				"X-Content-Type-Options": "nosniff",
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if resp.Header.Get("Last-Modified") == "" {
				t.Error("no Last-Modified")
			}
			lo, hi := len(data)/3, len(data)/3+5000
			hi = min(hi, len(data)-1)
			resp, body = th.get(t, d.Links.URL, "Range", fmt.Sprintf("bytes=%d-%d", lo, hi))
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[lo:hi+1]) {
				t.Fatalf("Range: %d, %d bytes", resp.StatusCode, len(body))
			}
			resp, body = th.get(t, d.Links.URL, "If-None-Match", resp.Header.Get("ETag"))
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Fatalf("If-None-Match: %d", resp.StatusCode)
			}
			req, _ := http.NewRequest("HEAD", d.Links.URL, nil)
			resp, body = th.do(t, req)
			if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(data)) {
				t.Fatalf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
			}
			status, r2 := th.uploadRaw(t, data, "image/png")
			if status != http.StatusOK || !r2.Data.Duplicate || r2.Data.SHA256 != d.SHA256 || r2.Data.Key == d.Key {
				t.Fatalf("second upload: %d %+v", status, r2.Data)
			}
			resp, body = th.get(t, th.srv.URL+"/api/v1/images/"+d.Key)
			if m := decodeResponse(t, body); resp.StatusCode != 200 || m.Data.SHA256 != d.SHA256 || m.Data.Links.DeleteURL != "" {
				t.Fatalf("metadata: %d %+v", resp.StatusCode, m)
			}
		})
	}
}

// TestMultipart covers the field names real clients use and several
// files in one request, in each blob store.
func TestMultipart(t *testing.T) { eachBackend(t, testMultipart) }

func testMultipart(t *testing.T, bk backend) {
	th := bk.host(t, Config{})
	a, b := encodePNG(t, gradient(20, 10)), encodePNG(t, gradient(10, 20))
	for _, field := range []string{"file", "image", "source", "images[]"} {
		body, ct := multipartBody(t, field, a)
		req, _ := http.NewRequest("POST", th.srv.URL+"/upload", body)
		req.Header.Set("Content-Type", ct)
		resp, out := th.do(t, req)
		if r := decodeResponse(t, out); resp.StatusCode/100 != 2 || r.Data.Width != 20 || r.Data.OriginName != "shot0.png" {
			t.Fatalf("field %q: %d %s", field, resp.StatusCode, out)
		}
	}
	body, ct := multipartBody(t, "images[]", b, a)
	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload", body)
	req.Header.Set("Content-Type", ct)
	resp, out := th.do(t, req)
	r := decodeResponse(t, out)
	if resp.StatusCode != http.StatusCreated || len(r.Files) != 2 || r.Data.Width != 10 || !r.Files[1].Data.Duplicate {
		t.Fatalf("two files: %d %s", resp.StatusCode, out)
	}
}

// TestDeleteFreesBytes deletes two references to one blob: the bytes go
// only with the last, thumbnails with them. In each blob store.
func TestDeleteFreesBytes(t *testing.T) { eachBackend(t, testDeleteFreesBytes) }

func testDeleteFreesBytes(t *testing.T, b backend) {
	th := b.host(t, Config{ChunkSize: 1024})
	data := encodePNG(t, gradient(100, 100))
	_, r1 := th.uploadRaw(t, data, "image/png")
	_, r2 := th.uploadRaw(t, data, "image/png")
	if resp, _ := th.get(t, r1.Data.Links.ThumbnailURL); resp.StatusCode != 200 {
		t.Fatalf("thumbnail: %d", resp.StatusCode)
	}
	// The wrong token is refused.
	req, _ := http.NewRequest("DELETE", th.srv.URL+"/api/v1/images/"+r1.Data.Key+"?token=nope", nil)
	if resp, _ := th.do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("wrong delete token: %d", resp.StatusCode)
	}
	tok := r1.Data.Links.DeleteURL[strings.Index(r1.Data.Links.DeleteURL, "token=")+6:]
	req, _ = http.NewRequest("DELETE", th.srv.URL+"/api/v1/images/"+r1.Data.Key+"?token="+tok, nil)
	if resp, body := th.do(t, req); resp.StatusCode != 200 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, _ := th.get(t, r1.Data.Links.URL); resp.StatusCode != 404 {
		t.Fatalf("deleted image still served: %d", resp.StatusCode)
	}
	if resp, body := th.get(t, r2.Data.Links.URL); resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("the other reference lost its bytes: %d", resp.StatusCode)
	}
	if n := th.countKeys(t); th.stored(t) == 0 || n.thumbs == 0 {
		t.Fatalf("bytes freed too early: %+v, %d objects", n, th.objects(t))
	}
	// The delete link: GET confirms, POST deletes.
	resp, body := th.get(t, r2.Data.Links.DeleteURL)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<form") {
		t.Fatalf("delete page: %d %s", resp.StatusCode, body)
	}
	if resp, _ := th.get(t, r2.Data.Links.URL); resp.StatusCode != 200 {
		t.Fatal("GET of the delete link deleted the image")
	}
	resp, _ = th.srv.Client().PostForm(r2.Data.Links.DeleteURL, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("delete by link: %d", resp.StatusCode)
	}
	if n := th.countKeys(t); n != (keyCounts{}) || th.objects(t) != 0 {
		t.Fatalf("last reference deleted, keys left: %+v, %d objects", n, th.objects(t))
	}
}

type keyCounts struct{ blobs, thumbs, chunks, pending, images, recent int }

func (th *testHost) countKeys(t testing.TB) keyCounts {
	t.Helper()
	it, err := th.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var n keyCounts
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < 2 || k[0] != prefix {
			continue
		}
		switch k[1] {
		case kindBlob:
			n.blobs++
		case kindThumb:
			n.thumbs++
		case kindChunk:
			n.chunks++
		case kindPending:
			n.pending++
		case kindImage:
			n.images++
		case kindRecent:
			n.recent++
		}
	}
	return n
}
