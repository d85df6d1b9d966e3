package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// fakeServer is a minimal RESP server: GET, SET, AUTH and INFO over a map,
// enough to check what the load generator sends and counts without an
// engine. It records the largest number of commands one read delivered,
// to observe pipelining.
type fakeServer struct {
	t        *testing.T
	ln       net.Listener
	password string
	// failSets makes every SET answer an error reply.
	failSets bool
	// closeOnInfo makes INFO close the connection, as twemproxy does.
	closeOnInfo bool
	// hold, when set, delays every GET and SET reply until it is closed.
	hold <-chan struct{}

	mu       sync.Mutex
	data     map[string]string
	commands int64
	wg       sync.WaitGroup
}

func startFakeServer(t *testing.T, mutate func(*fakeServer)) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, data: map[string]string{}}
	if mutate != nil {
		mutate(s)
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(nc)
	}
}

func (s *fakeServer) serve(nc net.Conn) {
	defer s.wg.Done()
	defer nc.Close()
	go func() {
		// Unblock the read below when the test ends.
		<-s.t.Context().Done()
		nc.Close()
	}()
	rd := resp.NewReader(nc, resp.Limits{})
	w := resp.NewWriter(nc)
	authed := s.password == ""
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			return
		}
		cmd := strings.ToUpper(string(args[0]))
		if s.hold != nil && (cmd == "GET" || cmd == "SET") {
			select {
			case <-s.hold:
			case <-s.t.Context().Done():
				return
			}
		}
		s.mu.Lock()
		s.commands++
		switch {
		case cmd == "AUTH":
			if string(args[1]) == s.password {
				authed = true
				w.SimpleString("OK")
			} else {
				w.Error("WRONGPASS invalid username-password pair or user is disabled.")
			}
		case !authed:
			w.Error("NOAUTH Authentication required.")
		case cmd == "INFO" && s.closeOnInfo:
			s.mu.Unlock()
			return
		case cmd == "INFO":
			w.BulkString("# Server\r\nredis_version:7.0.99\r\nprocess_id:" + strconv.Itoa(os.Getpid()) + "\r\n")
		case cmd == "GET":
			if v, ok := s.data[string(args[1])]; ok {
				w.BulkString(v)
			} else {
				w.Null()
			}
		case cmd == "SET" && s.failSets:
			w.Error("ERR disk full")
		case cmd == "SET":
			s.data[string(args[1])] = string(args[2])
			w.SimpleString("OK")
		default:
			w.Error("ERR unknown command")
		}
		s.mu.Unlock()
		if rd.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

func testClientConfig(addr string) ClientConfig {
	c := DefaultClientConfig()
	c.Addr = addr
	c.Keyspace = 1000
	c.Progress = "off"
	c.Timeout = 5 * time.Second
	return c
}

