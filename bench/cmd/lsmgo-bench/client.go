package main

import (
	"io"

	"github.com/lsmgo-dev/lsmgo/bench"
)

func init() {
	modes["client"] = mode{
		summary: "drive a running RESP server (lsmgo serve, redis-server) with GET and SET from many connections",
		run:     runClient,
	}
}

// runClient runs the load generator.
func runClient(args []string, stdout, stderr io.Writer) int {
	cfg, err := bench.ParseClientFlags(args, stderr)
	return measure(stderr, err, func() ([]bench.Result, error) {
		rep, err := bench.RunClient(cfg, stdout, stderr)
		if err != nil {
			return nil, err
		}
		return rep.Results, nil
	})
}
