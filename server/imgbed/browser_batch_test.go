package imgbed

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserBatch picks 100 files at once on the page, anonymously. With
// the default limits every one gets its link without a single 429; with a
// budget far below the batch, the host answers 429s with Retry-After and
// the page waits and sends the refused files again until every card has
// its link and none shows an error.
func TestBrowserBatch(t *testing.T) {
	const n = 100
	dir := t.TempDir()
	files := make([]string, n)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("shot-%03d.png", i))
		if err := os.WriteFile(files[i], encodePNG(t, gradient(16+i, 16)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := newBrowser(t)
	step := stepper(t)
	for _, tc := range []struct {
		name    string
		rate    float64
		burst   int
		want429 bool
	}{
		{"defaults", DefaultUploadRate, DefaultUploadBurst, false},
		{"tight budget", 20, 5, true},
	} {
		// The host's clock stands still but for a token's worth after
		// each 429: a machine too slow to outrun the rate still meets
		// the budget, and the retries still get through.
		th, clock := newClockHost(t, Config{UploadRate: tc.rate, UploadBurst: tc.burst})
		var refused atomic.Int64
		handler := th.Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w}
			handler.ServeHTTP(rec, r)
			if rec.status == http.StatusTooManyRequests {
				refused.Add(1)
				clock.advance(time.Duration(float64(time.Second) / tc.rate))
			}
		}))
		defer srv.Close()
		start := time.Now()
		step(tc.name+": upload the batch", chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitReady(chromedp.CSS("#picker")),
			chromedp.SetUploadFiles(chromedp.CSS("#picker"), files),
		))
		// The page is waited for as long as it makes progress: a loaded
		// machine may take minutes for the batch (once 78 of 100 links
		// after 90 s), but a page that stops getting links for a minute
		// is stuck.
		var links, errs int
		for progress := time.Now(); links+errs < n && time.Since(progress) < time.Minute; {
			time.Sleep(100 * time.Millisecond)
			l, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('input[data-format="url"]').length`))
			step("count links", err)
			e, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll(".card .error")].filter(e => e.textContent).length`))
			step("count errors", err)
			if l+e > links+errs {
				progress = time.Now()
			}
			links, errs = l, e
		}
		if links != n || errs != 0 {
			t.Fatalf("%s: %d links and %d errors of %d files after %v", tc.name, links, errs, n, time.Since(start))
		}
		if got := refused.Load(); tc.want429 != (got > 0) {
			t.Errorf("%s: %d uploads refused with 429", tc.name, got)
		}
		t.Logf("%s: %d files in %v, %d refused and retried", tc.name, n, time.Since(start).Round(time.Millisecond), refused.Load())
	}
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
