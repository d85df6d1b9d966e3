package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ClientConfig is one invocation of the client mode.
type ClientConfig struct {
	// Addr is the server's host:port.
	Addr string `json:"addr"`
	// Levels are the connection counts to run, one row each, in order:
	// --gradient, or just --concurrency.
	Levels []int `json:"levels"`
	// Duration bounds each level by time; 0 means only Requests bounds it.
	Duration time.Duration `json:"duration"`
	// Requests bounds each level by the number of commands across all
	// connections; 0 means only Duration bounds it.
	Requests int64 `json:"requests"`
	// Pipeline is how many commands a connection sends before reading
	// their replies.
	Pipeline int `json:"pipeline"`
	// ReadPercent is the share of GETs; the rest are SETs.
	ReadPercent  int          `json:"read_percent"`
	KeySize      int          `json:"key_size"`
	ValueSize    int          `json:"value_size"`
	Keyspace     int64        `json:"keyspace"`
	Distribution Distribution `json:"distribution"`
	// Password, when set, is sent with AUTH on every connection.
	Password string `json:"-"`
	// Timeout bounds every network round trip and every dial: a server
	// that stops answering ends the level with an error instead of
	// hanging it.
	Timeout time.Duration `json:"timeout"`
	Seed    uint64        `json:"seed"`
	// OutDir, when set, receives results.json, results.csv, results.md
	// and report.html.
	OutDir string `json:"out_dir"`
	// Progress prints one line per second on stderr while a level runs:
	// "on" or "off".
	Progress string `json:"-"`
}

// DefaultClientConfig is the configuration of a client run with no flags
// but --addr.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		Addr:         "localhost:9001",
		Levels:       []int{512},
		Duration:     10 * time.Second,
		Pipeline:     1,
		ReadPercent:  50,
		KeySize:      defaultKeySize,
		ValueSize:    defaultValueSize,
		Keyspace:     1_000_000,
		Distribution: Uniform,
		Timeout:      10 * time.Second,
		Seed:         defaultSeed,
		Progress:     "on",
	}
}

// ParseClientFlags parses the client mode's command line.
func ParseClientFlags(args []string, stderr io.Writer) (ClientConfig, error) {
	c := DefaultClientConfig()
	fs := flag.NewFlagSet("lsmgo-bench --mode=client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", c.Addr, "server `host:port`")
	concurrency := fs.Int("concurrency", c.Levels[0], "connections, each running one closed loop")
	gradient := fs.String("gradient", "", "comma-separated connection counts to run one after the other, one row each (10,100,500,1000); overrides --concurrency")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long each level runs (default 10s unless --requests is given)")
	fs.Int64Var(&c.Requests, "requests", 0, "commands per level across all connections (0: bounded by --duration only)")
	fs.IntVar(&c.Pipeline, "pipeline", c.Pipeline, "commands each connection sends before reading their replies")
	ratio := fs.String("ratio", "50:50", "GET:SET ratio")
	fs.IntVar(&c.KeySize, "key-size", c.KeySize, "key size in bytes (\"key:\" and a zero-padded decimal index)")
	fs.IntVar(&c.ValueSize, "value-size", c.ValueSize, "SET value size in bytes")
	fs.Int64Var(&c.Keyspace, "keyspace", c.Keyspace, "number of distinct keys")
	dist := fs.String("distribution", string(c.Distribution), "key distribution: uniform, zipfian or latest")
	fs.StringVar(&c.Password, "password", "", "AUTH password")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "limit on every dial and round trip")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the key and value streams")
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
	c.Levels = []int{*concurrency}
	if *gradient != "" {
		levels, err := parseLevels("gradient", *gradient)
		if err != nil {
			return c, err
		}
		c.Levels = levels
	}
	var err error
	if c.ReadPercent, err = parseRatio("ratio", *ratio); err != nil {
		return c, err
	}
	if c.Distribution, err = parseDistribution(*dist); err != nil {
		return c, err
	}
	return c, c.validate()
}

// parseLevels reads a comma-separated list of connection counts given
// with the flag named flagName.
func parseLevels(flagName, s string) ([]int, error) {
	var levels []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s %q: want positive connection counts such as 10,100,500,1000", flagName, s)
		}
		levels = append(levels, n)
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("--%s %q names no connection count", flagName, s)
	}
	return levels, nil
}

// keyPrefix starts every key, as redis-benchmark's "key:__rand_int__"
// does, so keys are readable in redis-cli.
const keyPrefix = "key:"

