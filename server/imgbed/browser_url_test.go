package imgbed

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserUploadByURL types an image's address into the page's URL
// field: the host fetches it (from a local server, with FetchPrivate),
// and the card shows the stored image's links and thumbnail.
func TestBrowserUploadByURL(t *testing.T) {
	th := newTestHost(t, Config{FetchPrivate: true})
	loopbackOnly(t, th, th.fetchAllowed)
	data := encodePNG(t, gradient(80, 60))
	src, _ := imageServer(t, data)
	ctx := newBrowser(t)
	step := stepper(t)
	step("upload by URL", chromedp.Do(ctx,
		chromedp.Navigate(th.srv.URL+"/"),
		chromedp.WaitReady(chromedp.CSS("#url")),
		chromedp.SendKeys(chromedp.CSS("#url"), src.URL+"/pics/cat.png"),
		chromedp.Click(chromedp.CSS(`#byurl button`)),
		chromedp.WaitVisible(chromedp.CSS(`input[data-format="url"]`)),
	))
	link, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[data-format="url"]`)))
	step("read the link", err)
	thumb, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(".card img"), "src"))
	step("read the preview", err)
	if _, body := th.get(t, link); !bytes.Equal(body, data) {
		t.Errorf("the link %s does not serve the image", link)
	}
	if !strings.Contains(thumb.Value, "/t/") {
		t.Errorf("card preview %q is not the thumbnail", thumb.Value)
	}
}
