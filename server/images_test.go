package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/imgbed"
)

// upload posts a PNG to the server's image host and returns the status and
// the image link.
func upload(t *testing.T, base, token string, data []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/upload", bytes.NewReader(data))
	req.Header.Set("Content-Type", "image/png")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ URL string }
	json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r.URL
}

// TestImageHost runs the image host inside the server: it is served on
// the HTTP address with its metrics on /metrics, its tokens follow CONFIG
// SET, /debug/ then needs the admin token even from loopback, and the
// Redis keyspace commands neither see nor delete images.
func TestImageHost(t *testing.T) {
	s := startServer(t, func(c *Config) { c.AdminToken = "tok"; c.ImageTokens = "alice:s1" })
	base := "http://" + s.HTTPAddr()
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)))
	data := buf.Bytes()

	if code, body := httpGet(t, base+"/"); code != 200 || !strings.Contains(body, "lsmgo images") {
		t.Fatalf("page: %d", code)
	}
	status, link := upload(t, base, "", data) // anonymous: the HTTP address is loopback
	if status != 201 || !strings.HasPrefix(link, base+"/i/") {
		t.Fatalf("upload: %d %q", status, link)
	}
	if code, body := httpGet(t, base+"/metrics"); code != 200 || !strings.Contains(body, "lsmgo_imgbed_uploads_total 1") {
		t.Errorf("/metrics lacks the image host's counters")
	}
	if code, _ := httpGet(t, base+"/debug/vars"); code != http.StatusForbidden {
		t.Errorf("/debug/vars from loopback without the token: %d, want 403", code)
	}
	req, _ := http.NewRequest("GET", base+"/debug/vars", nil)
	req.Header.Set("Authorization", "Bearer tok")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("/debug/vars with the token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "user:1", "x", 0)
	if keys, err := c.Keys(ctx, "*").Result(); err != nil || !slices.Equal(keys, []string{"user:1"}) {
		t.Errorf("KEYS * = %v %v, want only user:1", keys, err)
	}
	if keys, _, err := c.Scan(ctx, 0, "", 1000).Result(); err != nil || !slices.Equal(keys, []string{"user:1"}) {
		t.Errorf("SCAN = %v %v, want only user:1", keys, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("DBSIZE = %d %v, want 1", n, err)
	}
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		if err := c.Do(ctx, flush).Err(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("after %s the image answers %d", flush, resp.StatusCode)
		}
	}

	if status, _ := upload(t, base, "s1", data); status != 200 {
		t.Errorf("upload with alice's token: %d", status)
	}
	if err := c.ConfigSet(ctx, "image-tokens", "bob:s2").Err(); err != nil {
		t.Fatal(err)
	}
	if status, _ := upload(t, base, "s1", data); status != 401 {
		t.Errorf("removed token: %d, want 401", status)
	}
	if status, _ := upload(t, base, "s2", data); status != 200 {
		t.Errorf("new token: %d", status)
	}
	if err := c.ConfigSet(ctx, "image-tokens", "bad").Err(); err == nil {
		t.Error("a malformed image-tokens was accepted")
	}

	// Uploads and downloads enter the slow log like commands.
	c.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	c.SlowLogReset(ctx)
	httpGet(t, link)
	// The entry is made once the answer is sent, which the client may
	// have read before.
	waitFor(t, "the GET in the slow log", func() bool {
		entries, err := c.SlowLogGet(ctx, 10).Result()
		return err == nil && len(entries) > 0 && slices.Equal(entries[0].Args, []string{"GET", link[len(base):]})
	})
}

// TestImageUploadRate checks images-upload-rate: the default limit
// refuses a burst past its own, and a negative rate lifts the limit, as a
// load test needs.
func TestImageUploadRate(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8)))
	for _, rate := range []int{-1, 5} {
		// A limited host must refuse within the burst plus what the
		// rate refills meanwhile: 200 more uploads would have to take
		// 40 s to all pass, however loaded the machine.
		n := imgbed.DefaultUploadBurst + 10
		if rate > 0 {
			n = imgbed.DefaultUploadBurst + 200
		}
		s := startServer(t, func(c *Config) { c.ImagesUploadRate = rate })
		refused, sent := 0, 0
		for ; sent < n && (rate < 0 || refused == 0); sent++ {
			if status, _ := upload(t, "http://"+s.HTTPAddr(), "", buf.Bytes()); status == http.StatusTooManyRequests {
				refused++
			}
		}
		if rate < 0 && refused != 0 || rate > 0 && refused == 0 {
			t.Errorf("images-upload-rate %d: %d of %d quick uploads refused", rate, refused, sent)
		}
	}
}

