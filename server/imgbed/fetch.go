package imgbed

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"syscall"
	"time"
)

// Uploads by URL: the host fetches the image itself and stores it as if
// it had been uploaded. A host that fetches what anyone names is a way
// into the network it sits in (SSRF), so by default only public
// addresses are fetched from. The address is checked when the connection
// is dialled, after name resolution, for every connection, the ones
// redirects lead to included: a name that resolves to a private address
// (or is rebound to one after a first, public answer) and a redirect to
// loopback are refused like a literal private address, and nothing is
// sent to them, not even a SYN.

var (
	errFetchURL     = &apiError{http.StatusBadRequest, "bad_request", "url must be an absolute http or https URL"}
	errFetchAddress = &apiError{http.StatusBadRequest, "address", "the URL leads to an address that is not public (loopback, private, link-local, multicast)"}
	errFetchFailed  = &apiError{http.StatusBadGateway, "fetch", "fetching the URL failed"}
	errFetchTimeout = &apiError{http.StatusGatewayTimeout, "fetch", "fetching the URL took too long"}
)

// maxRedirects bounds the redirects of one fetch, as browsers do.
const maxRedirects = 5

// newFetchClient returns the client of uploads by URL: no proxy from the
// environment (a proxy would dial for us, unchecked), allowed to dial
// only what allowed accepts, and bounded in time as a whole.
func newFetchClient(timeout time.Duration, allowed func(netip.AddrPort) bool) *http.Client {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !allowed(ap) {
				return errFetchAddress
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errFetchFailed
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errFetchURL
			}
			return nil
		},
	}
}

// nonPublic are address blocks that IsGlobalUnicast and IsPrivate let
// through but that reach no public host: "this network", carrier-grade
// NAT, protocol assignments, documentation and benchmarking ranges,
// reserved space, and IPv6 discard-only and documentation prefixes.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2001::/32"), // Teredo: an IPv4 address hides inside
	netip.MustParsePrefix("fec0::/10"), // site-local, deprecated but routed by some
}

// Prefixes that carry an IPv4 address in their last (NAT64) or second
// 32 bits (6to4): the embedded address must be public too.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// publicAddr reports whether a is an address of the public internet.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false // loopback, link-local, multicast, unspecified, broadcast, 10/8, fc00::/7 …
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Loc.Contains(a):
		return publicAddr(netip.AddrFrom4([4]byte(b[12:])))
	case sixToFour.Contains(a):
		return publicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}

// fetchAllowed is the dial policy of uploads by URL under the host's
// configuration.
func (h *Host) fetchAllowed(ap netip.AddrPort) bool {
	return h.cfg.FetchPrivate || publicAddr(ap.Addr())
}

// ingestURL fetches raw and stores what it serves as an upload named
// after the URL's last path element.
func (h *Host) ingestURL(ctx context.Context, raw string, tok *Token, opts uploadOptions) uploaded {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return uploaded{err: errFetchURL}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return uploaded{err: errFetchURL}
	}
	req.Header.Set("Accept", "image/*")
	req.Header.Set("User-Agent", "lsmgo-imgbed")
	resp, err := h.fetch.Do(req)
	if err != nil {
		return uploaded{err: fetchError(err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return uploaded{err: &apiError{http.StatusBadGateway, "fetch", "fetching the URL failed: " + resp.Status}}
	case resp.ContentLength > h.cfg.MaxBytes:
		return uploaded{err: errTooLarge}
	}
	// One byte past the limit tells fill the file is too large; ingest
	// drains no more than that.
	body := fetchBody{io.LimitReader(resp.Body, h.cfg.MaxBytes+1)}
	return h.ingest(ctx, body, path.Base(resp.Request.URL.Path), tok, opts)
}

// fetchBody reports the failures of a fetched body as the client's
// errors, not the host's.
type fetchBody struct{ r io.Reader }

func (b fetchBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = fetchError(err)
	}
	return n, err
}

// fetchError classifies a failed fetch: a refused address, a timeout,
// anything else.
func fetchError(err error) error {
	var ae *apiError
	var ne net.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return errFetchTimeout
	}
	return errFetchFailed
}
