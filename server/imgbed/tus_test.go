package imgbed

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// tusReq sends one tus request; header holds name, value pairs.
func (th *testHost) tusReq(t testing.TB, method, url string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/offset+octet-stream")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return th.do(t, req)
}

// tusCreate starts an upload of n bytes and returns its URL.
func (th *testHost) tusCreate(t testing.TB, n int, header ...string) string {
	t.Helper()
	resp, body := th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil,
		append([]string{"Upload-Length", strconv.Itoa(n), "Upload-Metadata", "filename " + base64.StdEncoding.EncodeToString([]byte("big.png"))}, header...)...)
	if resp.StatusCode != 201 || resp.Header.Get("Location") == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// tusPatch sends data at off and returns the status and new offset.
func (th *testHost) tusPatch(t testing.TB, url string, off int, data []byte, header ...string) (int, int64) {
	t.Helper()
	resp, _ := th.tusReq(t, "PATCH", url, data, append([]string{"Upload-Offset", strconv.Itoa(off)}, header...)...)
	n, _ := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	return resp.StatusCode, n
}

func (th *testHost) tusOffset(t testing.TB, url string, header ...string) (int, int64) {
	t.Helper()
	resp, _ := th.tusReq(t, "HEAD", url, nil, header...)
	n, _ := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	return resp.StatusCode, n
}

