package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// eventLoopTests runs every test server with "event-loop yes":
// LSMGO_EVENT_LOOP=yes go test ./server/ (CI does, for some tests).
var eventLoopTests = os.Getenv("LSMGO_EVENT_LOOP") == "yes"

// startServer starts a server on loopback port 0 with its data in a fresh
// temporary directory; mutate adjusts the configuration first. Cleanup
// shuts it down.
func startServer(t testing.TB, mutate func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Dir = t.TempDir()
	cfg.AppendFsync = "no"
	cfg.EventLoop = eventLoopTests
	log := &testLog{t: t}
	t.Cleanup(log.stop) // runs after the Shutdown registered below
	cfg.LogOutput = log
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// testLog sends server logs to the test log, and drops them once the test
// has finished (background goroutines may log during cleanup).
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("server: %s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// newClient returns a go-redis client for s speaking protocol proto.
func newClient(t testing.TB, s *Server, proto int, mutate func(*redis.Options)) *redis.Client {
	t.Helper()
	opts := &redis.Options{
		Addr:         s.Addr().String(),
		Protocol:     proto,
		DialTimeout:  5 * time.Second,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		MaxRetries:   -1,
		// The server does not implement Redis Enterprise's maintenance
		// notifications; don't let the client probe for them.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if mutate != nil {
		mutate(opts)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a plain TCP connection for exact-bytes protocol tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// reply reads one complete reply and returns its raw bytes.
func (r *rawConn) reply() string {
	r.t.Helper()
	s, err := readRawReply(r.br)
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	return s
}

func readRawReply(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return line, err
	}
	var n int
	switch line[0] {
	case '$', '=', '!':
		if _, err := fmt.Sscanf(line[1:], "%d", &n); err != nil || n < 0 {
			return line, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return line, err
		}
		return line + string(buf), nil
	case '*', '~', '>', '%':
		if _, err := fmt.Sscanf(line[1:], "%d", &n); err != nil {
			return line, err
		}
		if line[0] == '%' {
			n *= 2
		}
		out := line
		for range n {
			s, err := readRawReply(br)
			out += s
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return line, nil
}

// expectClosed checks that the server closes the connection, after
// possibly sending the given reply first.
func (r *rawConn) expectClosed(wantReply string) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(r.br)
	if err != nil {
		r.t.Fatalf("expected a clean close, got %v after %q", err, rest)
	}
	if string(rest) != wantReply {
		r.t.Fatalf("before close got %q, want %q", rest, wantReply)
	}
}

func eq(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %#v, want %#v", what, got, want)
	}
}

// do runs a command with go-redis and returns its value and error text.
func do(ctx context.Context, c *redis.Client, args ...any) (any, string) {
	v, err := c.Do(ctx, args...).Result()
	if err != nil && err != redis.Nil {
		return v, err.Error()
	}
	return v, ""
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0)) }

// keysIn returns the distinct keys among ks that model holds.
func keysIn(model map[string]string, ks ...string) []string {
	var out []string
	for _, k := range ks {
		if _, ok := model[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 10*time.Second, what, cond)
}

// waitForWithin is waitFor failing after d.
func waitForWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
