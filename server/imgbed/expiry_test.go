package imgbed

import (
	"bytes"
	"crypto/sha256"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

func TestParseExpiry(t *testing.T) {
	const day = 24 * time.Hour
	for v, want := range map[string]time.Duration{
		"PT5M": 5 * time.Minute, "PT1H": time.Hour, "P1D": day, "P7D": 7 * day, "P2W": 14 * day,
		"P1M": 30 * day, "P1Y": 365 * day, "P1DT12H": 36 * time.Hour, "PT1H30M15S": time.Hour + 30*time.Minute + 15*time.Second,
		"3600": time.Hour, "0": 0, "PT0S": 0,
	} {
		if got, ok := parseExpiry(v); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "P", "PT", "P1DT", "1h", "-5", "P1H", "PT1D", "P1D1D", "PT1HT1M", "P-1D", "P1.5D",
		"P101Y", "99999999999999999999", "PT99999999999999999H", "P1DX", "p1d"} {
		if got, ok := parseExpiry(v); ok {
			t.Errorf("%q accepted as %v", v, got)
		}
	}
}

// fakeClock is the clock of a host and of its DB's expiry at once.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newClockHost is a host whose DB expires keys and runs the image
// compaction filter on the same fake clock, reporting dead S3 blobs to
// the host.
func newClockHost(t *testing.T, cfg Config) (*testHost, *fakeClock) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	cfg.Reclaimer = NewReclaimer()
	th := newTestHostOn(t, cfg, &lsmgo.Options{Now: clock.Now, NewCompactionFilter: NewCompactionFilter(clock.Now, cfg.Reclaimer)})
	th.now = clock.Now
	return th, clock
}

func sha(data []byte) sum { return sha256.Sum256(data) }

