package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/lsmgo-dev/lsmgo/server"
)

func init() {
	commands["version"] = command{
		summary: "print the version and commit this binary was built from",
		run:     runVersion,
	}
}

// runVersion implements `lsmgo version` (and `lsmgo --version`): one line
// with the module version, the VCS commit, and the Go release and
// platform, for bug reports.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("version", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo version")
		fmt.Fprintln(fl.Output(), "Prints the version and VCS commit from the build information; (devel) when not recorded.")
	}
	if code, done := parseFlags(fl, stdout, stderr, func() error {
		if err := fl.Parse(args); err != nil {
			return err
		}
		if fl.NArg() != 0 {
			return errUsage
		}
		return nil
	}); done {
		return code
	}
	b := server.BuildInfo()
	fmt.Fprintf(stdout, "lsmgo version %s commit %s %s %s/%s\n", b.Version, b.Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
