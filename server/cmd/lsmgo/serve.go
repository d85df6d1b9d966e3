package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lsmgo-dev/lsmgo/server"
)

func init() {
	commands["serve"] = command{
		summary: "run the Redis-compatible server (lsmgo serve --help for flags)",
		run:     runServe,
	}
}

// runServe runs the server until SIGINT or SIGTERM, then shuts it down
// gracefully: in-flight commands finish, the memtable is flushed and the
// engine closed. A second signal during shutdown exits at once.
func runServe(args []string, stdout, stderr io.Writer) int {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("lsmgo serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long shutdown waits for busy clients before closing them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lsmgo serve [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lsmgo serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg.LogOutput = stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo serve: %v\n", err)
		return 1
	}
	// One machine-readable line, so scripts and tests started with port 0
	// learn the bound addresses.
	fmt.Fprintf(stdout, "lsmgo serve: listening addr=%s http=%s\n", srv.Addr(), srv.HTTPAddr())
	<-ctx.Done()
	stop() // a second signal now kills the process the default way

	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "lsmgo serve: shutdown: %v\n", err)
		return 1
	}
	return 0
}
