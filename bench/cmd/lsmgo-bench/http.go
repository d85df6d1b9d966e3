package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/lsmgo-dev/lsmgo/bench"
)

func init() {
	modes["http"] = mode{
		summary: "drive a running image host (lsmgo serve) with uploads and GETs of originals or thumbnails",
		run:     runHTTP,
	}
	modes["http-reference"] = mode{
		summary: "serve the upload reference for --mode=http: hash each body, write it to a file, fsync",
		run:     runHTTPReference,
	}
}

// runHTTP runs the image host load generator.
func runHTTP(args []string, stdout, stderr io.Writer) int {
	cfg, err := bench.ParseHTTPFlags(args, stderr)
	return measure(stderr, err, func() ([]bench.Result, error) {
		rep, err := bench.RunHTTP(cfg, stdout, stderr)
		if err != nil {
			return nil, err
		}
		return rep.Results, nil
	})
}

// runHTTPReference serves bench.ReferenceHandler until SIGINT or SIGTERM.
func runHTTPReference(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveReference(ctx, args, stdout, stderr)
}

// serveReference serves until ctx ends; a --dir it made itself is removed
// then.
func serveReference(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lsmgo-bench --mode=http-reference", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "listen `address` (loopback only)")
	dir := fs.String("dir", "", "directory for the uploaded files (default: a temporary one, removed at exit)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil || host != "localhost" && !isLoopbackIP(host) {
		fmt.Fprintf(stderr, "lsmgo-bench: --addr %q: the reference listens on loopback only\n", *addr)
		return 2
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "lsmgo-bench-reference-")
		if err != nil {
			fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
			return 1
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: bench.NewReferenceHandler(*dir)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// One line scripts and tests can parse for the bound address.
	fmt.Fprintf(stdout, "lsmgo-bench http-reference mode: listening http=%s dir=%s\n", ln.Addr(), *dir)
	select {
	case <-ctx.Done():
		srv.Close()
		<-done
		return 0
	case err := <-done:
		fmt.Fprintf(stderr, "lsmgo-bench: %v\n", err)
		return 1
	}
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
