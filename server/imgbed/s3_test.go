package imgbed

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3bucket"
	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// TestS3Down stops S3 under a host: uploads of new bytes fail with 503 and
// leave no record, no blob metadata and no visible image; thumbnails
// already made (kept in the DB) are still served, and so are answers that
// need only metadata (duplicates, 304s, deletes); what needs S3 is a 503
// with nothing cacheable about it.
func TestS3Down(t *testing.T) {
	srv := s3test.Start(t)
	var cfg Config
	s3Bucket(t, &cfg, "", srv)
	th := newTestHost(t, cfg)
	th.skipRemoteCheck = true
	a := encodePNG(t, gradient(120, 80))
	_, ra := th.uploadRaw(t, a, "image/png")
	if !ra.Status {
		t.Fatalf("upload: %+v", ra)
	}
	resp, thumb := th.get(t, ra.Data.Links.ThumbnailURL)
	if resp.StatusCode != 200 {
		t.Fatalf("thumbnail: %d", resp.StatusCode)
	}
	before := th.countKeys(t)

	srv.Stop()

	status, r := th.uploadRaw(t, encodePNG(t, gradient(90, 90)), "image/png")
	if status != http.StatusServiceUnavailable || r.Status || r.Message == "" {
		t.Fatalf("upload with S3 down: %d %+v, want 503", status, r)
	}
	if n := th.countKeys(t); n.images != before.images || n.blobs != before.blobs || n.recent != before.recent {
		t.Fatalf("a failed upload left metadata: %+v, before %+v", n, before)
	}
	if err := th.check(false); err != nil {
		t.Fatalf("Check with S3 down: %v", err)
	}

	resp, body := th.get(t, ra.Data.Links.ThumbnailURL)
	if resp.StatusCode != 200 || !bytes.Equal(body, thumb) {
		t.Fatalf("cached thumbnail with S3 down: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, _ = th.get(t, ra.Data.Links.URL, "If-None-Match", `"`+ra.Data.SHA256+`"`)
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET with S3 down: %d, want 304 from the metadata", resp.StatusCode)
	}
	resp, _ = th.get(t, ra.Data.Links.URL)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("ETag") != "" || strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("original with S3 down: %d %v, want an uncacheable 503", resp.StatusCode, resp.Header)
	}
	if resp, _ := th.get(t, th.srv.URL+"/t/"+ra.Data.Name+"?w=64"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("new thumbnail size with S3 down: %d, want 503", resp.StatusCode)
	}

	// Duplicates and deletes touch only metadata: they work, and the
	// object of the last reference stays pending for a later sweep.
	status, dup := th.uploadRaw(t, a, "image/png")
	if status != http.StatusOK || !dup.Data.Duplicate {
		t.Fatalf("duplicate with S3 down: %d %+v", status, dup)
	}
	for _, d := range []response{ra, dup} {
		req, _ := http.NewRequest("DELETE", strings.Replace(d.Data.Links.DeleteURL, "/d/", "/api/v1/images/", 1), nil)
		if resp, body := th.do(t, req); resp.StatusCode != 200 {
			t.Fatalf("delete with S3 down: %d %s", resp.StatusCode, body)
		}
	}
	if n := th.countKeys(t); n.images != 0 || n.blobs != 0 || n.thumbs != 0 || n.chunks != 0 || n.pending == 0 {
		t.Fatalf("after deleting everything with S3 down: %+v, want only pending markers", n)
	}
}

