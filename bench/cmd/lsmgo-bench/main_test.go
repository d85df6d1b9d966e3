package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/bench"
)

func TestSplitMode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		mode string
		rest string
	}{
		{nil, "", ""},
		{[]string{"--num=5"}, "", "--num=5"},
		{[]string{"--mode=engine", "--num=5"}, "engine", "--num=5"},
		{[]string{"--num", "5", "-mode", "server"}, "server", "--num 5"},
		{[]string{"--mode", "client", "--", "--mode=x"}, "client", "-- --mode=x"},
		{[]string{"---mode=x"}, "", "---mode=x"},
	} {
		mode, rest, err := splitMode(tc.args)
		if err != nil || mode != tc.mode || strings.Join(rest, " ") != tc.rest {
			t.Errorf("splitMode(%q) = %q, %q, %v; want %q, %q", tc.args, mode, rest, err, tc.mode, tc.rest)
		}
	}
	for _, bad := range [][]string{{"--mode"}, {"--mode="}} {
		if _, _, err := splitMode(bad); err == nil {
			t.Errorf("splitMode(%q): no error", bad)
		}
	}
}

func TestUnknownMode(t *testing.T) {
	var stderr strings.Builder
	code := runMain([]string{"--mode=nosuch"}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `unknown mode "nosuch"`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	// The usage that follows lists every mode.
	for _, name := range []string{"engine", "server", "client"} {
		if !strings.Contains(stderr.String(), "--mode="+name) {
			t.Errorf("usage does not list %s:\n%s", name, stderr.String())
		}
	}
}

func TestEngineModeRejectsBadFlags(t *testing.T) {
	var stderr strings.Builder
	if code := runMain([]string{"--mode=engine", "--workloads=nosuch"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown workload") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := runMain([]string{"--help"}, io.Discard, &stderr); code != 0 || !strings.Contains(stderr.String(), "readwhilewriting") {
		t.Errorf("--help: exit %d, stderr %q", code, stderr.String())
	}
}

// TestHelp checks that every way of asking for help exits 0, and that help
// without --mode lists every mode, one line each, before the default mode's
// flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"modes"}, {"--num=5", "-help"}} {
		var stderr strings.Builder
		if code := runMain(args, io.Discard, &stderr); code != 0 {
			t.Errorf("%q: exit %d\n%s", args, code, stderr.String())
		}
		for _, name := range []string{"engine", "server", "client"} {
			if n := strings.Count(stderr.String(), "--mode="+name+" "); n != 1 {
				t.Errorf("%q: %d lines list --mode=%s:\n%s", args, n, name, stderr.String())
			}
		}
		if !strings.Contains(stderr.String(), "--mode=MODE --help") {
			t.Errorf("%q: does not say how to see a mode's flags:\n%s", args, stderr.String())
		}
	}
	for _, name := range []string{"engine", "server", "client"} {
		var stderr strings.Builder
		code := runMain([]string{"--mode=" + name, "--help"}, io.Discard, &stderr)
		if want := "Usage of lsmgo-bench --mode=" + name; code != 0 || !strings.Contains(stderr.String(), want) {
			t.Errorf("--mode=%s --help: exit %d, want 0 and %q:\n%s", name, code, want, stderr.String())
		}
	}
}

func TestMeasureExitStatus(t *testing.T) {
	ok := func() ([]bench.Result, error) { return []bench.Result{{}, {}}, nil }
	failedRow := func() ([]bench.Result, error) { return []bench.Result{{}, {Error: "boom"}}, nil }
	failedRun := func() ([]bench.Result, error) { return nil, errors.New("no server") }
	for _, tc := range []struct {
		name    string
		flagErr error
		run     func() ([]bench.Result, error)
		want    int
	}{
		{"ok", nil, ok, 0},
		{"help", flag.ErrHelp, failedRun, 0},
		{"bad flag", errors.New("bad"), ok, 2},
		{"failed row", nil, failedRow, 1},
		{"failed run", nil, failedRun, 1},
	} {
		if got := measure(io.Discard, tc.flagErr, tc.run); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
	var stderr strings.Builder
	if code := runMain([]string{"--mode=client", "--ratio=x"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), `--ratio "x"`) {
		t.Errorf("client --ratio=x: exit %d, stderr %q", code, stderr.String())
	}
}

func TestMain(m *testing.M) {
	// A test that runs the engine mode re-executes this binary as the
	// engine child.
	bench.RunChildIfRequested()
	os.Exit(m.Run())
}
