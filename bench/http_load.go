package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// jpegComment is the size of the comment each upload carries: 16 hex
// digits naming the run and 16 numbering the upload, so no two uploads of
// any run send the same bytes and the image host's dedup never answers.
const jpegComment = 32

// httpLoad is what every row of an http run shares: the upload template,
// the run's upload counter and the images the reading workloads fetch.
type httpLoad struct {
	cfg  *HTTPConfig
	base string
	// template is the file with a comment segment after its SOI marker
	// (unless Dedup), and commentAt the offset of the comment's bytes.
	template  []byte
	commentAt int
	run       [8]byte
	uploads   atomic.Uint64
	// images holds one original's path and expected size per uploaded
	// image, thumbs its thumbnail's path (empty when the target makes
	// none); both nil until prefill.
	images []httpImage
	// idle is the connection prefill used, closed with the load.
	idle *http.Transport
}

// httpImage is one image the reading workloads fetch.
type httpImage struct {
	path, thumb string
	size        int64
}

func newHTTPLoad(cfg *HTTPConfig) (*httpLoad, error) {
	h := &httpLoad{cfg: cfg, base: strings.TrimRight(cfg.Target, "/")}
	if _, err := rand.Read(h.run[:]); err != nil {
		return nil, err
	}
	if cfg.Dedup {
		h.template = cfg.Body
		return h, nil
	}
	// SOI, then a COM segment (FF FE, a big-endian length that counts
	// itself, the comment), then the rest of the file unchanged: every
	// decoder skips comments, so the image stays the same picture.
	t := make([]byte, 0, len(cfg.Body)+4+jpegComment)
	t = append(t, cfg.Body[:2]...)
	t = append(t, 0xFF, 0xFE)
	t = binary.BigEndian.AppendUint16(t, 2+jpegComment)
	h.commentAt = len(t)
	t = append(t, make([]byte, jpegComment)...)
	t = append(t, cfg.Body[2:]...)
	h.template = t
	return h, nil
}

// close releases prefill's connection.
func (h *httpLoad) close() {
	if h.idle != nil {
		h.idle.CloseIdleConnections()
	}
}

// nextBody fills buf, a copy of the template, with the next upload's
// comment.
func (h *httpLoad) nextBody(buf []byte) {
	if h.cfg.Dedup {
		return
	}
	c := buf[h.commentAt : h.commentAt+jpegComment]
	hex.Encode(c[:16], h.run[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], h.uploads.Add(1))
	hex.Encode(c[16:], n[:])
}

// newTransport makes the transport of one connection: never a proxy,
// never more than one connection, and first the connection pre, when
// given, so a row's first requests do not pay for the dial.
func (h *httpLoad) newTransport(pre net.Conn) *http.Transport {
	d := &net.Dialer{Timeout: h.cfg.Timeout}
	var once sync.Once
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c, pre = pre, nil })
			if c != nil {
				return c, nil
			}
			return d.DialContext(ctx, network, addr)
		},
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		// The uploads' bodies are what is measured; Go's default 4 KiB
		// buffer would cut each into 25 writes.
		WriteBufferSize: 64 << 10,
		ReadBufferSize:  64 << 10,
	}
}

// uploadBody is a request body that says when the transport has closed
// it, so its buffer can be reused: the transport may close it after Do
// returns.
type uploadBody struct {
	*bytes.Reader
	closed chan struct{}
}

func (b *uploadBody) Close() error {
	select {
	case b.closed <- struct{}{}:
	default:
	}
	return nil
}

// upload posts buf and returns the status and the answer's body.
func (h *httpLoad) upload(client *http.Client, body *uploadBody, buf []byte, keep bool) (int, []byte, int64, error) {
	body.Reset(buf)
	req, err := http.NewRequest("POST", h.base+"/api/v1/upload", body)
	if err != nil {
		return 0, nil, 0, err
	}
	req.ContentLength = int64(len(buf))
	req.Header.Set("Content-Type", h.cfg.ContentType)
	if h.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	}
	status, answer, n, err := do(client, req, keep)
	// Whatever happened, the transport closes the body once; its buffer
	// is free only then.
	<-body.closed
	return status, answer, n, err
}

// do sends req and reads the whole answer, keeping its bytes only when
// keep (or the status is an error, for the message).
func do(client *http.Client, req *http.Request, keep bool) (int, []byte, int64, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	if keep || resp.StatusCode >= 300 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, b, int64(len(b)), err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil, n, err
}

