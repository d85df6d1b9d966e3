package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo/inspect"
)

func init() {
	commands["dump"] = command{
		summary: "print a DB's levels, or a table, WAL or manifest file",
		run:     runDump,
	}
}

// runDump implements `lsmgo dump [--entries] [--max-value N] DIR|FILE`.
// It only reads, so it works on an open DB too, though what it prints may
// then be stale. Exit status 1 means the target could not be read whole;
// what was printed before the error stands.
func runDump(args []string, stdout, stderr io.Writer) int {
	var opts inspect.DumpOptions
	fl := flag.NewFlagSet("dump", flag.ContinueOnError)
	fl.BoolVar(&opts.Entries, "entries", false, "with a .sst FILE, print every entry too")
	fl.IntVar(&opts.MaxValue, "max-value", 64, "print at most this many bytes of each value (0: all)")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo dump [--entries] [--max-value N] DIR|FILE")
		fmt.Fprintln(fl.Output(), "DIR: the current version, level by level, and blob files with live bytes. FILE: a .sst's properties (and entries),")
		fmt.Fprintln(fl.Output(), "a .log's batches, or a MANIFEST's version edits.")
		fl.PrintDefaults()
	}
	var target string
	if code, done := parseFlags(fl, stdout, stderr, func() (err error) {
		target, err = parseOnePositional(fl, args)
		return err
	}); done {
		return code
	}
	if err := inspect.Dump(stdout, target, opts); err != nil {
		fmt.Fprintf(stderr, "lsmgo dump: %v\n", err)
		return 1
	}
	return 0
}

// parseOnePositional parses flags placed before or after the single
// positional argument, which the flag package alone does not allow.
func parseOnePositional(fl *flag.FlagSet, args []string) (string, error) {
	pos, err := parsePositionals(fl, args)
	if err == nil && len(pos) != 1 {
		err = errUsage
	}
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

// parsePositionals parses flags placed before, between or after the
// positional arguments, and returns those.
func parsePositionals(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		if fl.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fl.Arg(0))
		args = fl.Args()[1:]
	}
}