func (th *testHost) imageCount(t testing.TB) int {
	t.Helper()
	n, err := countPrefix(th.db, key(kindImage))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTusProtocol walks an upload through the protocol's answers: the
// discovery, the refusals (no version 412, too large 413, wrong offset
// 409, wrong type 415, bad checksum 460), resuming from HEAD, and no
// image before the last byte; then the image is the bytes sent.
func TestTusProtocol(t *testing.T) {
	th := newTestHost(t, Config{ResumableMaxBytes: 4 << 20})
	data := encodePNG(t, noise(500, 500)) // ~1 MB: spans the head and the file
	resp, _ := th.tusReq(t, "OPTIONS", th.srv.URL+"/api/v1/tus/", nil, "Tus-Resumable", "")
	if resp.StatusCode != 204 || resp.Header.Get("Tus-Version") != "1.0.0" || resp.Header.Get("Tus-Max-Size") != strconv.Itoa(4<<20) ||
		!strings.Contains(resp.Header.Get("Tus-Extension"), "creation") || !strings.Contains(resp.Header.Get("Tus-Extension"), "termination") {
		t.Fatalf("OPTIONS: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil, "Tus-Resumable", "", "Upload-Length", "10")
	if resp.StatusCode != 412 || resp.Header.Get("Tus-Version") != "1.0.0" {
		t.Errorf("no Tus-Resumable: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ = th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil, "Upload-Length", strconv.Itoa(4<<20+1)); resp.StatusCode != 413 {
		t.Errorf("over Tus-Max-Size: %d", resp.StatusCode)
	}
	if resp, _ = th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil); resp.StatusCode != 400 {
		t.Errorf("no Upload-Length: %d", resp.StatusCode)
	}
	url := th.tusCreate(t, len(data))
	if st, off := th.tusOffset(t, url); st != 200 || off != 0 {
		t.Fatalf("HEAD of a new upload: %d %d", st, off)
	}
	third := len(data) / 3
	if st, off := th.tusPatch(t, url, 0, data[:third]); st != 204 || off != int64(third) {
		t.Fatalf("first chunk: %d %d", st, off)
	}
	if st, _ := th.tusPatch(t, url, 0, data[third:2*third]); st != 409 {
		t.Errorf("wrong offset: %d", st)
	}
	if st, _ := th.tusPatch(t, url, third, data[third:2*third], "Content-Type", "image/png"); st != 415 {
		t.Errorf("wrong chunk type: %d", st)
	}
	if st, _ := th.tusPatch(t, url, third, data[third:2*third], "Upload-Checksum", "sha1 "+base64.StdEncoding.EncodeToString(make([]byte, 20))); st != 460 {
		t.Errorf("bad checksum: %d", st)
	}
	if st, off := th.tusOffset(t, url); st != 200 || off != int64(third) {
		t.Fatalf("HEAD after refusals: %d %d", st, off)
	}
	sum := sha1.Sum(data[third : 2*third])
	if st, off := th.tusPatch(t, url, third, data[third:2*third], "Upload-Checksum", "sha1 "+base64.StdEncoding.EncodeToString(sum[:])); st != 204 || off != int64(2*third) {
		t.Fatalf("checksummed chunk: %d %d", st, off)
	}
	if st, _ := th.tusPatch(t, url, 2*third, append(data[2*third:], 0)); st != 413 {
		t.Errorf("past Upload-Length: %d", st)
	}
	if n := th.imageCount(t); n != 0 {
		t.Fatalf("%d images before the last byte", n)
	}
	if resp, body := th.get(t, url); resp.StatusCode != 409 {
		t.Errorf("result of an unfinished upload: %d %s", resp.StatusCode, body)
	}
	resp, _ = th.tusReq(t, "PATCH", url, data[2*third:], "Upload-Offset", strconv.Itoa(2*third))
	if resp.StatusCode != 204 || resp.Header.Get("Upload-Offset") != strconv.Itoa(len(data)) || resp.Header.Get("X-Image-URL") == "" {
		t.Fatalf("last chunk: %d %v", resp.StatusCode, resp.Header)
	}
	got, body := th.get(t, resp.Header.Get("X-Image-URL"))
	if got.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("image: %d, %d bytes of %d", got.StatusCode, len(body), len(data))
	}
	resp, body = th.get(t, url)
	r := decodeResponse(t, body)
	if resp.StatusCode != 201 || r.Data.SHA256 != sumHex(data) || r.Data.OriginName != "big.png" || r.Data.Links.DeleteURL == "" {
		t.Fatalf("result: %d %s", resp.StatusCode, body)
	}
	// A retried last PATCH (its 204 lost) changes nothing.
	if st, off := th.tusPatch(t, url, len(data), []byte{}); st != 204 || off != int64(len(data)) {
		t.Errorf("empty PATCH at the end: %d %d", st, off)
	}
	if resp, _ = th.tusReq(t, "DELETE", url, nil); resp.StatusCode != 204 {
		t.Errorf("terminate: %d", resp.StatusCode)
	}
	if st, _ := th.tusOffset(t, url); st != 404 {
		t.Errorf("HEAD after termination: %d", st)
	}
	if got, _ := th.get(t, r.URL); got.StatusCode != 200 {
		t.Errorf("terminating a finished upload took its image: %d", got.StatusCode)
	}
	if files, _ := filepath.Glob(filepath.Join(th.cfg.SpoolDir, "resumable", "*")); len(files) != 0 {
		t.Errorf("files left: %v", files)
	}
}

// TestTusSameChecksAsUpload sends through tus what normal uploads refuse
// or rewrite: a non-image is refused with its first bytes, an image over
// the pixel limit when complete (and its upload is gone), and an image
// with GPS is stored stripped, as the same bytes sent normally are (a
// duplicate of them).
func TestTusSameChecksAsUpload(t *testing.T) {
	th := newTestHost(t, Config{MaxPixels: 400 * 400})
	junk := bytes.Repeat([]byte("not an image "), 100)
	url := th.tusCreate(t, 10*len(junk))
	if st, _ := th.tusPatch(t, url, 0, junk); st != 415 {
		t.Errorf("junk: %d", st)
	}
	if st, _ := th.tusOffset(t, url); st != 404 {
		t.Errorf("HEAD of refused junk: %d", st)
	}

	big := encodePNG(t, gradient(401, 400))
	url = th.tusCreate(t, len(big))
	if st, _ := th.tusPatch(t, url, 0, big); st != 422 {
		t.Errorf("over the pixel limit: %d", st)
	}
	if st, _ := th.tusOffset(t, url); st != 410 {
		t.Errorf("HEAD of a refused upload: %d", st)
	}
	if resp, body := th.get(t, url); resp.StatusCode != 422 {
		t.Errorf("result of a refused upload: %d %s", resp.StatusCode, body)
	}

	located := pngWithGPS(encodePNG(t, noise(300, 300)))
	st, normal := th.uploadRaw(t, located, "image/png")
	if st != 201 || len(gpsLeft(located)) == 0 {
		t.Fatalf("normal upload: %d", st)
	}
	url = th.tusCreate(t, len(located))
	if st, _ := th.tusPatch(t, url, 0, located); st != 204 {
		t.Fatalf("tus upload: %d", st)
	}
	_, body := th.get(t, url)
	r := decodeResponse(t, body)
	if !r.Data.Duplicate || r.Data.SHA256 != normal.Data.SHA256 {
		t.Errorf("tus stored %s (duplicate %v), a normal upload %s", r.Data.SHA256, r.Data.Duplicate, normal.Data.SHA256)
	}
	if _, stored := th.get(t, r.URL); len(gpsLeft(stored)) != 0 {
		t.Errorf("GPS left: %v", gpsLeft(stored))
	}
	if n := th.imageCount(t); n != 2 {
		t.Errorf("%d images, want 2", n)
	}
}

// TestTusOwnerAndQuota: a token's upload is invisible to others, and its
// declared length is held against its quota at creation.
func TestTusOwnerAndQuota(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: []Token{{Name: "a", Secret: "sa", QuotaBytes: 1 << 20}, {Name: "b", Secret: "sb"}}})
	if resp, _ := th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil, "Upload-Length", "100"); resp.StatusCode != 401 {
		t.Errorf("anonymous: %d", resp.StatusCode)
	}
	if resp, _ := th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil, "Upload-Length", strconv.Itoa(2<<20), "Authorization", "Bearer sa"); resp.StatusCode != 403 {
		t.Errorf("over quota: %d", resp.StatusCode)
	}
	data := encodePNG(t, gradient(20, 20))
	url := th.tusCreate(t, len(data), "Authorization", "Bearer sa")
	if st, _ := th.tusOffset(t, url, "Authorization", "Bearer sb"); st != 404 {
		t.Errorf("another token's HEAD: %d", st)
	}
	if st, _ := th.tusPatch(t, url, 0, data, "Authorization", "Bearer sb"); st != 404 {
		t.Errorf("another token's PATCH: %d", st)
	}
	if st, _ := th.tusPatch(t, url, 0, data, "Authorization", "Bearer sa"); st != 204 {
		t.Errorf("owner's PATCH: %d", st)
	}
	_, body := th.get(t, url, "Authorization", "Bearer sa")
	var r struct{ Data struct{ Key string } }
	json.Unmarshal(body, &r)
	rec, err := th.st.record(r.Data.Key)
	if err != nil || rec.Owner != "a" {
		t.Errorf("record %+v %v", rec, err)
	}
}

