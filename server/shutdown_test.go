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
	cfg.EventLoop = eventLoopTests
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

// TestShutdownDeadlineSlowReaders holds 50 clients that pipeline GETs of a
// large value and never read their replies, so every connection is stuck
// in a write with more commands buffered behind it. Shutdown must still
// return soon after the configured shutdown-timeout: the stuck clients are
// cut off and their pending pipelines dropped, not executed.
func TestShutdownDeadlineSlowReaders(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s := startServer(t, func(c *Config) { c.ShutdownTimeout = timeout })
	c := newClient(t, s, 2, nil)
	big := strings.Repeat("v", 256<<10)
	if err := c.Set(context.Background(), "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var pipeline strings.Builder
	for range 2000 {
		pipeline.WriteString("GET big\r\n")
	}
	for range 50 {
		r := dialRaw(t, s)
		go io.WriteString(r.nc, pipeline.String()) // fails once the server cuts the client off
	}
	// Wait until the clients are stuck: replies fill the socket buffers.
	waitFor(t, "slow readers stuck", func() bool { return s.clientCount() >= 51 })
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	// The caller's context allows far more than shutdown-timeout: the
	// setting is the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Generous slack for a loaded CI machine: without the deadline this
	// takes tens of seconds (every buffered GET is still executed).
	if took := time.Since(start); took > timeout+10*time.Second {
		t.Fatalf("Shutdown took %v with shutdown-timeout %v", took, timeout)
	}
}

// TestShutdownCommand: SHUTDOWN's refusals, as Redis 7.2 words them, and
// SHUTDOWN NOSAVE stopping a script past busy-reply-threshold (its write
// dropped) and the server.
func TestShutdownCommand(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.BusyReplyThreshold = 50 * time.Millisecond })
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	runSteps(t, c, []step{
		{args: []any{"SHUTDOWN", "ABORT"}, err: "ERR No shutdown in progress."},
		{args: []any{"SHUTDOWN", "ABORT", "NOW"}, err: "ERR syntax error"},
		{args: []any{"SHUTDOWN", "NOSAVE", "SAVE"}, err: "ERR syntax error"},
		{args: []any{"SHUTDOWN", "LATER"}, err: "ERR syntax error"},
		{args: []any{"EVAL", "redis.call('shutdown')", "0"}, err: "ERR This Redis command is not allowed from script script: cdb5184be0f53f08a17009f409630498804bd128, on @user_script:1."},
	})
	r := dialRaw(t, s)
	r.send("MULTI\r\nSHUTDOWN\r\nEXEC\r\n")
	for _, want := range []string{"+OK\r\n", "-ERR Command not allowed inside a transaction\r\n", "-EXECABORT Transaction discarded because of previous errors.\r\n"} {
		eq(t, "SHUTDOWN in MULTI", r.reply(), want)
	}

	script := newClient(t, s, 2, nil)
	done := make(chan error, 1)
	go func() {
		done <- script.Eval(ctx, "redis.call('set', 'w', 1) while true do end", nil).Err()
	}()
	waitFor(t, "BUSY", func() bool {
		err := c.Get(ctx, "x").Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY ")
	})
	eq(t, "SHUTDOWN during a script", c.Shutdown(ctx).Err().Error(), msgBusyScript)
	if err := c.ShutdownNoSave(ctx).Err(); err != nil {
		t.Fatalf("SHUTDOWN NOSAVE during a script: %v", err)
	}
	select {
	case <-s.ShutdownAsked():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not start the shutdown")
	}
	if err := <-done; err == nil {
		t.Error("the script stopped by SHUTDOWN NOSAVE answered no error")
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after SHUTDOWN: %v", err)
	}
	s = startServer(t, func(c *Config) { c.Dir = dir })
	eq(t, "the stopped script's write", newClient(t, s, 2, nil).Exists(ctx, "w").Val(), int64(0))
}