// uploadAnswer is the part of the image host's answer the load reads.
type uploadAnswer struct {
	URL  string `json:"url"`
	Data struct {
		Size  int64 `json:"size"`
		Links struct {
			Thumbnail string `json:"thumbnail_url"`
		} `json:"links"`
	} `json:"data"`
}

// prefill uploads cfg.Images images, unmeasured, for get and thumb to
// read.
func (h *httpLoad) prefill() error {
	h.idle = h.newTransport(nil)
	client := &http.Client{Transport: h.idle, Timeout: h.cfg.Timeout}
	buf := bytes.Clone(h.template)
	body := &uploadBody{Reader: bytes.NewReader(nil), closed: make(chan struct{}, 1)}
	for range h.cfg.Images {
		h.nextBody(buf)
		status, answer, _, err := h.upload(client, body, buf, true)
		if err != nil {
			return err
		}
		if status != http.StatusOK && status != http.StatusCreated {
			return fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(answer))
		}
		var a uploadAnswer
		if err := json.Unmarshal(answer, &a); err != nil || a.URL == "" {
			return fmt.Errorf("the answer to an upload has no url: %.200q", answer)
		}
		img := httpImage{size: cmp.Or(a.Data.Size, int64(len(buf)))}
		if img.path, err = pathOf(a.URL); err != nil {
			return err
		}
		if a.Data.Links.Thumbnail != "" {
			u, err := url.Parse(a.Data.Links.Thumbnail)
			if err != nil {
				return fmt.Errorf("thumbnail link %q: %w", a.Data.Links.Thumbnail, err)
			}
			q := u.Query()
			q.Set("w", strconv.Itoa(h.cfg.ThumbWidth))
			u.RawQuery = q.Encode()
			img.thumb = u.RequestURI()
		}
		h.images = append(h.images, img)
	}
	return nil
}

// pathOf is the path and query of link, which the load requests from
// --target whatever host the image host put in its links.
func pathOf(link string) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", fmt.Errorf("image link %q: %w", link, err)
	}
	return u.RequestURI(), nil
}

// httpLevel is the state the connections of one row share while it runs.
type httpLevel struct {
	stop   atomic.Bool
	start  chan struct{}
	budget atomic.Int64
	// bounded says the budget bounds the row (--requests).
	bounded bool
	latencies

	mu        sync.Mutex
	failed    int
	firstFail error
}

// claim reports whether a connection may send one more request.
func (lv *httpLevel) claim() bool {
	if lv.stop.Load() {
		return false
	}
	return !lv.bounded || lv.budget.Add(-1) >= 0
}

func (lv *httpLevel) fail(err error) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lv.failed++
	if lv.firstFail == nil {
		lv.firstFail = err
	}
}

// httpConn is one connection's closed loop: send a request, read the
// whole answer, record the latency, repeat.
type httpConn struct {
	id     int
	client *http.Client
	tr     *http.Transport

	ops, found, dups, moved, written, errReplies int64
	firstErrReply                                string
}

