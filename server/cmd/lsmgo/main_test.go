package main

import (
	"strings"
	"testing"
)

// TestHelpConventions checks that every way of asking for help, for the
// binary and for each subcommand, prints the usage to stdout and exits 0,
// and that usage errors still exit 2 with the usage on stderr.
func TestHelpConventions(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}} {
		status, out, errOut := run(args...)
		if status != 0 || !strings.HasPrefix(out, "usage: lsmgo <command>") || errOut != "" {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, status, out, errOut)
		}
		for name := range commands {
			if !strings.Contains(out, "  "+name+" ") {
				t.Errorf("%q: usage does not list %s:\n%s", args, name, out)
			}
		}
	}
	for name := range commands {
		for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}} {
			status, out, errOut := run(args...)
			if status != 0 || !strings.HasPrefix(out, "usage: lsmgo "+name) || errOut != "" {
				t.Errorf("%q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, status, out, errOut)
			}
		}
	}
	for _, args := range [][]string{{}, {"nope"}, {"help", "nope"}, {"version", "extra"}, {"serve", "--nope"}} {
		if status, _, errOut := run(args...); status != 2 || !strings.Contains(errOut, "usage: lsmgo") {
			t.Errorf("%q: status %d, stderr %q; want 2 and the usage on stderr", args, status, errOut)
		}
	}
}