// reopenableHost returns a function that opens a host on the same DB
// and spool directories each time, and a function that closes it (after
// checking it), as a restart of the server would.
func reopenableHost(t *testing.T) func() (*testHost, func()) {
	dir, spool := t.TempDir(), t.TempDir()
	return func() (*testHost, func()) {
		db, err := lsmgo.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(db, Config{SpoolDir: spool, UploadRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		th := &testHost{Host: h, db: db}
		var stop func()
		th.srv, stop = serve(h)
		return th, func() {
			stop()
			if err := h.Check(); err != nil {
				t.Error(err)
			}
			db.Close()
		}
	}
}

// TestTusResumesAfterRestart reopens the host on the same directories
// between two chunks: the offset and the bytes are there, and a creation
// with its first bytes (creation-with-upload) is resumed like any other.
// Files without state are swept at start.
func TestTusResumesAfterRestart(t *testing.T) {
	open := reopenableHost(t)
	data := encodePNG(t, noise(400, 300))
	th, stop := open()
	spool := th.cfg.SpoolDir
	resp, body := th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", data[:1000], "Upload-Length", strconv.Itoa(len(data)))
	if resp.StatusCode != 201 || resp.Header.Get("Upload-Offset") != "1000" {
		t.Fatalf("creation with upload: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	url := resp.Header.Get("Location")
	path := strings.TrimPrefix(url, th.srv.URL)
	stray := filepath.Join(spool, "resumable", resumableFilePrefix+"stray")
	os.WriteFile(stray, []byte("x"), 0o600)
	stop()

	th, stop = open()
	defer stop()
	url = th.srv.URL + path
	if st, off := th.tusOffset(t, url); st != 200 || off != 1000 {
		t.Fatalf("after restart: %d %d", st, off)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("stray file kept: %v", err)
	}
	if st, _ := th.tusPatch(t, url, 1000, data[1000:]); st != 204 {
		t.Fatalf("resume: %d", st)
	}
	_, body = th.get(t, url)
	if r := decodeResponse(t, body); r.Data.SHA256 != sumHex(data) {
		t.Errorf("stored %s, sent %s", r.Data.SHA256, sumHex(data))
	}
}

// TestTusConcurrentPatches races four writers on one upload, each asking
// HEAD for the offset and sending a chunk of random length from there:
// the losers get 409 (offset moved) or 423 (busy), and whatever the
// interleaving, the image is the bytes sent, stored once.
func TestTusConcurrentPatches(t *testing.T) {
	th := newTestHost(t, Config{})
	data := encodePNG(t, noise(300, 200))
	url := th.tusCreate(t, len(data))
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for {
				st, off := th.tusOffset(t, url)
				if st != 200 || off == int64(len(data)) {
					return
				}
				end := min(int(off)+1+r.IntN(40000), len(data))
				switch st, _ := th.tusPatch(t, url, int(off), data[off:end]); st {
				case 204, 409, 423:
				default:
					t.Errorf("PATCH at %d: %d", off, st)
					return
				}
			}
		}()
	}
	wg.Wait()
	_, body := th.get(t, url)
	if r := decodeResponse(t, body); r.Data.SHA256 != sumHex(data) || th.imageCount(t) != 1 {
		t.Fatalf("stored %s, sent %s; %d images", r.Data.SHA256, sumHex(data), th.imageCount(t))
	}
}

// TestCheckFindsShortResumable: Check reports an unfinished upload whose
// file lost bytes its offset covers.
func TestCheckFindsShortResumable(t *testing.T) {
	th := newTestHost(t, Config{})
	data := encodePNG(t, noise(100, 100))
	url := th.tusCreate(t, len(data))
	if st, _ := th.tusPatch(t, url, 0, data[:1000]); st != 204 {
		t.Fatalf("PATCH: %d", st)
	}
	file := th.resumables.path(url[strings.LastIndex(url, "/")+1:])
	if err := os.Truncate(file, 999); err != nil {
		t.Fatal(err)
	}
	if err := th.Check(); err == nil || !strings.Contains(err.Error(), "its file has 999 bytes, its offset is 1000") {
		t.Errorf("Check: %v", err)
	}
	if resp, _ := th.tusReq(t, "DELETE", url, nil); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
}

// TestTusFinishCrash stops the host the moment the last PATCH's image is
// in the DB, before anything else of the finish runs (finishHook stands
// for a crash: the handler dies and the host is reopened on the same
// directories). The upload is finished all the same: HEAD says so, a
// retried last PATCH and GET on the upload answer the same image with
// its delete token, and there is one image record, not two.
func TestTusFinishCrash(t *testing.T) {
	open := reopenableHost(t)
	th, stop := open()
	data := encodePNG(t, noise(300, 200))
	url := th.tusCreate(t, len(data))
	path := strings.TrimPrefix(url, th.srv.URL)
	crash := func() { panic(http.ErrAbortHandler) }
	finishHook.Store(&crash)
	defer finishHook.Store(nil)
	req, _ := http.NewRequest("PATCH", url, bytes.NewReader(data))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", "0")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the PATCH was answered (%d): the hook did not run", resp.StatusCode)
	}
	finishHook.Store(nil)
	if n := th.imageCount(t); n != 1 {
		t.Fatalf("%d images when the finish was cut off, want the one stored", n)
	}
	stop()

	th, stop = open()
	defer stop()
	url = th.srv.URL + path
	if st, off := th.tusOffset(t, url); st != 200 || off != int64(len(data)) {
		t.Fatalf("HEAD after the crash: %d, offset %d of %d", st, off, len(data))
	}
	resp, _ := th.tusReq(t, "PATCH", url, []byte{}, "Upload-Offset", strconv.Itoa(len(data)))
	if resp.StatusCode != 204 || resp.Header.Get("X-Image-URL") == "" {
		t.Fatalf("last PATCH again: %d, X-Image-URL %q", resp.StatusCode, resp.Header.Get("X-Image-URL"))
	}
	_, body := th.get(t, url)
	r := decodeResponse(t, body)
	if r.Data.SHA256 != sumHex(data) || r.Data.Links.DeleteURL == "" || r.URL != resp.Header.Get("X-Image-URL") {
		t.Fatalf("the upload's image: %+v, X-Image-URL %s", r, resp.Header.Get("X-Image-URL"))
	}
	if n := th.imageCount(t); n != 1 {
		t.Fatalf("%d image records after finishing again, want 1", n)
	}
	var meta blobMeta
	if err := getJSON(th.db, blobKey(sha(data)), &meta, "blob metadata"); err != nil || meta.Refs != 1 {
		t.Fatalf("blob references %d (%v), want 1", meta.Refs, err)
	}
}