// runLevel runs one row: conns connections run workload w together until
// the deadline or the request budget.
func (h *httpLoad) runLevel(step int, w string, conns int, p *printer) Result {
	cfg := h.cfg
	r := Result{Step: step, Engine: cfg.Name, Workload: w, Threads: conns}
	if w == "thumb" && h.images[0].thumb == "" {
		r.Error = "the target's upload answers carry no thumbnail link"
		return r
	}
	lv := &httpLevel{start: make(chan struct{}), bounded: cfg.Requests > 0}
	lv.budget.Store(cfg.Requests)
	lv.latencies.init()
	conn, err := h.connect(conns)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var wg sync.WaitGroup
	for _, c := range conn {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.tr.CloseIdleConnections()
			<-lv.start
			if err := h.runConn(c, w, lv); err != nil {
				lv.fail(err)
			}
		}()
	}
	cpu0, srv0 := cpuSeconds(), pidCPU(cfg.ServerPID)
	began := time.Now()
	close(lv.start)
	if cfg.Duration > 0 {
		timer := time.AfterFunc(cfg.Duration, func() { lv.stop.Store(true) })
		defer timer.Stop()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	if cfg.Progress == "on" {
		lv.reportProgress(began, cfg.Name+" "+w, conns, p, finished)
	}
	<-finished
	r.Seconds = time.Since(began).Seconds()
	clientCPU := cpuSeconds() - cpu0
	if cfg.ServerPID != 0 {
		if srv1 := pidCPU(cfg.ServerPID); srv1 >= srv0 {
			r.CPUSeconds = srv1 - srv0
		}
		r.PeakRSS = procPeakRSS(cfg.ServerPID)
	}
	var moved, dups int64
	var firstErrReply string
	var errReplies int64
	for _, c := range conn {
		r.Ops += c.ops
		r.Found += c.found
		r.UserBytesWritten += c.written
		moved += c.moved
		dups += c.dups
		errReplies += c.errReplies
		firstErrReply = cmp.Or(firstErrReply, c.firstErrReply)
	}
	r.setLatency(lv.total())
	r.setRates(moved)

	var notes []string
	switch w {
	case "upload":
		notes = append(notes, fmt.Sprintf("%d new, %d duplicates", r.Found, dups))
	default:
		notes = append(notes, fmt.Sprintf("%d images", len(h.images)))
	}
	if r.Seconds > 0 {
		notes = append(notes, fmt.Sprintf("client cpu %.2f cores", clientCPU/r.Seconds))
	}
	r.Note = strings.Join(notes, "; ")
	var errs []string
	if lv.failed > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d connections failed, first: %v", lv.failed, conns, lv.firstFail))
	}
	if errReplies > 0 {
		errs = append(errs, fmt.Sprintf("%d error answers, first: %s", errReplies, firstErrReply))
	}
	if r.Ops == 0 && len(errs) == 0 {
		errs = append(errs, "no request completed")
	}
	r.Error = strings.Join(errs, "; ")
	return r
}

// pidCPU is process pid's CPU time so far, or 0.
func pidCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	s, _ := procCPUSeconds(pid)
	return s
}

// connect dials conns connections to the target, or none.
func (h *httpLoad) connect(conns int) ([]*httpConn, error) {
	u, err := url.Parse(h.base)
	if err != nil {
		return nil, err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	out := make([]*httpConn, conns)
	errs := make([]error, conns)
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", addr, h.cfg.Timeout)
			if err != nil {
				errs[i] = err
				return
			}
			tr := h.newTransport(nc)
			out[i] = &httpConn{id: i, tr: tr, client: &http.Client{Transport: tr, Timeout: h.cfg.Timeout}}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range out {
			if c != nil {
				c.tr.CloseIdleConnections()
			}
		}
		failed := 0
		for _, e := range errs {
			if e != nil {
				failed++
			}
		}
		return nil, fmt.Errorf("%d of %d connections failed to open, first: %w", failed, conns, cmp.Or(errs...))
	}
	return out, nil
}

// runConn is one connection's loop until the row ends; a transport error
// ends the connection, an error answer only counts.
func (h *httpLoad) runConn(c *httpConn, w string, lv *httpLevel) error {
	var buf []byte
	var body *uploadBody
	if w == "upload" {
		buf = bytes.Clone(h.template)
		body = &uploadBody{Reader: bytes.NewReader(nil), closed: make(chan struct{}, 1)}
	}
	// Connections start at different images, so the reads spread over
	// them from the first request.
	next := c.id
	lat := make([]int64, 1)
	for lv.claim() {
		var (
			status int
			answer []byte
			n      int64
			err    error
			img    httpImage
		)
		start := time.Now()
		if w == "upload" {
			h.nextBody(buf)
			status, answer, n, err = h.upload(c.client, body, buf, false)
		} else {
			img = h.images[next%len(h.images)]
			next++
			path := img.path
			if w == "thumb" {
				path = img.thumb
			}
			req, rerr := http.NewRequest("GET", h.base+path, nil)
			if rerr != nil {
				return rerr
			}
			status, answer, n, err = do(c.client, req, false)
		}
		if err != nil {
			return err
		}
		lat[0] = time.Since(start).Nanoseconds()
		lv.record(c.id, lat)
		c.ops++
		switch {
		case status >= 300:
			c.errReplies++
			if c.firstErrReply == "" {
				c.firstErrReply = fmt.Sprintf("HTTP %d: %.200s", status, bytes.TrimSpace(answer))
			}
		case w == "upload":
			c.moved += int64(len(buf))
			c.written += int64(len(buf))
			if status == http.StatusCreated {
				c.found++
			} else {
				c.dups++
			}
		default:
			c.moved += n
			if w == "thumb" && n > 0 || n == img.size {
				c.found++
			}
		}
	}
	return nil
}
