package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/bench"
)

// TestQuickStartFlags parses the README's quick start exactly as written.
func TestQuickStartFlags(t *testing.T) {
	mode, rest, err := splitMode(strings.Fields("--mode=server --mem-size=17179869184 --addr=:9001"))
	if err != nil || mode != "server" {
		t.Fatalf("splitMode: %q %v", mode, err)
	}
	o, err := parseServerFlags(rest, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Addr != "127.0.0.1:9001" || o.cfg.RequirePass != "" || !o.cfg.ProtectedMode {
		t.Errorf("addr %q, password %q, protected %v: want loopback 9001, protected, no password", o.cfg.Addr, o.cfg.RequirePass, o.cfg.ProtectedMode)
	}
	if len(o.notices) == 0 || !strings.Contains(o.notices[0], "listening on 127.0.0.1:9001 only (loopback)") {
		t.Errorf("notices %q: want the loopback notice first", o.notices)
	}
	budget := int64(17179869184)
	if limit, ok := machineMemory(); ok && budget > usableMemory(limit) {
		// A small CI machine caps the quick start's 16 GiB.
		t.Logf("machine memory %d: budget capped to %d", limit, usableMemory(limit))
		budget = usableMemory(limit)
		if len(o.notices) != 2 || !strings.Contains(o.notices[1], "capped at") {
			t.Errorf("notices %q: want the cap notice", o.notices)
		}
	}
	if o.cfg.MemTableSize != maxMemTable || o.cfg.CacheSize != budget-4*maxMemTable {
		t.Errorf("memtable %d, cache %d: want %d and %d", o.cfg.MemTableSize, o.cfg.CacheSize, maxMemTable, budget-4*maxMemTable)
	}
	if o.cfg.Dir != "./lsmgo-data" || o.cfg.AppendFsync != "everysec" || o.cfg.HTTPAddr != "127.0.0.1:8080" {
		t.Errorf("defaults changed: %+v", o.cfg)
	}

	mode, rest, err = splitMode(strings.Fields("--mode=client --addr=localhost:9001 --concurrency=512 --duration=60s"))
	if err != nil || mode != "client" {
		t.Fatalf("splitMode: %q %v", mode, err)
	}
	c, err := bench.ParseClientFlags(rest, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "localhost:9001" || len(c.Levels) != 1 || c.Levels[0] != 512 || c.Duration != time.Minute ||
		c.Pipeline != 1 || c.ReadPercent != 50 || c.KeySize != 32 || c.ValueSize != 128 || c.Keyspace != 1_000_000 {
		t.Errorf("client config %+v", c)
	}
}

func TestServerFlags(t *testing.T) {
	parse := func(args string) serverOptions {
		t.Helper()
		o, err := parseServerFlags(strings.Fields(args), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return o
	}
	// A password or protected mode off keeps every interface; an explicit
	// host is left to the server's protected mode.
	for args, addr := range map[string]string{
		"--addr=:9001 --requirepass=pw":       ":9001",
		"--addr=:9001 --protected-mode=no":    ":9001",
		"--addr=0.0.0.0:9001":                 "0.0.0.0:9001",
		"--addr=[::1]:7000":                   "[::1]:7000",
		"--addr=127.0.0.1:0 --appendfsync=no": "127.0.0.1:0",
	} {
		if o := parse(args); o.cfg.Addr != addr || len(o.notices) != 0 {
			t.Errorf("%s: addr %q notices %q; want %q and none", args, o.cfg.Addr, o.notices, addr)
		}
	}
	if o := parse(""); o.cfg.MemTableSize != 0 || o.cfg.CacheSize != 0 || o.cfg.Addr != "127.0.0.1:9001" {
		t.Errorf("no --mem-size must leave the engine defaults: %+v", o.cfg)
	}
	if o := parse("--mem-size=64mb"); o.cfg.MemTableSize != 4<<20 || o.cfg.CacheSize != 48<<20 {
		t.Errorf("64mb: memtable %d cache %d", o.cfg.MemTableSize, o.cfg.CacheSize)
	}
	if limit, ok := machineMemory(); ok {
		o := parse("--mem-size=1000000000000000")
		if o.cfg.CacheSize+4*int64(o.cfg.MemTableSize) != usableMemory(limit) || len(o.notices) != 1 || !strings.Contains(o.notices[0], "capped") {
			t.Errorf("a petabyte budget on %d bytes: memtable %d cache %d notices %q", limit, o.cfg.MemTableSize, o.cfg.CacheSize, o.notices)
		}
	}
	for _, bad := range []string{"--mem-size=lots", "--mem-size=-1", "--mem-size=1mb", "--appendfsync=sometimes", "--protected-mode=maybe", "stray"} {
		if _, err := parseServerFlags(strings.Fields(bad), io.Discard); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"17179869184": 17179869184, "16gb": 16 << 30, "16GB": 16 << 30, "2g": 2e9, "512mb": 512 << 20,
		"1k": 1000, "1kb": 1024, "0": 0, "7b": 7,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "gb", "-5", "1.5gb", "99999999999gb"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q): no error", bad)
		}
	}
	if m, c := splitBudget(16 << 20); m != 1<<20 || c != 12<<20 || int64(lsmgo.DefaultMemTableStopWritesThreshold) != 4 {
		t.Errorf("splitBudget(16 MiB) = %d, %d", m, c)
	}
}

// lineWriter hands each write to a channel, so a test can wait for the
// server's "listening" line.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	select {
	case w.lines <- string(p):
	default:
	}
	return len(p), nil
}

