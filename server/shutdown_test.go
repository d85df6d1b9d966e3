package server

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestGracefulShutdown shuts the server down while a client's pipeline is
// in flight: every command the server executed gets its reply before the
// close, and every acknowledged write is there after a restart.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Addr, cfg.HTTPAddr, cfg.Dir = "127.0.0.1:0", "127.0.0.1:0", dir
	cfg.LogOutput = io.Discard
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	idle := dialRaw(t, s)
	r := dialRaw(t, s)
	const n = 20000
	var req strings.Builder
	for i := range n {
		fmt.Fprintf(&req, "SET key%d %d\r\n", i, i)
	}
	go io.WriteString(r.nc, req.String()) // fails once the server closes; that is expected
	// Wait for the first reply so the server is mid-pipeline.
	first, err := r.br.ReadString('\n')
	if err != nil || first != "+OK\r\n" {
		t.Fatalf("first reply %q, %v", first, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	acked := 1
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			break
		}
		if line != "+OK\r\n" {
			t.Fatalf("reply %d = %q", acked, line)
		}
		acked++
	}
	idle.expectClosed("")
	t.Logf("%d of %d SETs acknowledged before shutdown", acked, n)
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}

	cfg.Addr, cfg.HTTPAddr = "127.0.0.1:0", ""
	s2, err := Start(cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer s2.Shutdown(context.Background())
	c := newClient(t, s2, 2, nil)
	for i := range acked {
		if v, err := c.Get(context.Background(), fmt.Sprintf("key%d", i)).Result(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("acknowledged key%d = %q, %v after restart", i, v, err)
		}
	}
}
