// Command lsmgo-bench measures lsmgo
// (go build -o lsmgo-bench ./bench/cmd/lsmgo-bench). It has modes, chosen with --mode: engine (the default) runs db_bench-style
// workloads against lsmgo and its peers; server runs the lsmgo server in
// this process for a client run to load; client drives any RESP server
// from many connections. Each mode lives in its own file and registers
// itself in modes, so a new mode is a new file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lsmgo-dev/lsmgo/bench"
)

// mode is one way of running the tool. run gets the arguments without
// --mode and returns the process exit status.
type mode struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// modes holds every mode by its --mode name; each mode's file adds itself
// in an init function.
var modes = map[string]mode{}

// defaultMode runs when --mode is absent.
const defaultMode = "engine"

func main() {
	// An engine child process never returns from here.
	bench.RunChildIfRequested()
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain is main without the process: it returns the exit status, so
// tests drive it with their own writers.
func runMain(args []string, stdout, stderr io.Writer) int {
	name, rest, err := splitMode(args)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		usage(stderr)
		return 2
	}
	if name == "" {
		if len(rest) > 0 && (rest[0] == "help" || rest[0] == "modes") {
			usage(stderr)
			return 0
		}
		if wantsHelp(rest) {
			// Without --mode, --help is about the tool: its modes first,
			// then the default mode's flags, which it would run.
			usage(stderr)
			fmt.Fprintln(stderr)
		}
		name = defaultMode
	}
	m, ok := modes[name]
	if !ok {
		fmt.Fprintf(stderr, "lsmgo-bench: unknown mode %q\n", name)
		usage(stderr)
		return 2
	}
	return m.run(rest, stdout, stderr)
}

// measure finishes a mode that parses its flags and then measures, given
// the parse error and the measurement: 0 after --help or when every row
// succeeded, 2 for bad flags, and 1 when the run failed or any row has an
// error, so that a script notices an engine that failed a workload or a
// server that dropped connections as surely as a run that never started.
func measure(stderr io.Writer, flagErr error, run func() ([]bench.Result, error)) int {
	switch {
	case errors.Is(flagErr, flag.ErrHelp):
		return 0
	case flagErr != nil:
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", flagErr)
		return 2
	}
	rows, err := run()
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 1
	}
	for _, r := range rows {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}

// splitMode takes --mode=NAME or --mode NAME (one or two dashes) out of
// args wherever it is.
func splitMode(args []string) (name string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag := strings.TrimLeft(a, "-")
		if a == flag || len(a)-len(flag) > 2 {
			rest = append(rest, a)
			continue
		}
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		switch {
		case strings.HasPrefix(flag, "mode="):
			name = strings.TrimPrefix(flag, "mode=")
		case flag == "mode":
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("--mode needs a value")
			}
			i++
			name = args[i]
		default:
			rest = append(rest, a)
			continue
		}
		if name == "" {
			return "", nil, fmt.Errorf("--mode needs a value")
		}
	}
	return name, rest, nil
}

// wantsHelp reports whether args ask for help the way the flag package
// understands it: -h, -help or --help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// usage lists the modes on w.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lsmgo-bench [--mode=MODE] [flags]   (--mode=MODE --help lists a mode's flags)")
	names := make([]string, 0, len(modes))
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		def := ""
		if n == defaultMode {
			def = " (default)"
		}
		fmt.Fprintf(w, "  --mode=%-8s %s%s\n", n, modes[n].summary, def)
	}
}
