package imgbed

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserUpload drives the page in headless Chromium (Debian package
// chromium; skipped where it is missing): it uploads a file through the
// file picker, reads the link off the result card and fetches it, and
// checks that an admin sees the upload in the gallery. With
// IMGBED_SCREENSHOT=path it also saves a screenshot of the page.
func TestBrowserUpload(t *testing.T) {
	th := newTestHost(t, Config{Tokens: testTokens})
	file := filepath.Join(t.TempDir(), "screenshot.png")
	data := encodePNG(t, gradient(640, 360))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	step := stepper(t)
	step("open the page", chromedp.Do(ctx,
		chromedp.Navigate(th.srv.URL+"/"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem("lsmgo-token", "root-secret")`),
		chromedp.Reload(),
		chromedp.WaitReady(chromedp.CSS("#picker")),
		chromedp.SetUploadFiles(chromedp.CSS("#picker"), []string{file}),
		chromedp.WaitVisible(chromedp.CSS(`input[data-format="url"]`)),
		chromedp.WaitVisible(chromedp.CSS("#grid img")),
	))
	link, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[data-format="url"]`)))
	step("read the link", err)
	gallery, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#grid img").length`))
	step("count the gallery", err)
	// The gallery shows the upload's thumbnail, rendered on first request.
	for w := 0; w == 0; {
		w, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector("#grid img").naturalWidth`))
		step("wait for the gallery thumbnail", err)
		time.Sleep(50 * time.Millisecond)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	step("screenshot", err)
	if !strings.HasPrefix(link, th.srv.URL+"/i/") || gallery != 1 {
		t.Fatalf("link %q, %d gallery images", link, gallery)
	}
	if resp, body := th.get(t, link); resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("the page's link: %d, %d bytes", resp.StatusCode, len(body))
	}
	if p := os.Getenv("IMGBED_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newBrowser starts headless Chromium (Debian package chromium) for one
// test, skipping the test where it is missing outside CI.
func newBrowser(t *testing.T, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium: .ci/run installs it, and CI must run the browser test")
		}
		t.Skip("no chromium")
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1000, 900)}, opts...)...)...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// Only a bound on a hung browser: a loaded machine may take minutes
	// over a test's steps (TestBrowserBatch's two batches of 100).
	ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// stepper returns a check that ends the test at a failed browser step.
func stepper(t *testing.T) func(what string, err error) {
	return func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
