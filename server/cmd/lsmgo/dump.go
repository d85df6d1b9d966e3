package main

import (
	"errors"
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
	fl.SetOutput(stderr)
	fl.BoolVar(&opts.Entries, "entries", false, "with a .sst FILE, print every entry too")
	fl.IntVar(&opts.MaxValue, "max-value", 64, "print at most this many bytes of each value (0: all)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: lsmgo dump [--entries] [--max-value N] DIR|FILE")
		fmt.Fprintln(stderr, "DIR: the current version, level by level. FILE: a .sst's properties (and entries),")
		fmt.Fprintln(stderr, "a .log's batches, or a MANIFEST's version edits.")
		fl.PrintDefaults()
	}
	target, err := parseOnePositional(fl, args)
	if err != nil {
		// The flag package has already reported its own errors.
		if errors.Is(err, errArgCount) {
			fl.Usage()
		}
		return 2
	}
	if err := inspect.Dump(stdout, target, opts); err != nil {
		fmt.Fprintf(stderr, "lsmgo dump: %v\n", err)
		return 1
	}
	return 0
}

// errArgCount is a usage error: there must be exactly one positional argument.
var errArgCount = errors.New("want exactly one argument")

// parseOnePositional parses flags placed before or after the single
// positional argument, which the flag package alone does not allow.
func parseOnePositional(fl *flag.FlagSet, args []string) (string, error) {
	if err := fl.Parse(args); err != nil {
		return "", err
	}
	if fl.NArg() == 0 {
		return "", errArgCount
	}
	arg := fl.Arg(0)
	if err := fl.Parse(fl.Args()[1:]); err != nil {
		return "", err
	}
	if fl.NArg() != 0 {
		return "", errArgCount
	}
	return arg, nil
}