// minClientKeySize is the shortest key that holds the prefix and every
// index of the key space.
func (c *ClientConfig) minClientKeySize() int {
	return len(keyPrefix) + len(strconv.FormatInt(max(c.Keyspace-1, 0), 10))
}

// maxConnections bounds --concurrency: beyond it a test of the server
// becomes a test of the client machine's file descriptors.
const maxConnections = 100_000

func (c *ClientConfig) validate() error {
	switch {
	case c.Addr == "":
		return errors.New("--addr must name the server")
	case c.Duration < 0:
		return errors.New("--duration must not be negative")
	case c.Requests < 0:
		return errors.New("--requests must not be negative")
	case c.Duration == 0 && c.Requests == 0:
		return errors.New("give --duration or --requests: a level must end")
	case c.Pipeline < 1 || c.Pipeline > 10_000:
		return errors.New("--pipeline must be in [1, 10000]")
	case c.Keyspace < 1 || c.Keyspace > 1<<40:
		return errors.New("--keyspace must be in [1, 2^40]")
	case c.KeySize < c.minClientKeySize():
		return fmt.Errorf("--key-size must be at least %d to hold %q and every index below --keyspace", c.minClientKeySize(), keyPrefix)
	case c.ValueSize < 1 || c.ValueSize > maxValueSize:
		return fmt.Errorf("--value-size must be in [1, %d]", maxValueSize)
	case c.Timeout <= 0:
		return errors.New("--timeout must be positive")
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
	return nil
}

// workloadName names the rows: the mix of commands they ran.
func (c *ClientConfig) workloadName() string {
	switch c.ReadPercent {
	case 100:
		return "get"
	case 0:
		return "set"
	}
	return "getset"
}

// ClientReport is everything one client run produced; results.json holds
// it as is.
type ClientReport struct {
	Meta   Meta         `json:"meta"`
	Config ClientConfig `json:"config"`
	// Target describes the server as its INFO reported it.
	Target Target `json:"target"`
	// Results holds one row per connection count.
	Results []Result `json:"results"`
}

// RunClient runs every level of cfg against the server, printing a row
// per level to stdout as it finishes and a progress line per second to
// stderr, and writes the files of cfg.OutDir. A level that fails gets a
// row with Error set; RunClient itself fails only when the server cannot
// be reached at all or the files cannot be written.
func RunClient(cfg ClientConfig, stdout, stderr io.Writer) (*ClientReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	target, err := probeTarget(&cfg)
	if err != nil {
		return nil, err
	}
	rep := &ClientReport{Meta: collectMeta(), Config: cfg, Target: target}
	// The engine mode's peers are not part of a client run.
	rep.Meta.DBBench = ""
	rep.Meta.Modules = nil
	p := newPrinter(stdout, stderr, "off")
	p.clientHeader(&cfg, &target)
	l := newLoad(&cfg)
	for step, conns := range cfg.Levels {
		r := l.runLevel(step, conns, &target, p)
		rep.Results = append(rep.Results, r)
		p.row(r)
	}
	rep.Meta.Seconds = time.Since(rep.Meta.Start).Seconds()
	if cfg.OutDir != "" {
		if err := writeReportFiles(cfg.OutDir, rep, rep.Results, clientMarkdown(rep), clientHTML(rep)); err != nil {
			return rep, err
		}
		fmt.Fprintf(stdout, "\nwrote results.json, results.csv, results.md and report.html in %s\n", cfg.OutDir)
	}
	return rep, nil
}

// clientHeader prints what the run is, then the column names of the
// engine mode's table.
func (p *printer) clientHeader(c *ClientConfig, t *Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	bound := fmt.Sprintf("duration=%s", c.Duration)
	if c.Requests > 0 {
		bound = fmt.Sprintf("requests=%d", c.Requests)
		if c.Duration > 0 {
			bound += fmt.Sprintf(" duration=%s", c.Duration)
		}
	}
	fmt.Fprintf(p.out, "lsmgo-bench client mode: addr=%s server=%s get:set=%d:%d pipeline=%d keys=%dB values=%dB keyspace=%d distribution=%s %s\n\n",
		c.Addr, t.describe(), c.ReadPercent, 100-c.ReadPercent, c.Pipeline, c.KeySize, c.ValueSize, c.Keyspace, c.Distribution, bound)
	fmt.Fprintln(p.out, headerLine())
}

// progressLine prints one finished progress line on stderr.
func (p *printer) progressLine(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.err, s)
}

// describe names the server for humans.
func (t *Target) describe() string {
	s := t.Name
	if t.Version != "" {
		s += " " + t.Version
	}
	return strings.TrimSpace(s)
}
