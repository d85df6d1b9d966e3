package bench

import (
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// HTTPConfig is one invocation of the http mode.
type HTTPConfig struct {
	// Target is the image host's base URL, such as http://127.0.0.1:8080;
	// only loopback hosts are accepted.
	Target string `json:"target"`
	// Name labels the rows (the engine column): lsmgo, reference, nginx.
	Name string `json:"name"`
	// Workloads run in order: upload, get, thumb.
	Workloads []string `json:"workloads"`
	// Levels are the connection counts, one row each per workload.
	Levels []int `json:"levels"`
	// Duration and Requests bound each row as in the client mode; at
	// least one is set.
	Duration time.Duration `json:"duration"`
	Requests int64         `json:"requests"`
	// File is the image uploaded; Body its bytes, read once.
	File string `json:"file"`
	Body []byte `json:"-"`
	// ContentType is sent with every upload; empty: from the file's
	// magic bytes.
	ContentType string `json:"content_type"`
	// Dedup uploads the file's bytes unchanged every time, so every
	// upload after the first is a duplicate; by default each upload
	// carries a JPEG comment of its own.
	Dedup bool `json:"dedup"`
	// Images is how many distinct images get and thumb read, uploaded
	// (unmeasured) before their first row.
	Images int `json:"images"`
	// ThumbWidth is the w= of the thumb workload.
	ThumbWidth int `json:"thumb_width"`
	// Token, when set, is sent as "Authorization: Bearer TOKEN".
	Token string `json:"-"`
	// ServerPID, when the server runs on this machine, lets the rows
	// carry its CPU time and peak RSS.
	ServerPID int           `json:"server_pid,omitempty"`
	Timeout   time.Duration `json:"timeout"`
	OutDir    string        `json:"out_dir"`
	Progress  string        `json:"-"`
}

// httpWorkloads are the workloads of the http mode and what each does.
var httpWorkloads = map[string]string{
	"upload": "POST the file's bytes as a raw body to /api/v1/upload",
	"get":    "GET the originals of the uploaded images, /i/{id}.{ext}, in turn",
	"thumb":  "GET a thumbnail of the uploaded images, /t/{id}.{ext}?w=N, in turn",
}

// DefaultHTTPConfig is the configuration of an http run with no flags but
// --file.
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{
		Target:     "http://127.0.0.1:8080",
		Name:       "lsmgo",
		Workloads:  []string{"upload", "get"},
		Levels:     []int{50},
		Duration:   10 * time.Second,
		Images:     100,
		ThumbWidth: 256,
		Timeout:    30 * time.Second,
		Progress:   "on",
	}
}

// ParseHTTPFlags parses the http mode's command line and reads --file.
func ParseHTTPFlags(args []string, stderr io.Writer) (HTTPConfig, error) {
	c := DefaultHTTPConfig()
	fs := flag.NewFlagSet("lsmgo-bench --mode=http", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Target, "target", c.Target, "image host base `URL` (loopback only)")
	fs.StringVar(&c.Name, "name", c.Name, "label of the rows: what serves --target")
	workloads := fs.String("workloads", strings.Join(c.Workloads, ","), "comma-separated workloads run in order: upload, get, thumb")
	conns := fs.String("connections", "50", "comma-separated connection counts, one row each per workload")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long each row runs (default 10s unless --requests is given)")
	fs.Int64Var(&c.Requests, "requests", 0, "requests per row across all connections (0: bounded by --duration only)")
	fs.StringVar(&c.File, "file", "", "image `file` to upload (a JPEG unless --dedup)")
	fs.StringVar(&c.ContentType, "content-type", "", "Content-Type of uploads (default: from the file's magic bytes)")
	fs.BoolVar(&c.Dedup, "dedup", false, "upload identical bytes every time (every upload after the first is a duplicate)")
	fs.IntVar(&c.Images, "images", c.Images, "distinct images that get and thumb read, uploaded before their first row")
	fs.IntVar(&c.ThumbWidth, "thumb-width", c.ThumbWidth, "w= of the thumb workload")
	fs.StringVar(&c.Token, "token", "", "upload token, sent as Authorization: Bearer")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "the server's process id, to report its CPU time and peak RSS")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "limit on every request")
	fs.StringVar(&c.OutDir, "out", "", "write results.json, results.csv, results.md and report.html here")
	fs.StringVar(&c.Progress, "progress", c.Progress, "a progress line per second on stderr: on or off")
	if err := parseFlagsOnly(fs, args); err != nil {
		return c, err
	}
	durationSet := false
	fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
	if c.Requests > 0 && !durationSet {
		c.Duration = 0
	}
	c.Workloads = splitList(*workloads)
	levels, err := parseLevels("connections", *conns)
	if err != nil {
		return c, err
	}
	c.Levels = levels
	if err := c.validate(); err != nil {
		return c, err
	}
	if c.Body, err = os.ReadFile(c.File); err != nil {
		return c, err
	}
	return c, c.validateBody()
}

