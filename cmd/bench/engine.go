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

func runEngine(args []string, stdout, stderr io.Writer) int {
	cfg, err := bench.ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "\nworkloads (default order):\n  %s\n", strings.Join(bench.WorkloadHelp(), "\n  "))
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 2
	}
	rep, err := bench.Run(cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 1
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}
