package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lsmgo-dev/lsmgo/bench"
)

func init() {
	modes["engine"] = mode{
		summary: "db_bench-style workloads against lsmgo and its peers, each engine in its own process",
		run:     runEngine,
	}
}

// runEngine runs the workloads on the engines. Its --help also lists the
// workloads, which no flag's description has room for.
func runEngine(args []string, stdout, stderr io.Writer) int {
	cfg, err := bench.ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "\nworkloads (default order, then those that run only when named):\n  %s\n", strings.Join(bench.WorkloadHelp(), "\n  "))
	}
	return measure(stderr, err, func() ([]bench.Result, error) {
		rep, err := bench.Run(cfg, stdout, stderr)
		if err != nil {
			return nil, err
		}
		return rep.Results, nil
	})
}
