package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server"
)

func init() {
	modes["server"] = mode{
		summary: "run the lsmgo server in this process with one memory budget for memtables and cache",
		run:     runServerMode,
	}
}

// runServerMode serves until SIGINT or SIGTERM, then shuts down gracefully;
// a second signal kills the process at once.
func runServerMode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveBench(ctx, stop, args, stdout, stderr)
}

// serveBench runs the server until ctx ends. release, called once ctx has
// ended, restores the default signal handling, so that a second signal
// during shutdown kills the process.
func serveBench(ctx context.Context, release func(), args []string, stdout, stderr io.Writer) int {
	opts, err := parseServerFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 2
	}
	for _, n := range opts.notices {
		fmt.Fprintf(stderr, "lsmgo-bench: %s\n", n)
	}
	opts.cfg.LogOutput = stderr
	srv, err := server.Start(opts.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 1
	}
	// One line scripts and tests can parse for the bound addresses.
	fmt.Fprintf(stdout, "lsmgo-bench server mode: listening addr=%s http=%s dir=%s memtable=%d cache=%d\n",
		srv.Addr(), srv.HTTPAddr(), opts.cfg.Dir, opts.cfg.MemTableSize, opts.cfg.CacheSize)
	<-ctx.Done()
	release()
	// The config's ShutdownTimeout bounds the wait for busy clients.
	if err := srv.Shutdown(context.Background()); err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// serverOptions is the parsed command line of the server mode.
type serverOptions struct {
	cfg server.Config
	// notices tell the user where the flags were adjusted: a capped
	// memory budget, a loopback-only bind.
	notices []string
}

func parseServerFlags(args []string, stderr io.Writer) (serverOptions, error) {
	o := serverOptions{cfg: server.DefaultConfig()}
	c := &o.cfg
	fs := flag.NewFlagSet("lsmgo-bench --mode=server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", c.Addr, "RESP listen `address`; a bare :PORT without --requirepass listens on loopback only")
	memSize := fs.String("mem-size", "0", "memory budget in bytes shared by memtables and block cache, Redis units allowed (16gb); 0: engine defaults")
	fs.StringVar(&c.Dir, "dir", c.Dir, "data directory")
	fs.StringVar(&c.HTTPAddr, "http", c.HTTPAddr, "HTTP address for /metrics, /healthz and /debug/pprof (empty disables)")
	fs.StringVar(&c.AppendFsync, "appendfsync", c.AppendFsync, "WAL fsync policy: always, everysec or no")
	fs.StringVar(&c.RequirePass, "requirepass", "", "password clients must AUTH with; needed to listen beyond loopback")
	protected := fs.String("protected-mode", "yes", "yes: refuse a non-loopback address without --requirepass")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long shutdown waits for busy clients before cutting them off")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch c.AppendFsync {
	case "always", "everysec", "no":
	default:
		return o, fmt.Errorf("--appendfsync %q: want always, everysec or no", c.AppendFsync)
	}
	switch *protected {
	case "yes":
		c.ProtectedMode = true
	case "no":
		c.ProtectedMode = false
	default:
		return o, fmt.Errorf("--protected-mode %q: want yes or no", *protected)
	}
	if n := loopbackOnly(c); n != "" {
		o.notices = append(o.notices, n)
	}
	budget, err := parseSize(*memSize)
	if err != nil {
		return o, fmt.Errorf("--mem-size: %w", err)
	}
	if budget > 0 {
		if limit, ok := machineMemory(); ok && budget > usableMemory(limit) {
			o.notices = append(o.notices, fmt.Sprintf("--mem-size %d is more than this machine can give (%d bytes of memory); capped at %d, three quarters of it",
				budget, limit, usableMemory(limit)))
			budget = usableMemory(limit)
		}
		if budget < minBudget {
			return o, fmt.Errorf("--mem-size %d is below the minimum of %d bytes", budget, minBudget)
		}
		c.MemTableSize, c.CacheSize = splitBudget(budget)
	}
	return o, nil
}

// loopbackOnly handles the quick start's --addr=:9001. Protected mode
// refuses every interface without a password; rather than fail the
// documented command, a bare :PORT binds loopback, which is what a local
// benchmark needs, and says so. An explicit host (0.0.0.0, an interface
// address) is left to protected mode to accept or refuse.
func loopbackOnly(c *server.Config) string {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || host != "" || c.RequirePass != "" || !c.ProtectedMode {
		return ""
	}
	c.Addr = net.JoinHostPort("127.0.0.1", port)
	return fmt.Sprintf("--addr :%s without --requirepass: listening on %s only (loopback); set --requirepass to listen on every interface", port, c.Addr)
}

// Budget split. Up to MemTableStopWritesThreshold memtables exist at once
// (the mutable one and those waiting to flush), so a sixteenth of the
// budget each keeps them within a quarter of it; the rest is block cache.
// Beyond 256 MiB a memtable only lengthens each flush and the WAL replay
// after a crash, so the cap returns the memory to the cache.
const (
	minBudget      = 16 << 20
	maxMemTable    = 256 << 20
	memTableShares = 16
)

func splitBudget(budget int64) (memtable int, cache int64) {
	m := min(budget/memTableShares, maxMemTable)
	return int(m), budget - lsmgo.DefaultMemTableStopWritesThreshold*m
}

// usableMemory is the part of the machine's memory a budget may take: the
// rest is for index and filter blocks, connections, the Go runtime and
// the page cache the tables are read through.
func usableMemory(limit int64) int64 { return limit / 4 * 3 }

// machineMemory returns the memory this process may use: MemTotal, or a
// smaller cgroup limit.
func machineMemory() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			total = kb << 10
		}
	}
	if total <= 0 {
		return 0, false
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			// "max" (cgroup v2) or a huge number (v1) means no limit.
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
				total = min(total, n)
			}
		}
	}
	return total, true
}

// parseSize reads a byte count with Redis' units, as lsmgo serve's size
// settings take them: 1k = 1000, 1kb = 1024, and so on up to g and gb.
func parseSize(s string) (int64, error) {
	lower := strings.ToLower(strings.TrimSpace(s))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mul = strings.TrimSuffix(lower, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q is not a byte count (such as 17179869184 or 16gb)", s)
	}
	return n * mul, nil
}
