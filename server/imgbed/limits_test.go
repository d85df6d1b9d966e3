package imgbed

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// TestUploadLimitsFitABatch checks the default per-client budgets on a
// fake clock: an anonymous batch of 100 unique files passes, the upload
// past the burst gets 429 with the Retry-After that refills one upload,
// the clock moving by that much lets the next one through, and a token
// has its own, larger budget.
func TestUploadLimitsFitABatch(t *testing.T) {
	th := newTestHost(t, Config{Anonymous: AnonymousOn, UploadRate: DefaultUploadRate, TokenUploadRate: DefaultTokenUploadRate,
		Tokens: []Token{{Name: "bob", Secret: "bob-secret"}}})
	now := time.Unix(1_800_000_000, 0)
	th.now = func() time.Time { return now }
	post := func(i int, header ...string) *http.Response {
		t.Helper()
		req := httptest.NewRequest("POST", "/api/v1/upload", bytes.NewReader(encodePNG(t, gradient(8+i%50, 8+i/50))))
		req.Header.Set("Content-Type", "image/png")
		for j := 0; j+1 < len(header); j += 2 {
			req.Header.Set(header[j], header[j+1])
		}
		w := httptest.NewRecorder()
		th.Handler().ServeHTTP(w, req)
		return w.Result()
	}
	for i := range DefaultUploadBurst {
		if resp := post(i); resp.StatusCode != http.StatusCreated {
			t.Fatalf("anonymous upload %d of a batch: %d", i, resp.StatusCode)
		}
	}
	resp := post(DefaultUploadBurst)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("past the burst: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	now = now.Add(time.Second / DefaultUploadRate)
	if resp := post(DefaultUploadBurst + 1); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after the Retry-After: %d", resp.StatusCode)
	}
	for i := range DefaultTokenUploadBurst {
		if resp := post(i, "Authorization", "Bearer bob-secret"); resp.StatusCode/100 != 2 {
			t.Fatalf("token upload %d while the address is out of budget: %d", i, resp.StatusCode)
		}
	}
	if resp := post(0, "Authorization", "Bearer bob-secret"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("token past its burst: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestRetryAfterRoundsUp: a slow refill is announced in whole seconds,
// rounded up, so a client that waits that long is let in.
func TestRetryAfterRoundsUp(t *testing.T) {
	l := newRateLimiter(0.4, 1)
	now := time.Unix(0, 0)
	if ok, _ := l.allow("c", now); !ok {
		t.Fatal("first upload refused")
	}
	ok, wait := l.allow("c", now)
	w := httptest.NewRecorder()
	setRetryAfter(w, wait)
	if ok || w.Header().Get("Retry-After") != "3" { // 1/0.4 = 2.5 s
		t.Fatalf("allowed %v, wait %v, Retry-After %q", ok, wait, w.Header().Get("Retry-After"))
	}
	if ok, _ := l.allow("c", now.Add(3*time.Second)); !ok {
		t.Fatal("refused after waiting the Retry-After")
	}
}

// TestEvery503HasRetryAfter: errors whose duration nobody knows (storage
// read-only or unavailable) still tell clients when to come back.
func TestEvery503HasRetryAfter(t *testing.T) {
	th := newTestHost(t, Config{})
	for _, err := range []error{errUnavailable, errBusy, errRateLimited, lsmgo.ErrReadOnly} {
		w := httptest.NewRecorder()
		th.fail(w, err)
		if got := w.Header().Get("Retry-After"); got == "" || w.Code != 503 && w.Code != 429 {
			t.Errorf("%v: %d, Retry-After %q", err, w.Code, got)
		}
	}
}
