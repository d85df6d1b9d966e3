package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// suiteResult is what one unit of Redis' test suite reported.
type suiteResult struct {
	passed, failed, skipped []string          // test names, in the order they ran
	why                     map[string]string // a failed test's first detail line
	aborted                 string            // why the unit stopped early; "" when it ran to its end
	elapsed                 time.Duration
}

// failedSet is the names of the failed tests.
func (r suiteResult) failedSet() map[string]bool { return nameSet(r.failed) }

func nameSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	// runtest's status lines: "[ok]: NAME (N ms)", "[err]: NAME in
	// tests/unit/x.tcl" (the failure's detail follows on later lines),
	// "[skip]: NAME", "[ignore]: NAME: why" and "[exception]: ...".
	// Skipped tests are only counted, so "why" stays in their name.
	okLine   = regexp.MustCompile(`^\[ok\]: (.*) \(\d+ ms\)$`)
	errLine  = regexp.MustCompile(`^\[err\]: (.*) in tests/\S+\.tcl$`)
	skipLine = regexp.MustCompile(`^\[(?:skip|ignore)\]: (.*)$`)
	doneLine = regexp.MustCompile(`^\[\d+/\d+ done\]: `)
)

// parseSuiteLog reads a runtest log of one unit. A unit that printed no
// "done" line stopped early: the exception, or the log's last lines, say why.
func parseSuiteLog(log string) suiteResult {
	r := suiteResult{why: map[string]string{}}
	lines := strings.Split(ansiEscape.ReplaceAllString(log, ""), "\n")
	done := false
	for i, l := range lines {
		switch {
		case okLine.MatchString(l):
			r.passed = append(r.passed, okLine.FindStringSubmatch(l)[1])
		case errLine.MatchString(l):
			name := errLine.FindStringSubmatch(l)[1]
			r.failed = append(r.failed, name)
			if i+1 < len(lines) {
				r.why[name] = oneLine(lines[i+1])
			}
		case skipLine.MatchString(l):
			r.skipped = append(r.skipped, skipLine.FindStringSubmatch(l)[1])
		case strings.HasPrefix(l, "[err]: ") && r.aborted == "":
			// With --durable, an error outside any test skips the rest of
			// its start_server block and reports "[err]: " and the error
			// (its first ten bytes cut) without a test name.
			r.aborted = "a server block stopped: " + oneLine(strings.Join(lines[i+1:min(i+2, len(lines))], " "))
		case strings.HasPrefix(l, "[exception]: ") && r.aborted == "":
			r.aborted = oneLine(strings.Join(lines[i:min(i+3, len(lines))], " "))
		case doneLine.MatchString(l):
			done = true
		}
	}
	if r.aborted == "" && !done {
		r.aborted = "no done line; log ends: " + oneLine(strings.Join(lines[max(0, len(lines)-4):], " "))
	}
	return r
}

// oneLine squeezes s onto one line of at most 200 bytes, for the list file.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// suiteBasePort picks runtest's --baseport. runtest listens on a port
// among the 32 below it, after checking that port and the one 10000 above
// it are free, so the whole span must lie below the kernel's ephemeral
// range: inside it, an outgoing connection (the test's own, to the server)
// can take the port between runtest's check and its listen, which stops
// the unit before its first test. A random base keeps concurrent runs of
// other packages apart; runtest moves on from a busy port by itself.
func suiteBasePort(t *testing.T) int {
	t.Helper()
	ephemeralLow := testutil.EphemeralLow()
	const lowest = 1024 + 32
	highest := ephemeralLow - 10000 - 64 // the span runtest may use above the base
	if highest <= lowest {
		t.Skipf("the ephemeral port range starts at %d: no room below it for runtest's ports", ephemeralLow)
	}
	return lowest + rand.IntN(highest-lowest)
}

// runSuiteUnit runs one unit with run-external.sh against addr and parses
// its log. The runner and what it starts get their own process group,
// killed by its ID when the unit outlasts timeout.
func runSuiteUnit(t *testing.T, suite, addr, unit string, timeout time.Duration) suiteResult {
	t.Helper()
	logDir := t.TempDir()
	base := suiteBasePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(suite, "run-external.sh"), suite, addr,
		"--durable", "--baseport", fmt.Sprint(base), "--portcount", "64")
	cmd.Env = append(os.Environ(), "UNITS="+unit, "LOGDIR="+logDir,
		fmt.Sprintf("UNIT_TIMEOUT=%d", int(timeout.Seconds())))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	log, readErr := os.ReadFile(filepath.Join(logDir, strings.ReplaceAll(unit, "/", "_")+".log"))
	r := parseSuiteLog(string(log))
	r.elapsed = elapsed
	switch {
	case ctx.Err() != nil:
		r.aborted = fmt.Sprintf("killed after %s", elapsed.Round(time.Second))
	case readErr != nil:
		r.aborted = oneLine(fmt.Sprintf("no log (%v): %v %s", readErr, err, out))
	case r.aborted == "" && strings.Contains(string(out), " TIMEOUT after "):
		r.aborted = fmt.Sprintf("timed out after %s", timeout)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: run-external.sh: %v\n%s", unit, err, out)
	}
	return r
}

// startReferenceRedis starts redis-server on a free loopback port with
// DEBUG enabled and nothing saved, as the suite's README asks for the
// reference run, again on another port if that one was taken before
// redis-server bound it. Cleanup kills it by PID.
func startReferenceRedis(t *testing.T, bin string) string {
	t.Helper()
	return testutil.StartRetrying(t, "redis-server", func() (string, error) { return tryStartReferenceRedis(t, bin) })
}

// tryStartReferenceRedis is one try of startReferenceRedis. It fails with
// the output of a redis-server that exited before it was ready.
func tryStartReferenceRedis(t *testing.T, bin string) (string, error) {
	t.Helper()
	port := strconv.Itoa(testutil.FreePort(t))
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", t.TempDir(),
		"--save", "", "--appendonly", "no", "--enable-debug-command", "yes")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	out := &testutil.SyncBuffer{}
	// The scan ends when redis-server exits, after which cmd.Wait reaps it.
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- true
			}
		}
	}()
	exited := make(chan struct{})
	go func() {
		<-scanned
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // only this redis-server's PID
		<-exited
	})
	select {
	case <-ready:
	case <-exited:
		return "", fmt.Errorf("redis-server exited at start:\n%s", out)
	case <-time.After(10 * time.Second):
		t.Fatalf("redis-server did not start on port %s:\n%s", port, out)
	}
	return "127.0.0.1:" + port, nil
}
