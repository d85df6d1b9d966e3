// Command lsmgo is the lsmgo binary: the Redis-compatible server and the
// tools that inspect a DB directory. Each subcommand lives in its own file
// and registers itself in commands.
//
// Conventions, the same for every subcommand: -h, --help and "lsmgo help
// CMD" print the usage to stdout and exit 0; a usage error prints the
// usage to stderr and exits 2; "lsmgo version" and "lsmgo --version" print
// the build's version and commit.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and returns the process exit status.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		name = "version"
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		// "help CMD" is "CMD --help".
		name, args = args[1], []string{args[1], "--help"}
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "lsmgo: unknown command %q\n", name)
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lsmgo <command> [flags]")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "Run 'lsmgo help <command>' for a command's flags.")
}

// errUsage is a usage error the flag package does not detect, such as a
// wrong number of arguments; parseFlags answers it with the usage.
var errUsage = errors.New("usage error")

// parseFlags runs parse, which parses a subcommand's arguments into fl,
// with the CLI's conventions: -h or --help prints the usage to stdout and
// exits 0; a bad flag, or errUsage from parse, prints the complaint and
// the usage to stderr and exits 2. done says the subcommand must return
// code now. fl's Usage must write to fl.Output().
func parseFlags(fl *flag.FlagSet, stdout, stderr io.Writer, parse func() error) (code int, done bool) {
	// The flag package writes the usage before it returns ErrHelp, so
	// whether it belongs on stdout is known only afterwards.
	var out bytes.Buffer
	fl.SetOutput(&out)
	err := parse()
	fl.SetOutput(stderr)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		stdout.Write(out.Bytes())
		return 0, true
	case out.Len() == 0:
		fl.Usage()
	default:
		stderr.Write(out.Bytes())
	}
	return 2, true
}