// chunkCount counts the chunks stored for the bytes of data.
func (th *testHost) chunkCount(t *testing.T, data []byte) int {
	t.Helper()
	s := sha(data)
	lo, hi := span(key(kindChunk, s[:]))
	it, err := th.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// compactAll runs every entry through the compaction filter; twice,
// since metadata goes only once its chunks are gone.
func (th *testHost) compactAll(t *testing.T) {
	t.Helper()
	for range 2 {
		if err := th.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := th.db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func (th *testHost) status(t *testing.T, url string) int {
	t.Helper()
	resp, _ := th.get(t, url)
	return resp.StatusCode
}

// TestExpiry runs expiring uploads on a fake clock: each stops being
// served the moment it expires, bytes shared with a longer-lived or
// permanent upload stay, and the bytes whose last reference expired are
// reclaimed by a compaction (the filter), not by any request.
func TestExpiry(t *testing.T) {
	th, clock := newClockHost(t, Config{})
	x, y, z := encodePNG(t, gradient(30, 20)), encodePNG(t, gradient(31, 20)), encodePNG(t, gradient(32, 20))
	up := func(data []byte, expiration string) response {
		t.Helper()
		status, r := th.uploadRaw(t, data, "image/png", "X-Expiration", expiration)
		if status/100 != 2 {
			t.Fatalf("upload with expiration %q: %d %s", expiration, status, r.Message)
		}
		return r
	}
	x1, x2 := up(x, "PT1H"), up(x, "P1D")
	y1, y2 := up(y, "PT1H"), up(y, "")
	z1 := up(z, "60")
	if z1.Data.ExpiresAt != clock.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano) || y2.Data.ExpiresAt != "" {
		t.Errorf("expires_at: %q and %q", z1.Data.ExpiresAt, y2.Data.ExpiresAt)
	}
	resp, _ := th.get(t, x1.URL)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("expiring image: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	if th.status(t, z1.Data.Links.ThumbnailURL) != 200 {
		t.Fatal("thumbnail of an expiring image")
	}

	clock.advance(time.Minute)
	for _, u := range []string{z1.URL, z1.Data.Links.ThumbnailURL, th.srv.URL + "/api/v1/images/" + z1.Data.Key} {
		if got := th.status(t, u); got != 404 {
			t.Errorf("%s at its expiry: %d", u, got)
		}
	}
	for _, r := range []response{x1, x2, y1, y2} {
		if got := th.status(t, r.URL); got != 200 {
			t.Errorf("%s before its expiry: %d", r.URL, got)
		}
	}
	if th.chunkCount(t, z) == 0 {
		t.Fatal("expired bytes vanished before any compaction: the reads did more than hide them")
	}
	th.compactAll(t)
	if n := th.chunkCount(t, z); n != 0 {
		t.Errorf("%d chunks of expired bytes survive a compaction", n)
	}
	if _, err := th.db.Get(blobKey(sha(z))); err == nil {
		t.Error("the metadata of expired bytes survives a compaction")
	}

	clock.advance(time.Hour)
	for u, want := range map[string]int{x1.URL: 404, x2.URL: 200, y1.URL: 404, y2.URL: 200} {
		if got := th.status(t, u); got != want {
			t.Errorf("%s an hour later: %d, want %d", u, got, want)
		}
	}
	th.compactAll(t)
	if th.chunkCount(t, x) == 0 || th.chunkCount(t, y) == 0 {
		t.Fatal("a compaction reclaimed bytes that an unexpired image still uses")
	}
	clock.advance(24 * time.Hour)
	if got := th.status(t, x2.URL); got != 404 {
		t.Errorf("the day-long image after a day: %d", got)
	}
	th.compactAll(t)
	if th.chunkCount(t, x) != 0 || th.chunkCount(t, y) == 0 {
		t.Errorf("after the last expiry: %d chunks of x (want 0), %d of the permanent y", th.chunkCount(t, x), th.chunkCount(t, y))
	}
	if err := th.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestExpiredBytesUploadedAgain: bytes whose images all expired, not yet
// compacted, uploaded again are stored afresh (no stale thumbnail comes
// back with them) and survive the compaction that reclaims the old copy.
func TestExpiredBytesUploadedAgain(t *testing.T) {
	th, clock := newClockHost(t, Config{})
	data := encodePNG(t, gradient(40, 30))
	_, old := th.uploadRaw(t, data, "image/png", "X-Expiration", "PT1M")
	if th.status(t, old.Data.Links.ThumbnailURL) != 200 {
		t.Fatal("thumbnail")
	}
	clock.advance(2 * time.Minute)
	status, again := th.uploadRaw(t, data, "image/png")
	if status != 201 || again.Data.Duplicate {
		t.Fatalf("upload of expired bytes: %d duplicate=%v", status, again.Data.Duplicate)
	}
	if thumbs, err := th.st.thumbs(sha(data)); err != nil || len(thumbs) != 0 {
		t.Fatalf("the expired copy's thumbnails came back: %d %v", len(thumbs), err)
	}
	th.compactAll(t)
	resp, body := th.get(t, again.URL)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("after the compaction: %d, %d bytes", resp.StatusCode, len(body))
	}
	if th.status(t, again.Data.Links.ThumbnailURL) != 200 {
		t.Fatal("thumbnail of the new copy")
	}
}

// TestExpiryQuotaAndDelete: an expiring image counts against its
// token's quota until it expires or is deleted, and deleting one of two
// expiring images of the same bytes keeps the other's.
func TestExpiryQuotaAndDelete(t *testing.T) {
	th, clock := newClockHost(t, Config{Tokens: []Token{{Name: "q", Secret: "q-secret", QuotaCount: 2}}})
	auth := []string{"Authorization", "Bearer q-secret", "X-Expiration", "PT1M"}
	a, b := encodePNG(t, gradient(10, 11)), encodePNG(t, gradient(10, 12))
	_, ra := th.uploadRaw(t, a, "image/png", auth...)
	if status, _ := th.uploadRaw(t, a, "image/png", auth...); status != 200 {
		t.Fatalf("second upload: %d", status)
	}
	if status, _ := th.uploadRaw(t, b, "image/png", auth...); status != 403 {
		t.Fatalf("over the quota: %d", status)
	}
	req, _ := http.NewRequest("DELETE", th.srv.URL+"/api/v1/images/"+ra.Data.Key, nil)
	req.Header.Set("Authorization", "Bearer q-secret")
	if resp, body := th.do(t, req); resp.StatusCode != 200 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if th.chunkCount(t, a) == 0 {
		t.Fatal("deleting one of two expiring images freed their bytes")
	}
	if status, _ := th.uploadRaw(t, b, "image/png", auth...); status != 201 {
		t.Fatalf("after a delete: %d", status)
	}
	clock.advance(time.Minute)
	if status, _ := th.uploadRaw(t, encodePNG(t, gradient(10, 13)), "image/png", auth...); status != 201 {
		t.Fatalf("after both expired: %d", status)
	}
}

// TestMaxViews: a view-limited image is served that many times (never
// cached, no thumbnail), then it is gone with its bytes; a 304 is not a
// view.
func TestMaxViews(t *testing.T) {
	th := newTestHost(t, Config{})
	data := encodePNG(t, gradient(20, 20))
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("max_views", "2")
	fw, _ := mw.CreateFormFile("file", "once.png")
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, raw := th.do(t, req)
	r := decodeResponse(t, raw)
	if resp.StatusCode != 201 || r.Data.MaxViews != 2 {
		t.Fatalf("upload: %d %s", resp.StatusCode, raw)
	}
	if got := th.status(t, r.Data.Links.ThumbnailURL); got != 404 {
		t.Errorf("thumbnail of a view-limited image: %d", got)
	}
	resp, _ = th.get(t, r.URL)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("first view: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	if resp, _ := th.get(t, r.URL, "If-None-Match", `"`+r.Data.SHA256+`"`); resp.StatusCode != 304 {
		t.Fatalf("revalidation: %d", resp.StatusCode)
	}
	if resp, got := th.get(t, r.URL); resp.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Fatalf("second view: %d", resp.StatusCode)
	}
	if got := th.status(t, r.URL); got != 404 {
		t.Fatalf("third view: %d", got)
	}
	if th.chunkCount(t, data) != 0 {
		t.Fatal("bytes kept after the last view")
	}
}

// TestUploadOptionErrors: a malformed option refuses the upload, stores
// nothing.
func TestUploadOptionErrors(t *testing.T) {
	th := newTestHost(t, Config{})
	data := encodePNG(t, gradient(9, 9))
	for _, h := range [][]string{{"X-Expiration", "tomorrow"}, {"X-Max-Views", "0"}, {"X-Max-Views", "-3"}} {
		status, r := th.uploadRaw(t, data, "image/png", h...)
		if status != 400 || !strings.Contains(r.Message, strings.ToLower(strings.TrimPrefix(h[0], "X-"))[:3]) {
			t.Errorf("%v: %d %q", h, status, r.Message)
		}
	}
	if th.chunkCount(t, data) != 0 {
		t.Error("a refused upload stored bytes")
	}
}

// TestExpiryRealTime: on the real clock, an image with a one-second
// expiry is served, then not. A loaded machine may take longer than the
// expiry to upload and ask: a 404 answered after the expiry proves
// nothing, so the test tries again with a longer one.
func TestExpiryRealTime(t *testing.T) {
	th := newTestHost(t, Config{})
	for i, expiry := range []string{"1", "4", "16"} {
		status, r := th.uploadRaw(t, encodePNG(t, gradient(12+i, 12)), "image/png", "X-Expiration", expiry)
		if status != 201 {
			t.Fatalf("upload: %d %s", status, r.Message)
		}
		expires := mustTime(t, r.Data.ExpiresAt)
		got := th.status(t, r.URL)
		if got != 200 && !time.Now().Before(expires) {
			t.Logf("the first GET came back after the %s s expiry", expiry)
			continue
		}
		if got != 200 {
			t.Fatalf("before its expiry: %d", got)
		}
		time.Sleep(time.Until(expires) + 10*time.Millisecond)
		if got := th.status(t, r.URL); got != 404 {
			t.Fatalf("after its expiry: %d", got)
		}
		return
	}
	t.Fatal("no GET came back before the expiry")
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFilterKeepsStagedChunks: the chunks of an upload still being staged
// (pending, no metadata yet) and those of live blobs and thumbnails
// survive compactions; only the generations nothing names go.
func TestFilterKeepsStagedChunks(t *testing.T) {
	th, _ := newClockHost(t, Config{ChunkSize: 1 << 10})
	data := bytes.Repeat([]byte("staged bytes "), 400)
	s := sha(data)
	g, err := th.st.stage(t.Context(), th.st.local, s, bytes.NewReader(data), int64(len(data)), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	live := encodePNG(t, gradient(50, 40))
	_, r := th.uploadRaw(t, live, "image/png")
	th.get(t, r.Data.Links.ThumbnailURL)
	orphan := sum{1}
	th.db.Set(chunkKey(orphan, gen{2}, 0), []byte("named by nothing"), nil)
	th.compactAll(t)
	if n, want := th.chunkCount(t, data), (len(data)+1023)/1024; n != want {
		t.Errorf("%d of the %d staged chunks survive", n, want)
	}
	var meta blobMeta
	if err := getJSON(th.db, blobKey(sha(live)), &meta, "blob metadata"); err != nil {
		t.Fatal(err)
	}
	want := meta.chunks()
	thumbs, _ := th.st.thumbs(sha(live))
	for _, tm := range thumbs {
		want += tm.meta.chunks()
	}
	if n := th.chunkCount(t, live); n != want || len(thumbs) != 1 {
		t.Errorf("live image: %d chunks, want %d (%d thumbnails)", n, want, len(thumbs))
	}
	if _, err := th.db.Get(chunkKey(orphan, gen{2}, 0)); err == nil {
		t.Error("a chunk no metadata names survived")
	}
	th.st.reclaim(th.st.local, s, g)
}
