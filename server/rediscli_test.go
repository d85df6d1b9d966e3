package server

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRedisCLI drives the real redis-cli (Debian's redis-tools, which CI
// installs) against the server: one-shot commands, RESP3, the interactive
// REPL fed from a pipe (it loads COMMAND DOCS for its help), --scan and
// --pipe mass insertion.
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH")
	}
	s := startServer(t, func(c *Config) { c.RequirePass = "pw" })
	host, port := "127.0.0.1", portOf(s.Addr().String())
	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port, "-a", "pw", "--no-auth-warning"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	eq(t, "SET", run("", "SET", "greeting", "hello world"), "OK\n")
	eq(t, "GET", run("", "GET", "greeting"), "hello world\n")
	eq(t, "INCR", run("", "INCR", "n"), "1\n")
	if out := run("", "INCR", "greeting"); !strings.HasPrefix(out, "ERR value is not an integer or out of range\n") {
		t.Errorf("error reply: %q", out)
	}
	if out := run("", "-3", "HELLO"); !strings.Contains(out, "proto 3\n") {
		t.Errorf("HELLO over RESP3: %q", out)
	}
	if out := run("", "INFO", "keyspace"); !strings.Contains(out, "db0:keys=2,expires=0") {
		t.Errorf("INFO keyspace: %q", out)
	}

	out := run("SET a 1\nGET a\nHELP SET\nDBSIZE\n")
	for _, want := range []string{"OK\n1\n", "Sets the string value of a key", "\n3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("REPL output lacks %q:\n%s", want, out)
		}
	}

	var mass strings.Builder
	for i := range 1000 {
		mass.WriteString("SET mass:" + strconv.Itoa(i) + " " + strconv.Itoa(i) + "\r\n")
	}
	if out := run(mass.String(), "--pipe"); !strings.Contains(out, "errors: 0, replies: 1000") {
		t.Errorf("--pipe: %q", out)
	}
	scanned := strings.Fields(run("", "--scan", "--pattern", "mass:*"))
	if len(scanned) != 1000 {
		t.Errorf("--scan found %d keys", len(scanned))
	}
}
