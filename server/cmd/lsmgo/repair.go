package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo"
)

func init() {
	commands["repair"] = command{
		summary: "save what can be read of a DB with damaged tables, and say what was lost",
		run:     runRepair,
	}
}

// runRepair implements `lsmgo repair DIR` (lsmgo.Repair): the DB must be
// closed. It prints one line per damaged table (its key range, the
// entries saved and lost) and a summary. Exit status 0 means nothing was
// damaged, 3 that tables were repaired with data lost, 1 that repair
// failed, 2 a usage error.
func runRepair(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("repair", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo repair DIR")
		fmt.Fprintln(fl.Output(), "With the DB closed, replaces each damaged table by what can be read of it, moves the damaged file to DIR/"+lsmgo.LostDir+"/, and reports what was lost.")
		fmt.Fprintln(fl.Output(), "Back up DIR first: repair changes it.")
	}
	var dir string
	if code, done := parseFlags(fl, stdout, stderr, func() (err error) {
		dir, err = parseOnePositional(fl, args)
		return err
	}); done {
		return code
	}
	report, err := lsmgo.Repair(dir, nil)
	if report != nil {
		fmt.Fprintln(stdout, report)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo repair: %v\n", err)
		return 1
	}
	if len(report.Damaged) > 0 {
		return 3
	}
	return 0
}