// TestTusOpenLimit: a client may hold at most ResumablePerClient
// unfinished uploads, of at most ResumableBytesPerClient declared bytes
// together; past either, a creation is refused with 429, a JSON message
// and Retry-After until its oldest upload expires. Finishing, terminating
// or letting an upload expire frees its place; other clients have their
// own.
func TestTusOpenLimit(t *testing.T) {
	th, clock := newClockHost(t, Config{ResumablePerClient: 3, ResumableBytesPerClient: 1 << 20,
		Tokens: []Token{{Name: "a", Secret: "sa"}}})
	create := func(n int, header ...string) (*http.Response, []byte) {
		t.Helper()
		return th.tusReq(t, "POST", th.srv.URL+"/api/v1/tus/", nil, append([]string{"Upload-Length", strconv.Itoa(n)}, header...)...)
	}
	refused := func(n int, wantWait time.Duration, header ...string) {
		t.Helper()
		resp, body := create(n, header...)
		var e struct {
			Status  bool
			Message string
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 429 || e.Status || !strings.Contains(e.Message, "unfinished") {
			t.Fatalf("creation over the limit: %d %s", resp.StatusCode, body)
		}
		if got := resp.Header.Get("Retry-After"); got != strconv.Itoa(int(wantWait.Seconds())) {
			t.Fatalf("Retry-After %q, want %v", got, wantWait)
		}
	}
	data := encodePNG(t, gradient(20, 20))
	first := th.tusCreate(t, len(data))
	clock.advance(time.Hour)
	th.tusCreate(t, 100)
	last := th.tusCreate(t, 100)
	refused(100, 23*time.Hour) // the first expires in 23 hours
	if resp, _ := create(100, "Authorization", "Bearer sa"); resp.StatusCode != 201 {
		t.Fatalf("a token's first upload: %d", resp.StatusCode)
	}

	if st, _ := th.tusPatch(t, first, 0, data); st != 204 { // finished: its place is free
		t.Fatalf("finish: %d", st)
	}
	fourth := th.tusCreate(t, 100)
	refused(100, 24*time.Hour)
	if resp, _ := th.tusReq(t, "DELETE", fourth, nil); resp.StatusCode != 204 {
		t.Fatalf("terminate: %d", resp.StatusCode)
	}
	th.tusCreate(t, 100)

	// Bytes: one upload up to the whole budget is always allowed; a
	// second that would pass it is not.
	big := func(header ...string) {
		t.Helper()
		if resp, body := create(1<<20, header...); resp.StatusCode != 201 {
			t.Fatalf("an upload of the whole byte budget: %d %s", resp.StatusCode, body)
		}
	}
	refused(1<<20, 24*time.Hour, "Authorization", "Bearer sa") // the token holds 100 bytes open
	clock.advance(25 * time.Hour)                              // every open upload expired
	big()
	refused(1, 24*time.Hour)
	big("Authorization", "Bearer sa")
	if st, _ := th.tusOffset(t, last); st != 404 {
		t.Fatalf("an expired upload: %d", st)
	}
}