// validate checks everything but the file's bytes.
func (c *HTTPConfig) validate() error {
	switch {
	case c.Duration < 0:
		return errors.New("--duration must not be negative")
	case c.Requests < 0:
		return errors.New("--requests must not be negative")
	case c.Duration == 0 && c.Requests == 0:
		return errors.New("give --duration or --requests: a row must end")
	case c.File == "" && c.Body == nil:
		return errors.New("--file must name the image to upload")
	case c.Images < 1 || c.Images > 1_000_000:
		return errors.New("--images must be in [1, 1000000]")
	case c.Timeout <= 0:
		return errors.New("--timeout must be positive")
	case c.Name == "":
		return errors.New("--name must not be empty")
	case len(c.Workloads) == 0:
		return errors.New("--workloads names no workload")
	}
	for _, w := range c.Workloads {
		if httpWorkloads[w] == "" {
			return fmt.Errorf("unknown workload %q: want upload, get or thumb", w)
		}
	}
	for _, n := range c.Levels {
		if n < 1 || n > maxConnections {
			return fmt.Errorf("connection count %d out of range [1, %d]", n, maxConnections)
		}
	}
	switch c.Progress {
	case "on", "off":
	default:
		return fmt.Errorf("--progress %q: want on or off", c.Progress)
	}
	return checkLoopbackURL(c.Target)
}

// validateBody checks that the file can be uploaded as asked.
func (c *HTTPConfig) validateBody() error {
	if len(c.Body) == 0 {
		return errors.New("--file is empty")
	}
	if c.ContentType == "" {
		c.ContentType = sniffImageType(c.Body)
	}
	if !c.Dedup && !isJPEG(c.Body) {
		return errors.New("--file must be a JPEG, whose comment segment makes each upload unique; give --dedup to upload other files unchanged")
	}
	return nil
}

// checkLoopbackURL accepts only http URLs of this machine: the mode is a
// load generator, and it must not be pointed at someone else's host.
func checkLoopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("--target %q: want an http:// URL", s)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--target %q: only loopback hosts (127.0.0.1, ::1, localhost) may be loaded", s)
	}
	return nil
}