// startBenchServer runs the server mode in this process on a loopback
// port and returns its address; cleanup stops it and checks it exited
// cleanly.
func startBenchServer(t *testing.T, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{lines: make(chan string, 4)}
	// The server logs from many goroutines; the test's own output takes
	// them safely and shows them when the test fails.
	logs := t.Output()
	args := append([]string{"--addr=127.0.0.1:0", "--http=", "--dir=" + t.TempDir(), "--mem-size=64mb", "--appendfsync=no"}, extra...)
	exit := make(chan int, 1)
	go func() { exit <- serveBench(ctx, func() {}, args, out, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-exit:
			if code != 0 {
				t.Errorf("server mode exited %d (its log is above)", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("server mode did not stop")
		}
	})
	select {
	case line := <-out.lines:
		m := regexp.MustCompile(`listening addr=(\S+) http= dir=\S+ memtable=4194304 cache=50331648`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("server mode said %q", line)
		}
		return m[1]
	case code := <-exit:
		t.Fatalf("server mode exited %d (its log is above)", code)
	case <-time.After(30 * time.Second):
		t.Fatal("server mode did not start")
	}
	return ""
}

// TestClientAgainstServerMode is the quick start in miniature: the server
// mode in process, the client mode against it for about a second per
// level. It checks that rows come out, never how fast.
func TestClientAgainstServerMode(t *testing.T) {
	addr := startBenchServer(t)
	outDir := t.TempDir()
	var stdout strings.Builder
	stderr := t.Output()
	args := []string{"--mode=client", "--addr=" + addr, "--gradient=2,8", "--duration=1s", "--keyspace=10000", "--out=" + outDir}
	start := time.Now()
	if code := runMain(args, &stdout, stderr); code != 0 {
		t.Fatalf("client mode exited %d (its stderr is above)\nstdout:\n%s", code, stdout.String())
	}
	t.Logf("two 1 s levels took %v\n%s", time.Since(start), stdout.String())
	for _, want := range []string{"server=lsmgo 7.2.0", "getset", "pipeline 1"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(outDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.ClientReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Target.Name != "lsmgo" || len(rep.Results) != 2 {
		t.Fatalf("report: target %+v, %d rows", rep.Target, len(rep.Results))
	}
	for i, r := range rep.Results {
		if r.Error != "" || r.Ops == 0 || r.Threads != []int{2, 8}[i] || r.P99Ns <= 0 || r.Seconds < 1 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	// The second level reads keys the first wrote.
	if rep.Results[1].Found == 0 {
		t.Errorf("no GET found a key: %+v", rep.Results[1])
	}
}

func TestClientModePassword(t *testing.T) {
	addr := startBenchServer(t, "--requirepass=sesame")
	base := []string{"--mode=client", "--addr=" + addr, "--concurrency=2", "--requests=200", "--pipeline=4"}
	var stdout, stderr strings.Builder
	if code := runMain(append(base, "--password=sesame"), &stdout, &stderr); code != 0 {
		t.Fatalf("with the password: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	// Without it the run stops before its first level.
	if code := runMain(base, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "NOAUTH Authentication required. (give --password)") {
		t.Errorf("without the password: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
