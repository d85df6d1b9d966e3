package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestHTTPEndpoints(t *testing.T) {
	s := startServer(t, func(c *Config) { c.AdminToken = "tok"; c.Images = false }) // loopback trust holds only without the image host
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	c.Get(ctx, "k")
	c.Do(ctx, "NOPE")
	c.Incr(ctx, "k")
	base := "http://" + s.HTTPAddr()

	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`lsmgo_commands_total{cmd="set"} 1`,
		`lsmgo_commands_total{cmd="get"} 1`,
		`lsmgo_command_errors_total{cmd="incr"} 1`,
		`lsmgo_command_duration_seconds_bucket{cmd="get",le=`,
		`lsmgo_unknown_commands_total 1`,
		`lsmgo_connected_clients 1`,
		`lsmgo_engine_level_files{level="0"}`,
		`lsmgo_engine_wal_bytes_total`,
		`lsmgo_engine_read_only 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := httpGet(t, base+"/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ from loopback: %d", code)
	}
	if code, body := httpGet(t, base+"/debug/vars"); code != 200 || !strings.Contains(body, "memstats") {
		t.Errorf("/debug/vars from loopback: %d", code)
	}

	// Remote clients need the admin token.
	h := s.httpHandler()
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 403}, {"Bearer wrong", 403}, {"tok", 403}, {"Bearer tok", 200}} {
		req := httptest.NewRequest("GET", "/debug/pprof/", nil)
		req.RemoteAddr = "203.0.113.7:4321"
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("remote /debug/pprof/ with %q: %d, want %d", tc.auth, rec.Code, tc.want)
		}
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.RemoteAddr = "203.0.113.7:4321"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("remote /metrics: %d", rec.Code)
	}
}

func TestHTTPDisabled(t *testing.T) {
	s := startServer(t, func(c *Config) { c.HTTPAddr = "" })
	if s.HTTPAddr() != "" {
		t.Errorf("HTTPAddr = %q", s.HTTPAddr())
	}
	checkAlive(t, s)
}

// TestReadOnlyEngine makes the WAL fail: writes get MISCONF, reads keep
// working, /healthz turns 503 and INFO reports the failure.
func TestReadOnlyEngine(t *testing.T) {
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpWrite, errorfs.OpSync}, ".log")
	cfg := DefaultConfig()
	cfg.Addr, cfg.HTTPAddr, cfg.Dir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.LogOutput = io.Discard
	cfg.FS = errorfs.Wrap(vfs.Default, toggle)
	cfg.EventLoop = eventLoopTests
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	err = c.Set(ctx, "k2", "v", 0).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Errorf("SET on a failing WAL: %v", err)
	}
	if err := c.Incr(ctx, "n").Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Errorf("INCR on a read-only engine: %v", err)
	}
	eq(t, "reads keep working", c.Get(ctx, "k").Val(), "v")
	if code, _ := httpGet(t, "http://"+s.HTTPAddr()+"/healthz"); code != 503 {
		t.Errorf("/healthz on a read-only engine: %d", code)
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_last_write_status:err") {
		t.Errorf("INFO persistence: %q", info)
	}
	if err := s.Shutdown(ctx); err == nil {
		t.Error("Shutdown of a read-only engine reported no error")
	}
}