// TestImageSpoolDir: the image host spools into DIR/tmp, and a start
// removes the spool files a crash left there (imgbed's TestKill9Spools
// kills a process in the middle of spooling).
func TestImageSpoolDir(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(SpoolDir(dir), "imgbed-upload-123")
	if err := os.MkdirAll(SpoolDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leftover, []byte("half an upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	startServer(t, func(c *Config) { c.Dir = dir })
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover spool file is still there after the start: %v", err)
	}
}

// TestImageUploadSlotSettings checks that images-uploads-per-client and
// images-upload-queue-wait reach the image host: with one slot per client,
// an upload whose body stalls holds it, and the same client's next upload
// gets 503 with Retry-After once the short queue wait has passed.
func TestImageUploadSlotSettings(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.ImagesUploadsPerClient = 1
		c.ImagesUploadQueueWait = 200 * time.Millisecond
		c.ImagesUploadRate = -1
	})
	base := "http://" + s.HTTPAddr()
	body, stall := io.Pipe()
	defer stall.Close()
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		req, _ := http.NewRequest("POST", base+"/api/v1/upload", body)
		req.Header.Set("Content-Type", "image/png")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	stall.Write([]byte("\x89PNG\r\n\x1a\n")) // the slot is taken once the body starts
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest("POST", base+"/api/v1/upload", bytes.NewReader(buf.Bytes()))
		req.Header.Set("Content-Type", "image/png")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if waited := time.Since(start); waited > 5*time.Second {
				t.Errorf("the 503 came after %v: images-upload-queue-wait is 200 ms", waited)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second upload of a client holding its one slot got %d, want 503", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond) // the stalled upload may not hold its slot yet
	}
	stall.CloseWithError(errors.New("test over"))
	<-stalled
}

// TestImageCORSSetting: images-cors-origins reaches the image host, whose
// preflight answer names the allowed origin.
func TestImageCORSSetting(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ImagesCORSOrigins = " https://a.example , https://b.example" })
	req, _ := http.NewRequest("OPTIONS", "http://"+s.HTTPAddr()+"/api/v1/upload", nil)
	req.Header.Set("Origin", "https://b.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://b.example" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestImageHotBodySetting: images-hot-body-memory reaches the image host.
// A small image asked three times is answered from memory from the third
// GET on (it is kept on its second miss) by default, and never with the
// setting at 0.
func TestImageHotBodySetting(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8)))
	for _, tc := range []struct {
		memory int64
		hits   string
	}{{imgbed.DefaultHotBodyBytes, "1"}, {0, "0"}} {
		s := startServer(t, func(c *Config) { c.ImagesHotBodyMemory = tc.memory })
		base := "http://" + s.HTTPAddr()
		code, link := upload(t, base, "", buf.Bytes())
		if code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
		// The upload's connection went to net/http for good: GETs on a
		// connection of their own, which the front answers.
		client := &http.Client{Transport: &http.Transport{}}
		for range 3 {
			resp, err := client.Get(link)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, buf.Bytes()) {
				t.Fatalf("GET %s: %d, %d bytes, %v", link, resp.StatusCode, len(body), err)
			}
		}
		client.CloseIdleConnections()
		_, metrics := httpGet(t, base+"/metrics")
		if want := "lsmgo_imgbed_hot_body_hits_total " + tc.hits + "\n"; !strings.Contains(metrics, want) {
			t.Errorf("images-hot-body-memory %d: /metrics lacks %q", tc.memory, strings.TrimSpace(want))
		}
	}
}

// TestImageExpiryReclaimed: the server's DB runs the image host's
// compaction filter next to its own, so the bytes of an image that
// expired are gone after a compaction.
func TestImageExpiryReclaimed(t *testing.T) {
	s := startServer(t, nil)
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 9, 7)))
	req, _ := http.NewRequest("POST", "http://"+s.HTTPAddr()+"/api/v1/upload", bytes.NewReader(buf.Bytes()))
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("X-Expiration", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	chunks := func() int {
		it, err := s.db.NewIter(&lsmgo.IterOptions{LowerBound: []byte("iC"), UpperBound: []byte("iD")})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return n
	}
	if chunks() == 0 {
		t.Fatal("no chunk stored")
	}
	time.Sleep(1100 * time.Millisecond)
	for range 2 { // chunks first, then their metadata
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := chunks(); n != 0 {
		t.Fatalf("%d chunks of an expired image after a compaction", n)
	}
}

// TestImageUploadPathSettings: images-resumable-max-bytes is the tus
// Tus-Max-Size, and images-fetch-private lets an upload by URL fetch
// from loopback, which is refused without it.
func TestImageUploadPathSettings(t *testing.T) {
	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 5, 4)))
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(img.Bytes()) }))
	defer src.Close()
	for _, private := range []bool{false, true} {
		s := startServer(t, func(c *Config) { c.ImagesResumableMaxBytes = 12345; c.ImagesFetchPrivate = private })
		base := "http://" + s.HTTPAddr()
		req, _ := http.NewRequest("OPTIONS", base+"/api/v1/tus/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Tus-Max-Size") != "12345" {
			t.Errorf("Tus-Max-Size %q", resp.Header.Get("Tus-Max-Size"))
		}
		resp, err = http.Post(base+"/api/v1/upload?url="+url.QueryEscape(src.URL+"/a.png"), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: 400, true: 201}[private]; resp.StatusCode != want {
			t.Errorf("images-fetch-private %v: upload by URL from loopback %d, want %d", private, resp.StatusCode, want)
		}
	}
}
