package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo/bench"
)

func init() {
	modes["client"] = mode{
		summary: "drive a running RESP server (lsmgo serve, redis-server) with GET and SET from many connections",
		run:     runClient,
	}
}

// runClient runs the load generator. It exits 1 when a level failed, so a
// script notices a server that refused or dropped connections.
func runClient(args []string, stdout, stderr io.Writer) int {
	cfg, err := bench.ParseClientFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 2
	}
	rep, err := bench.RunClient(cfg, stdout, stderr)
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
