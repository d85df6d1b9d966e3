package main

import (
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

func TestUnknownAndPlannedModes(t *testing.T) {
	for _, tc := range []struct {
		arg, want string
	}{
		{"--mode=nosuch", `unknown mode "nosuch"`},
		{"--mode=server", "not implemented in this build"},
	} {
		if _, ok := modes[strings.TrimPrefix(tc.arg, "--mode=")]; ok {
			continue // a later build implements it
		}
		var stderr strings.Builder
		if code := runMain([]string{tc.arg}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q", tc.arg, code, stderr.String())
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

func TestMain(m *testing.M) {
	// A test that runs the engine mode re-executes this binary as the
	// engine child.
	bench.RunChildIfRequested()
	os.Exit(m.Run())
}
