package server

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRedisDiffMonitor runs the real redis-cli's MONITOR against both
// servers while the same commands (quoting-heavy arguments, MULTI/EXEC,
// an admin command that is not fed) run on each, and compares the lines
// with the timestamp and client address masked.
func TestRedisDiffMonitor(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH")
	}
	redisSock := startRedis(t)
	s := startServer(t, nil)
	cmds := [][]string{
		{"SET", "k", "a\"b\\c"},
		{"GET", "k"},
		{"SET", "bin", "x\x01\t\r\n\xffy"},
		{"CONFIG", "GET", "maxclients"},
		{"MULTI"}, {"INCR", "n"}, {"EXEC"},
		{"EVAL", "return redis.call('incr', KEYS[1])", "1", "n"},
		{"DEL", "k", "bin", "n"},
		{"PING", "done"},
	}
	// The address is masked, but a script's "lua" is kept.
	mask := regexp.MustCompile(`^\d+\.\d{6} \[0 [^\]]+\] `)
	var got [2][]string
	for i, target := range [][]string{{"-h", "127.0.0.1", "-p", portOf(s.Addr().String())}, {"-s", redisSock}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		mon := exec.CommandContext(ctx, cli, append(target, "monitor")...)
		out, err := mon.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := mon.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "OK" {
			t.Fatalf("monitor did not start: %q", lines.Text())
		}
		network, addr := "tcp", s.Addr().String()
		if i == 1 {
			network, addr = "unix", redisSock
		}
		d := dialDiff(t, network, addr, 2)
		for _, c := range cmds {
			d.do(t, c...)
		}
		for lines.Scan() {
			l := lines.Text()
			if !mask.MatchString(l) {
				t.Fatalf("line %q is not MONITOR's format", l)
			}
			got[i] = append(got[i], mask.ReplaceAllStringFunc(l, func(m string) string {
				if strings.HasSuffix(m, " lua] ") {
					return "lua "
				}
				return ""
			}))
			if strings.Contains(l, `"done"`) {
				break
			}
		}
		cancel()
		mon.Wait()
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("MONITOR lines differ:\n lsmgo: %q\n redis: %q", got[0], got[1])
	}
}
