package imgbed

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestBodyCacheModel runs seeded random gets, admissions and puts
// against a model (a least-recently-used list of whole bodies under a
// byte bound): the same bodies are kept, the bound always holds, and a
// body is admitted on its key's second miss only.
func TestBodyCacheModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		max := int64(1 + rng.IntN(4096))
		c := newBodyCache(max)
		type kept struct {
			key  string
			body []byte
		}
		var model []kept // most recently used first
		seen := map[string]bool{}
		bodyOf := func(key string, size int) []byte {
			return bytes.Repeat([]byte(key[len(key)-1:]), size)
		}
		for op := 0; op < 2000; op++ {
			key := fmt.Sprintf("k%03d", rng.IntN(60))
			size := rng.IntN(int(max) + 200) // some never fit
			i := slices.IndexFunc(model, func(k kept) bool { return k.key == key })
			got := c.get([]byte(key))
			if i >= 0 {
				if !bytes.Equal(got, model[i].body) {
					t.Fatalf("seed %d op %d: get %s: %d bytes, want %d", seed, op, key, len(got), len(model[i].body))
				}
				k := model[i]
				model = slices.Insert(slices.Delete(model, i, i+1), 0, k)
				continue
			}
			if got != nil {
				t.Fatalf("seed %d op %d: get %s: a body the model evicted", seed, op, key)
			}
			fits := int64(size) <= max
			want := fits && seen[key]
			if len(seen) >= bodySeenKeys {
				t.Fatal("the model's seen set outgrew the cache's") // 60 keys: never
			}
			if fits {
				seen[key] = !seen[key]
			}
			if got := c.admit([]byte(key), int64(size)); got != want {
				t.Fatalf("seed %d op %d: admit %s (%d bytes): %v, want %v", seed, op, key, size, got, want)
			}
			if !want {
				continue
			}
			body := bodyOf(key, size)
			c.put([]byte(key), body)
			// Least recently used bodies go until the new one fits: the
			// longest prefix of the list within the bound stays.
			model = slices.Insert(model, 0, kept{key, body})
			var n int64
			for j, k := range model {
				if n+int64(len(k.body)) > max {
					model = model[:j]
					break
				}
				n += int64(len(k.body))
			}
			if held := c.held(); held != n || held > max {
				t.Fatalf("seed %d op %d: %d bytes held, model %d, bound %d", seed, op, held, n, max)
			}
		}
	}
}

// TestHotBodiesNeverServeGone warms the bodies kept in memory with an
// image, its thumbnail and an expiring image, then deletes the first and
// lets the second expire: both are refused at once although their bytes
// are still kept. A view-limited image is never kept, and bytes uploaded
// again after their delete are served from their new copy.
func TestHotBodiesNeverServeGone(t *testing.T) {
	th, clock := newClockHost(t, Config{})
	kept, expiring, limited := noisyPNG(t, 60, 40, 7), noisyPNG(t, 61, 40, 8), noisyPNG(t, 62, 40, 9)
	up := func(data []byte, header ...string) response {
		t.Helper()
		status, r := th.uploadRaw(t, data, "image/png", header...)
		if status != 201 {
			t.Fatalf("upload: %d %s", status, r.Message)
		}
		return r
	}
	rk, re := up(kept), up(expiring, "X-Expiration", "PT1H")
	rl := up(limited, "X-Max-Views", "4")
	// Each GET on a new connection (kept alive: "Connection: close" is
	// not plain): the front hands a connection to net/http for good at
	// its first request that is not plain, as the uploads were.
	get := func(url string) (int, []byte) {
		t.Helper()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	status := func(url string) int { code, _ := get(url); return code }
	// getN fetches url n times, each answer 200 with the same body.
	getN := func(url string, n int) []byte {
		t.Helper()
		var first []byte
		for i := 0; i < n; i++ {
			code, body := get(url)
			if code != http.StatusOK || i > 0 && !bytes.Equal(body, first) {
				t.Fatalf("GET %s #%d: %d, %d bytes", url, i+1, code, len(body))
			}
			first = body
		}
		return first
	}
	if !bytes.Equal(getN(rk.URL, 3), kept) || !bytes.Equal(getN(re.URL, 3), expiring) {
		t.Fatal("originals differ from the uploads")
	}
	thumb := getN(rk.Data.Links.ThumbnailURL, 4) // a render, then stored
	if held, want := th.bodies.held(), int64(len(kept)+len(expiring)+len(thumb)); held != want {
		t.Fatalf("%d bytes kept, want %d", held, want)
	}
	if hits := testutil.ToFloat64(th.metrics.hotBodyHits); hits != 3 {
		t.Fatalf("%v answers from memory, want 3", hits)
	}
	held := th.bodies.held()
	if !bytes.Equal(getN(rl.URL, 4), limited) || th.bodies.held() != held {
		t.Fatal("a view-limited image was kept in memory")
	}
	if got := status(rl.URL); got != http.StatusNotFound {
		t.Errorf("view-limited image past its views: %d", got)
	}

	req, _ := http.NewRequest("POST", rk.Data.Links.DeleteURL, nil) // the delete link
	if resp, body := th.do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	for _, u := range []string{rk.URL, rk.Data.Links.ThumbnailURL} {
		if got := status(u); got != http.StatusNotFound {
			t.Errorf("%s after its delete: %d", u, got)
		}
	}
	clock.advance(time.Hour)
	if got := status(re.URL); got != http.StatusNotFound {
		t.Errorf("%s at its expiry: %d", re.URL, got)
	}
	if th.bodies.held() != held {
		t.Fatal("the refused images' bytes were not kept: the test proves nothing")
	}

	again := up(kept)
	if again.Data.Duplicate {
		t.Fatal("deleted bytes uploaded again counted as a duplicate")
	}
	if !bytes.Equal(getN(again.URL, 3), kept) || !bytes.Equal(getN(again.Data.Links.ThumbnailURL, 4), thumb) {
		t.Fatal("bytes uploaded again differ")
	}
	if hits := testutil.ToFloat64(th.metrics.hotBodyHits); hits != 5 {
		t.Fatalf("%v answers from memory, want 5", hits)
	}
}
