package main

import (
	"regexp"
	"runtime"
	"testing"
)

// TestVersion checks both spellings print one line with the version and
// commit; a test binary records neither, so both are "(devel)".
func TestVersion(t *testing.T) {
	want := regexp.MustCompile(`^lsmgo version \(devel\) commit \(devel\) ` + regexp.QuoteMeta(runtime.Version()) + ` \S+/\S+\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		status, out, errOut := run(args...)
		if status != 0 || !want.MatchString(out) || errOut != "" {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, status, out, errOut)
		}
	}
}
