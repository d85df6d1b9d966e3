// Command lsmgo-bench measures lsmgo (go build -o lsmgo-bench ./cmd/bench).
// It has modes, chosen with --mode; each mode lives in its own file and
// registers itself in modes, so a new mode is a new file. Without --mode
// the engine mode runs.
package main

import (
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

var modes = map[string]mode{}

// plannedModes are modes the tool is meant to have that this build lacks,
// so asking for one says so instead of "unknown".
var plannedModes = map[string]string{
	"server": "load the lsmgo server over RESP",
	"client": "drive a running server as a client",
}

// defaultMode runs when --mode is absent.
const defaultMode = "engine"

func main() {
	// An engine child process never returns from here.
	bench.RunChildIfRequested()
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

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
			return 2
		}
		name = defaultMode
	}
	m, ok := modes[name]
	if !ok {
		if what, planned := plannedModes[name]; planned {
			fmt.Fprintf(stderr, "lsmgo-bench: --mode=%s (%s) is not implemented in this build\n", name, what)
		} else {
			fmt.Fprintf(stderr, "lsmgo-bench: unknown mode %q\n", name)
		}
		usage(stderr)
		return 2
	}
	return m.run(rest, stdout, stderr)
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lsmgo-bench [--mode=MODE] [flags]   (MODE --help lists a mode's flags)")
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
	for n, what := range plannedModes {
		if _, ok := modes[n]; !ok {
			fmt.Fprintf(w, "  --mode=%-8s %s (not in this build)\n", n, what)
		}
	}
}
