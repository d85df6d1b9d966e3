package main

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeShutdownCommand: the real redis-cli's `shutdown`, and go-redis'
// Shutdown and ShutdownNoSave, stop lsmgo serve cleanly: the client sees
// the connection close without a reply (redis-cli prints nothing and
// exits 0), the process exits 0 having flushed and closed the engine, and
// the data is there after a restart.
func TestServeShutdownCommand(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH")
	}
	dir := t.TempDir()
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", ""}
	ctx := context.Background()
	for i, shutdown := range []func(srv *child) error{
		func(srv *child) error {
			host, port, _ := net.SplitHostPort(srv.addr)
			out, err := exec.Command(cli, "-h", host, "-p", port, "shutdown").CombinedOutput()
			if err != nil || len(out) != 0 {
				t.Errorf("redis-cli shutdown: %v, output %q; want status 0 and no output", err, out)
			}
			return nil
		},
		func(srv *child) error { return srv.client(t).Shutdown(ctx).Err() },
		func(srv *child) error { return srv.client(t).ShutdownNoSave(ctx).Err() },
	} {
		srv := startChild(t, args...)
		rc := srv.client(t)
		if i > 0 {
			if v := rc.Get(ctx, "k").Val(); v != "v" {
				t.Errorf("shutdown %d: after the restart k = %q, want v", i, v)
			}
		}
		if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := shutdown(srv); err != nil {
			t.Errorf("shutdown %d: %v, want the connection closed without a reply", i, err)
		}
		select {
		case <-srv.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("shutdown %d: the server did not stop", i)
		}
		if srv.err != nil {
			t.Fatalf("shutdown %d: exit %v; stderr:\n%s", i, srv.err, srv.stderr)
		}
		for _, want := range []string{"SHUTDOWN received; shutting down", "lsmgo server stopped"} {
			if !strings.Contains(srv.stderr.String(), want) {
				t.Errorf("shutdown %d: stderr lacks %q:\n%s", i, want, srv.stderr)
			}
		}
	}
}
