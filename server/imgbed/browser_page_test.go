package imgbed

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLanguageAndDelete opens the page in a Chromium that prefers
// Chinese: it arrives in Chinese, the switch turns it to English in place
// (a card's labels included) and the choice survives a reload. Then a
// card's delete button, clicked twice, deletes the upload: its link
// answers 404.
func TestBrowserLanguageAndDelete(t *testing.T) {
	th := newTestHost(t, Config{})
	file := filepath.Join(t.TempDir(), "photo.png")
	if err := os.WriteFile(file, encodePNG(t, gradient(64, 48)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t, chromedp.Flag("accept-lang", "zh-CN,zh;q=0.9,en;q=0.5"))
	step := stepper(t)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		step("read "+sel, err)
		return s
	}
	step("open the page", chromedp.Do(ctx,
		chromedp.Navigate(th.srv.URL+"/"),
		chromedp.WaitReady(chromedp.CSS("#picker")),
		chromedp.SetUploadFiles(chromedp.CSS("#picker"), []string{file}),
		chromedp.WaitVisible(chromedp.CSS(`input[data-format="url"]`)),
	))
	if h1, dt := text("h1"), text(".links dt"); h1 != pageStrings["zh"]["title"] || dt != pageStrings["zh"]["url"] {
		t.Fatalf("with Accept-Language zh-CN: heading %q, first link label %q", h1, dt)
	}
	step("switch to English", chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#lang"))))
	waitFor(t, func() bool { return text("h1") == pageStrings["en"]["title"] })
	if dt, del := text(".links dt"), text(".card .delete"); dt != "URL" || del != "Delete" {
		t.Fatalf("after the switch: link label %q, delete button %q", dt, del)
	}
	link, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[data-format="url"]`)))
	step("read the link", err)

	step("delete", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".card .delete")),
		chromedp.Click(chromedp.CSS(".card .delete")),
		chromedp.WaitVisible(chromedp.CSS(".card.deleted")),
	))
	if status := text(".card .status"); status != "Deleted" {
		t.Errorf("card status after delete: %q", status)
	}
	if resp, _ := th.get(t, link); resp.StatusCode != 404 {
		t.Errorf("deleted image's link: %d", resp.StatusCode)
	}
	step("reload", chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("#picker"))))
	if h1 := text("h1"); h1 != pageStrings["en"]["title"] {
		t.Errorf("after a reload the chosen English is gone: %q", h1)
	}
}

// waitFor polls cond for up to a minute, generous for a loaded machine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}