func TestClientRequestsExactCount(t *testing.T) {
	srv := startFakeServer(t, nil)
	cfg := testClientConfig(srv.ln.Addr().String())
	cfg.Duration = 0
	cfg.Requests = 1001
	cfg.Pipeline = 7
	cfg.Levels = []int{3, 5}
	cfg.ReadPercent = 30
	var out strings.Builder
	rep, err := RunClient(cfg, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Target.Name != "redis" || rep.Target.Version != "7.0.99" || rep.Target.PID != 0 || !rep.Target.InProcess {
		t.Errorf("target %+v: want redis 7.0.99 without a pid (the fake runs in this process)", rep.Target)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d rows, want 2", len(rep.Results))
	}
	var writes int64
	for i, r := range rep.Results {
		if r.Error != "" || r.Ops != 1001 || r.Threads != cfg.Levels[i] || r.Workload != "getset" || r.Step != i {
			t.Errorf("row %d: %+v", i, r)
		}
		if r.P50Ns <= 0 || r.P99Ns < r.P50Ns || r.MaxNs < r.P999Ns || r.OpsPerSec <= 0 {
			t.Errorf("row %d latencies or rate missing: %+v", i, r)
		}
		writes += r.UserBytesWritten / int64(cfg.KeySize+cfg.ValueSize)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	// Per level: one AUTH-free INFO probe before the first, then exactly
	// the requested commands.
	if srv.commands != 1+2*1001 {
		t.Errorf("server saw %d commands, want %d", srv.commands, 1+2*1001)
	}
	// 30:70 of 2002 commands: the SET count is binomial around 1401.
	if writes < 1250 || writes > 1550 {
		t.Errorf("%d SETs of 2002 commands at 30:70", writes)
	}
	for k, v := range srv.data {
		if len(k) != cfg.KeySize || !strings.HasPrefix(k, keyPrefix) || len(v) != cfg.ValueSize {
			t.Fatalf("stored %q = %q: wrong key or value size", k, v)
		}
		if n, err := strconv.Atoi(k[len(keyPrefix):]); err != nil || n < 0 || int64(n) >= cfg.Keyspace {
			t.Fatalf("key %q outside the key space", k)
		}
	}
	if !strings.Contains(out.String(), "lsmgo-bench client mode: addr=") || strings.Count(out.String(), "getset") != 2 {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestClientBehindProxy loads a server that, like twemproxy, closes the
// connection on INFO: the target is unknown and the load runs.
func TestClientBehindProxy(t *testing.T) {
	srv := startFakeServer(t, func(s *fakeServer) { s.closeOnInfo = true })
	cfg := testClientConfig(srv.ln.Addr().String())
	cfg.Duration, cfg.Requests = 0, 200
	rep, err := RunClient(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Target.Name != "unknown" || rep.Results[0].Error != "" || rep.Results[0].Ops != 200 {
		t.Errorf("target %+v, row %+v", rep.Target, rep.Results[0])
	}
}

func TestClientHitsAfterFill(t *testing.T) {
	srv := startFakeServer(t, nil)
	cfg := testClientConfig(srv.ln.Addr().String())
	cfg.Keyspace = 50
	cfg.KeySize = 8
	cfg.Duration = 0
	cfg.Requests = 2000
	cfg.Levels = []int{2}
	cfg.ReadPercent = 0
	rep, err := RunClient(cfg, io.Discard, io.Discard)
	if err != nil || rep.Results[0].Error != "" || rep.Results[0].Workload != "set" {
		t.Fatalf("fill: %v %+v", err, rep.Results)
	}
	// 2000 uniform SETs over 50 keys miss one with probability ~1e-17.
	if len(srv.data) != 50 {
		t.Fatalf("%d keys after the fill, want 50", len(srv.data))
	}
	cfg.ReadPercent = 100
	cfg.Distribution = Zipfian
	rep, err = RunClient(cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Error != "" || r.Workload != "get" || r.Found != 2000 || r.UserBytesWritten != 0 || !strings.Contains(r.Note, "GET hits 100%") {
		t.Errorf("read row: %+v", r)
	}
	// Every GET moved its key and the value it found.
	if want := float64(2000*(8+128)) / (1 << 20) / r.Seconds; fmt.Sprintf("%.6f", r.MBPerSec) != fmt.Sprintf("%.6f", want) {
		t.Errorf("MB/s %v, want %v", r.MBPerSec, want)
	}
}

// progressWatch is a stderr that closes seen once a progress line is
// written.
type progressWatch struct {
	mu   sync.Mutex
	buf  strings.Builder
	seen chan struct{}
}

func (w *progressWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), " ops/s now") {
		select {
		case <-w.seen:
		default:
			close(w.seen)
		}
	}
	return len(p), nil
}

func (w *progressWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestClientDurationAndFiles(t *testing.T) {
	// The server answers no GET or SET before the first progress line,
	// so the level outlasts the ticker however late it fires: a 1.2 s
	// level alone could end first on a starved machine.
	stderr := &progressWatch{seen: make(chan struct{})}
	srv := startFakeServer(t, func(s *fakeServer) { s.hold = stderr.seen })
	cfg := testClientConfig(srv.ln.Addr().String())
	cfg.Duration = 1200 * time.Millisecond
	cfg.Levels = []int{4}
	cfg.Pipeline = 4
	cfg.Progress = "on"
	cfg.OutDir = t.TempDir()
	start := time.Now()
	rep, err := RunClient(cfg, io.Discard, stderr)
	if err != nil {
		t.Fatal(err)
	}
	// Generous for a loaded machine; a level that ignored its duration
	// would never end.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("a 1.2 s level took %v", took)
	}
	r := rep.Results[0]
	if r.Error != "" || r.Ops == 0 || r.Ops%4 != 0 || r.Seconds < 1.2 {
		t.Errorf("row %+v: want commands in whole batches of 4 over at least 1.2 s", r)
	}
	if !regexp.MustCompile(`(?m)^  \[redis c=4\] +[0-9]+s: `).MatchString(stderr.String()) {
		t.Errorf("no progress line:\n%s", stderr.String())
	}
	for _, f := range []string{"results.json", "results.csv", "results.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(cfg.OutDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back ClientReport
	if err := json.Unmarshal(b, &back); err != nil || len(back.Results) != 1 || back.Results[0].Ops != r.Ops || back.Config.Pipeline != 4 {
		t.Errorf("results.json: %v %+v", err, back)
	}
	csv, _ := os.ReadFile(filepath.Join(cfg.OutDir, "results.csv"))
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], strings.Join(csvHeader[:4], ",")) {
		t.Errorf("results.csv:\n%s", csv)
	}
}

func TestClientFailures(t *testing.T) {
	t.Run("password", func(t *testing.T) {
		srv := startFakeServer(t, func(s *fakeServer) { s.password = "sesame" })
		cfg := testClientConfig(srv.ln.Addr().String())
		cfg.Password = "wrong"
		if _, err := RunClient(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("wrong password: %v", err)
		}
		cfg.Password = ""
		if _, err := RunClient(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("no password: %v", err)
		}
		cfg.Password = "sesame"
		cfg.Duration, cfg.Requests = 0, 100
		rep, err := RunClient(cfg, io.Discard, io.Discard)
		if err != nil || rep.Results[0].Error != "" || rep.Results[0].Ops != 100 {
			t.Errorf("right password: %v %+v", err, rep)
		}
	})
	t.Run("error replies", func(t *testing.T) {
		srv := startFakeServer(t, func(s *fakeServer) { s.failSets = true })
		cfg := testClientConfig(srv.ln.Addr().String())
		cfg.Duration, cfg.Requests = 0, 100
		rep, err := RunClient(cfg, io.Discard, io.Discard)
		if err != nil || !strings.Contains(rep.Results[0].Error, "error replies, first: ERR disk full") {
			t.Errorf("%v %+v", err, rep.Results)
		}
	})
	t.Run("server gone", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if _, err := RunClient(testClientConfig(addr), io.Discard, io.Discard); err == nil {
			t.Error("no error from a closed port")
		}
	})
	t.Run("server stops answering", func(t *testing.T) {
		// A listener whose connections are accepted by the kernel and
		// never read: the probe must time out rather than hang.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		cfg := testClientConfig(ln.Addr().String())
		cfg.Timeout = 200 * time.Millisecond
		start := time.Now()
		_, err = RunClient(cfg, io.Discard, io.Discard)
		var ne net.Error
		// A hang is what this guards against; 20 s leaves a loaded
		// machine ample room past the 200 ms timeout.
		if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > 20*time.Second {
			t.Errorf("err %v after %v; want a timeout", err, time.Since(start))
		}
	})
}

func TestParseClientFlags(t *testing.T) {
	c, err := ParseClientFlags([]string{"--addr=localhost:9001", "--concurrency=512", "--duration=60s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultClientConfig()
	want.Duration = 60 * time.Second
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("quick start flags:\n got %+v\nwant %+v", c, want)
	}
	c, err = ParseClientFlags(strings.Fields("--gradient 10,100,500,1000 --concurrency 3 --pipeline 16 --ratio 9:1 --distribution zipfian --requests 5000 --key-size 12 --value-size 64 --keyspace 1000 --password pw"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Levels) != "[10 100 500 1000]" || c.Pipeline != 16 || c.ReadPercent != 90 || c.Distribution != Zipfian ||
		c.Requests != 5000 || c.Duration != 0 || c.KeySize != 12 || c.ValueSize != 64 || c.Keyspace != 1000 || c.Password != "pw" {
		t.Errorf("parsed %+v", c)
	}
	c, err = ParseClientFlags([]string{"--requests=10", "--duration=2s"}, io.Discard)
	if err != nil || c.Requests != 10 || c.Duration != 2*time.Second {
		t.Errorf("--requests with --duration: %v %+v", err, c)
	}
	for _, bad := range [][]string{
		{"--concurrency=0"}, {"--gradient=10,x"}, {"--gradient=,"}, {"--pipeline=0"}, {"--ratio=5"},
		{"--distribution=normal"}, {"--key-size=9"}, {"--keyspace=0"}, {"--value-size=0"},
		{"--duration=0"}, {"--requests=-1"}, {"--progress=auto"}, {"--addr="}, {"extra"},
	} {
		if _, err := ParseClientFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := ParseClientFlags([]string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

func TestClientKeys(t *testing.T) {
	cfg := testClientConfig("x:1")
	cfg.KeySize = 10
	cfg.Keyspace = 1_000_000
	if err := cfg.validate(); err != nil {
		t.Fatalf("10-byte keys hold key: and 6 digits: %v", err)
	}
	l := newLoad(&cfg)
	c := l.newClientConn(0, nil, nil)
	for _, tc := range []struct {
		i    uint64
		want string
	}{{0, "key:000000"}, {42, "key:000042"}, {999_999, "key:999999"}} {
		c.putIndex(tc.i)
		if string(c.key) != tc.want {
			t.Errorf("putIndex(%d) = %q, want %q", tc.i, c.key, tc.want)
		}
	}
	cfg.KeySize = 9
	if err := cfg.validate(); err == nil {
		t.Error("9-byte keys cannot hold 999999")
	}
}

func TestClaim(t *testing.T) {
	cfg := testClientConfig("x:1")
	cfg.Pipeline = 4
	cfg.Requests = 10
	lv := &level{l: &load{cfg: &cfg}}
	lv.budget.Store(cfg.Requests)
	var got []int
	for n := lv.claim(); n > 0; n = lv.claim() {
		got = append(got, n)
	}
	if fmt.Sprint(got) != "[4 4 2]" {
		t.Errorf("claims %v, want [4 4 2]", got)
	}
	cfg.Requests = 0
	lv = &level{l: &load{cfg: &cfg}}
	if n := lv.claim(); n != 4 {
		t.Errorf("unbounded claim %d", n)
	}
	lv.stop.Store(true)
	if n := lv.claim(); n != 0 {
		t.Errorf("claim after stop %d", n)
	}
}

func TestProcCPUSeconds(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn 30 ms of CPU time, not of wall time, which a loaded machine
	// may not turn into any CPU: /proc counts in 10 ms ticks.
	for start := cpuSeconds(); cpuSeconds() < start+0.03; {
	}
	s, ok := procCPUSeconds(os.Getpid())
	if !ok || s <= 0 || s > cpuSeconds()+0.1 {
		t.Errorf("procCPUSeconds = %v, %v; getrusage says %v", s, ok, cpuSeconds())
	}
	if procPeakRSS(os.Getpid()) <= 0 {
		t.Error("no VmHWM")
	}
	if _, ok := procCPUSeconds(1 << 30); ok {
		t.Error("a pid that cannot exist has a CPU time")
	}
}