// TestS3Presign answers GETs of originals in S3 with redirects to
// presigned URLs that serve the bytes with their type; a conditional GET
// is answered at once, and thumbnails kept in the DB are served directly.
// (TestRoundTrip/s3 covers the proxying default: Range, ETag, 304, HEAD.)
func TestS3Presign(t *testing.T) {
	var cfg Config
	s3Bucket(t, &cfg, "&presign=10m")
	th := newTestHost(t, cfg)
	data := encodePNG(t, gradient(200, 100))
	_, r := th.uploadRaw(t, data, "image/png")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(r.Data.Links.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("X-Amz-Signature") == "" {
		t.Fatalf("GET: %d to %q, want a redirect to a presigned URL", resp.StatusCode, resp.Header.Get("Location"))
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "private, max-age=300" {
		t.Fatalf("the redirect is cached as %q", cc)
	}
	resp, body := th.get(t, r.Data.Links.URL) // followed
	if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("presigned GET: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	resp, _ = th.get(t, r.Data.Links.URL, "If-None-Match", `"`+r.Data.SHA256+`"`)
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d, want 304 without a redirect", resp.StatusCode)
	}
	resp, err = client.Get(r.Data.Links.ThumbnailURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("thumbnail (kept in the DB): %d, want it served directly", resp.StatusCode)
	}
}

// TestS3Multipart uploads an image larger than the part size: it is sent
// as a multipart upload, streamed from the spool without copying parts, and
// reads back whole and by ranges across part boundaries.
func TestS3Multipart(t *testing.T) {
	var cfg Config
	s3Bucket(t, &cfg, "&part-size=5242880")
	th := newTestHost(t, cfg)
	img := gradient(1400, 1400) // opaque: 3 bytes a pixel
	var buf bytes.Buffer
	// Stored deflate blocks: 5.9 MB of PNG at once, where compressing
	// would cost seconds under -race.
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if len(data) <= 5<<20 {
		t.Fatalf("test image of %d bytes fits in one part", len(data))
	}
	status, r := th.uploadRaw(t, data, "image/png")
	if status != http.StatusCreated {
		t.Fatalf("upload: %d %+v", status, r)
	}
	b := th.st.remote.(*s3Blobs)
	var s sum
	if err := s.UnmarshalText([]byte(r.Data.SHA256)); err != nil {
		t.Fatal(err)
	}
	var meta blobMeta
	if err := getJSON(th.db, blobKey(s), &meta, "blob metadata"); err != nil {
		t.Fatal(err)
	}
	info, err := b.client.Client.StatObject(context.Background(), b.bucket, b.object(s, meta.Gen), minio.StatObjectOptions{})
	if err != nil || info.Size != int64(len(data)) || !strings.Contains(info.ETag, "-") {
		t.Fatalf("object: %v, size %d, ETag %q: want a multipart object (ETag with a part count)", err, info.Size, info.ETag)
	}
	resp, body := th.get(t, r.Data.Links.URL)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("GET: %d, %d bytes", resp.StatusCode, len(body))
	}

	// Parts are read at their offsets, not copied: a put allocates the
	// protocol's buffers, far less than one part (5 MiB here).
	var before, after runtime.MemStats
	g := newGen()
	runtime.ReadMemStats(&before)
	err = b.put(context.Background(), s, g, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), int64(len(data)), "image/png")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.remove(context.Background(), s, g); err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a put of %.1f MiB in parts of 5 MiB allocated %.2f MiB", float64(len(data))/(1<<20), float64(alloc)/(1<<20))
	if alloc > 4<<20 {
		t.Fatalf("a put of %d bytes allocated %d: the parts were buffered", len(data), alloc)
	}
	lo, hi := 5<<20-100, 5<<20+100 // across the part boundary
	resp, body = th.get(t, r.Data.Links.URL, "Range", "bytes="+itoa(lo)+"-"+itoa(hi))
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[lo:hi+1]) {
		t.Fatalf("Range: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestParseS3URL reads the blob-store URLs doc/imgbed.md shows and
// refuses malformed ones with a message.
func TestParseS3URL(t *testing.T) {
	o, err := parseS3URL("s3://bkt")
	if err != nil || o.Bucket != "bkt" || o.Prefix != "" || o.Endpoint != "s3.amazonaws.com" || !o.Secure ||
		o.Region != s3bucket.DefaultRegion || o.retries != defaultS3Retries || o.partSize != defaultS3PartSize || o.presign != 0 || o.remoteThumbnails {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parseS3URL("s3://bkt/a/b/?endpoint=http://127.0.0.1:8333&region=eu-west-3&presign=15m&thumbnails=s3&retries=3&part-size=6291456")
	if err != nil || o.Prefix != "a/b/" || o.Endpoint != "127.0.0.1:8333" || o.Secure || o.Region != "eu-west-3" ||
		o.presign != 15*time.Minute || !o.remoteThumbnails || o.retries != 3 || o.partSize != 6<<20 {
		t.Fatalf("all parameters: %+v %v", o, err)
	}
	if o, err := parseS3URL("s3://bkt?endpoint=minio.example.com:9000"); err != nil || o.Endpoint != "minio.example.com:9000" || !o.Secure {
		t.Fatalf("bare endpoint: %+v %v", o, err)
	}
	for _, bad := range []string{
		"", "bkt", "http://bkt", "s3://", "s3://user:pw@bkt", "s3://bkt#x",
		"s3://bkt?endpoint=ftp://h", "s3://bkt?endpoint=http://h/path", "s3://bkt?endpoint=",
		"s3://bkt?region=", "s3://bkt?presign=forever", "s3://bkt?presign=500ms", "s3://bkt?presign=200h",
		"s3://bkt?thumbnails=disk", "s3://bkt?retries=0", "s3://bkt?part-size=1024", "s3://bkt?colour=blue",
	} {
		if _, err := parseS3URL(bad); err == nil || CheckBlobStore(bad) == nil && bad != "" {
			t.Errorf("%q accepted", bad)
		}
	}
	if CheckBlobStore("") != nil {
		t.Error("an empty blob store (the DB) refused")
	}
}

// TestS3ExpiryReclaimed: the objects of images whose last reference
// expired are deleted through the compaction filter (which reports them
// to the host), with their thumbnails, whether thumbnails live in the DB
// or in S3; bytes another image still references stay, and so do their
// objects, until that image is deleted or expires too.
func TestS3ExpiryReclaimed(t *testing.T) {
	for _, thumbs := range []string{"db", "s3"} {
		t.Run("thumbnails="+thumbs, func(t *testing.T) {
			var cfg Config
			s3Bucket(t, &cfg, "&thumbnails="+thumbs)
			th, clock := newClockHost(t, cfg)
			testRemoteExpiry(t, th, clock, func() int { return th.objects(t) }, thumbs == "s3")
		})
	}
}

// testRemoteExpiry runs TestS3ExpiryReclaimed's story on th, whose
// remote store holds objects() objects (thumbnails too when
// remoteThumbs).
func testRemoteExpiry(t *testing.T, th *testHost, clock *fakeClock, objects func() int, remoteThumbs bool) {
	up := func(data []byte, expiration string) response {
		t.Helper()
		status, r := th.uploadRaw(t, data, "image/png", "X-Expiration", expiration)
		if status/100 != 2 {
			t.Fatalf("upload with expiration %q: %d %s", expiration, status, r.Message)
		}
		return r
	}
	x, y, z := encodePNG(t, gradient(50, 20)), encodePNG(t, gradient(51, 20)), encodePNG(t, gradient(52, 20))
	x1 := up(x, "PT1H")
	up(y, "PT1H")
	y2 := up(y, "") // y stays while y2 does
	z1, z2 := up(z, "PT1H"), up(z, "P1D")
	for _, r := range []response{x1, y2, z1} {
		if th.status(t, r.Data.Links.ThumbnailURL) != 200 {
			t.Fatalf("thumbnail of %s", r.URL)
		}
	}
	perImage := 1 // objects per original with its thumbnail
	if remoteThumbs {
		perImage = 2
	}
	want := 3 * perImage
	if n := objects(); n != want {
		t.Fatalf("%d objects, want %d", n, want)
	}
	// settle waits for the reclaimer and checks the objects left. The
	// reclaimer deletes an object before its pending marker, so it is
	// done only when no marker is left either.
	settle := func(want int, when string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		n, pending := objects(), th.countKeys(t).pending
		for ; (n != want || pending != 0) && time.Now().Before(deadline); n, pending = objects(), th.countKeys(t).pending {
			time.Sleep(20 * time.Millisecond)
		}
		if n != want || pending != 0 {
			t.Fatalf("%s: %d objects and %d pending markers, want %d and 0", when, n, pending, want)
		}
	}

	clock.advance(2 * time.Hour) // x1 expired: x is dead; y and z are not
	if objects() != want {
		t.Fatal("an expiry deleted objects before any compaction")
	}
	th.compactAll(t)
	want -= perImage
	settle(want, "after x's last image expired")
	if _, err := th.db.Get(blobKey(sha(x))); err == nil {
		t.Error("the metadata of x survives its objects")
	}
	for _, r := range []response{y2, z2} {
		if resp, body := th.get(t, r.URL); resp.StatusCode != 200 || len(body) == 0 {
			t.Fatalf("%s, still referenced: %d", r.URL, resp.StatusCode)
		}
	}

	// y's permanent image is deleted: the last reference goes at once,
	// its expired sibling no longer counts.
	req, _ := http.NewRequest("DELETE", strings.Replace(y2.Data.Links.DeleteURL, "/d/", "/api/v1/images/", 1), nil)
	if resp, body := th.do(t, req); resp.StatusCode != 200 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	want -= perImage
	settle(want, "after y's last image was deleted")

	clock.advance(24 * time.Hour) // z2 expired too
	th.compactAll(t)
	settle(0, "after every image expired")
	if n := th.countKeys(t); n.blobs != 0 || n.thumbs != 0 || n.pending != 0 || n.chunks != 0 {
		t.Fatalf("keys left: %+v", n)
	}
}