// sniffImageType names the file's type from its magic bytes, as the image
// host will.
func sniffImageType(b []byte) string {
	switch {
	case isJPEG(b):
		return "image/jpeg"
	case strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n"):
		return "image/png"
	case strings.HasPrefix(string(b), "GIF8"):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return "application/octet-stream"
}

func isJPEG(b []byte) bool { return len(b) > 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF }

// HTTPReport is everything one http run produced; results.json holds it
// as is.
type HTTPReport struct {
	Meta    Meta       `json:"meta"`
	Config  HTTPConfig `json:"config"`
	Results []Result   `json:"results"`
}

// RunHTTP runs every workload of cfg at every connection count, printing
// a row as each finishes, and writes the files of cfg.OutDir. A row that
// fails has Error set; RunHTTP itself fails only when the images that get
// and thumb read cannot be uploaded, or the files cannot be written.
func RunHTTP(cfg HTTPConfig, stdout, stderr io.Writer) (*HTTPReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateBody(); err != nil {
		return nil, err
	}
	rep := &HTTPReport{Meta: collectMeta(), Config: cfg}
	rep.Meta.DBBench = ""
	rep.Meta.Modules = nil
	p := newPrinter(stdout, stderr, "off")
	p.httpHeader(&cfg)
	h, err := newHTTPLoad(&cfg)
	if err != nil {
		return nil, err
	}
	defer h.close()
	step := 0
	for _, w := range cfg.Workloads {
		if w != "upload" && h.images == nil {
			if err := h.prefill(); err != nil {
				return rep, fmt.Errorf("uploading the images %s reads: %w", w, err)
			}
		}
		for _, conns := range cfg.Levels {
			r := h.runLevel(step, w, conns, p)
			rep.Results = append(rep.Results, r)
			p.row(r)
			step++
		}
	}
	rep.Meta.Seconds = time.Since(rep.Meta.Start).Seconds()
	if cfg.OutDir != "" {
		if err := writeReportFiles(cfg.OutDir, rep, rep.Results, httpMarkdown(rep), httpHTML(rep)); err != nil {
			return rep, err
		}
		fmt.Fprintf(stdout, "\nwrote results.json, results.csv, results.md and report.html in %s\n", cfg.OutDir)
	}
	return rep, nil
}

// describeBound says how each row ends.
func (c *HTTPConfig) describeBound() string {
	bound := fmt.Sprintf("duration=%s", c.Duration)
	if c.Requests > 0 {
		bound = fmt.Sprintf("requests=%d", c.Requests)
		if c.Duration > 0 {
			bound += fmt.Sprintf(" duration=%s", c.Duration)
		}
	}
	return bound
}

// httpHeader prints what the run is, then the table's column names.
func (p *printer) httpHeader(c *HTTPConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "lsmgo-bench http mode: target=%s (%s) file=%s (%d bytes, %s) dedup=%v images=%d %s\n\n",
		c.Target, c.Name, c.File, len(c.Body), c.ContentType, c.Dedup, c.Images, c.describeBound())
	fmt.Fprintln(p.out, headerLine())
}

// httpSummary is the sentence that says what an http run was.
func httpSummary(rep *HTTPReport) string {
	c := rep.Config
	var ws []string
	for _, w := range c.Workloads {
		ws = append(ws, w+": "+httpWorkloads[w])
	}
	uploads := "each upload carries its own JPEG comment, so none is a duplicate"
	if c.Dedup {
		uploads = "every upload sends the same bytes, so all but the first are duplicates"
	}
	return fmt.Sprintf("%s at %s; %s (%d bytes, %s); %s; %s; get and thumb read %d images.",
		c.Name, c.Target, c.File, len(c.Body), c.ContentType, strings.Join(ws, "; "), uploads, c.Images) +
		" Bound: " + c.describeBound() + " per row."
}

// httpColumnNote explains the columns an http run fills differently from
// the engine mode.
const httpColumnNote = "thr is the number of connections (HTTP/1.1 keep-alive, one request at a time each). " +
	"Latency is from sending a request to reading the last byte of its answer. MB/s counts image bytes sent or received. " +
	"found is new images for upload, answers of the full size for get, non-empty thumbnails for thumb. " +
	"cpu/op and rss are the server's when --server-pid names it; the disk columns stay empty."

// httpMarkdown renders the run as results.md.
func httpMarkdown(rep *HTTPReport) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`\n\n%s\n\nMachine: %s\n\n%s\n\n", rep.Meta.Command, httpSummary(rep), describeMachine(&rep.Meta), httpColumnNote)
	resultsTableMarkdown(&b, rep.Results)
	return []byte(b.String())
}

// httpHTML renders the run as one self-contained page like the other
// modes'.
func httpHTML(rep *HTTPReport) []byte {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lsmgo-bench http report</title><style>")
	b.WriteString(reportCSS)
	fmt.Fprintf(&b, "</style></head><body>\n<h1>lsmgo-bench: %s under HTTP load</h1>\n", esc(rep.Config.Name))
	fmt.Fprintf(&b, "<p>%s</p>\n<p>%s</p>\n<p><code>%s</code></p>\n<p>%s</p>\n",
		esc(httpSummary(rep)), esc(describeMachine(&rep.Meta)), esc(rep.Meta.Command), esc(httpColumnNote))
	chartsHTML(&b, rep.Results, "requests/s (higher is better)", func(r *Result) string { return fmt.Sprintf("%s c=%d", r.Workload, r.Threads) })
	b.WriteString("<h2>All results</h2>\n")
	resultsTableHTML(&b, rep.Results, false)
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}
