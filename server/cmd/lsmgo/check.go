package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server"
	"github.com/lsmgo-dev/lsmgo/server/imgbed"
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
	if w := leftoverSpools(dir); w != "" {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	printOptions(stdout, report.Options)
	fmt.Fprintln(stdout, report)
	if !report.OK() {
		return 1
	}
	return 0
}

// leftoverSpools describes the image host's upload spool files in the
// data directory dir, or returns "" when there are none. In a directory no
// server has open they are what a crash left of uploads in progress:
// garbage, which lsmgo serve removes at start.
func leftoverSpools(dir string) string {
	spool := server.SpoolDir(dir)
	names, err := imgbed.SpoolFiles(spool)
	if err != nil {
		return fmt.Sprintf("cannot list upload spool files: %v", err)
	}
	if len(names) == 0 {
		return ""
	}
	var size int64
	for _, name := range names {
		if st, err := os.Stat(name); err == nil {
			size += st.Size()
		}
	}
	return fmt.Sprintf("%d leftover upload spool file(s), %d bytes, in %s: uploads a crash interrupted; lsmgo serve removes them at start", len(names), size, spool)
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
