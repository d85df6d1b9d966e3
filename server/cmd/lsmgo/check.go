package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo"
)

func init() {
	commands["check"] = command{
		summary: "verify every checksum, the manifest and the WALs of a DB directory",
		run:     runCheck,
	}
}

// runCheck implements `lsmgo check DIR`: one line per problem and per
// warning, one with the options the DB was last opened with, then a
// summary. Exit status 0 means no problem (warnings
// allowed), 1 means a problem or a failure to check, 2 a usage error.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("check", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo check DIR")
		fmt.Fprintln(fl.Output(), "Verifies a closed DB without changing it; exit status 1 when anything is wrong.")
	}
	var dir string
	if code, done := parseFlags(fl, stdout, stderr, func() (err error) {
		dir, err = parseOnePositional(fl, args)
		return err
	}); done {
		return code
	}
	report, err := lsmgo.Check(dir, nil)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo check: %v\n", err)
		return 1
	}
	for _, p := range report.Problems {
		fmt.Fprintf(stdout, "problem: %v\n", p)
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(stdout, "warning: %v\n", w)
	}
	printOptions(stdout, report.Options)
	fmt.Fprintln(stdout, report)
	if !report.OK() {
		return 1
	}
	return 0
}

// printOptions writes the options the DB was last opened with (its
// OPTIONS file) on one line.
func printOptions(w io.Writer, options []lsmgo.OptionSetting) {
	if options == nil {
		fmt.Fprintln(w, "options: none recorded (no OPTIONS file: last opened by a version that did not write one)")
		return
	}
	fmt.Fprint(w, "options:")
	for _, o := range options {
		fmt.Fprintf(w, " %s=%s", o.Name, o.Value)
	}
	fmt.Fprintln(w)
}
