package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lsmgo-dev/lsmgo/server"
)

func init() {
	commands["serve"] = command{
		summary: "run the Redis-compatible server (lsmgo serve --help for flags)",
		run:     runServe,
	}
}

// runServe runs the server until SIGINT, SIGTERM or a client's SHUTDOWN,
// then says which came and shuts the server down gracefully: in-flight
// commands finish, the memtable is flushed and the engine closed. A second
// signal during shutdown exits at once.
func runServe(args []string, stdout, stderr io.Writer) int {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("lsmgo serve", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lsmgo serve [flags]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, stdout, stderr, func() error { return fs.Parse(args) }); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lsmgo serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg.LogOutput = stderr

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	srv, err := server.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo serve: %v\n", err)
		return 1
	}
	// One machine-readable line, so scripts and tests started with port 0
	// learn the bound addresses; what it serves and which build serves it
	// come after, the directory quoted since it may hold spaces.
	build := server.BuildInfo()
	fmt.Fprintf(stdout, "lsmgo serve: listening addr=%s http=%s dir=%q version=%s commit=%s\n",
		srv.Addr(), srv.HTTPAddr(), srv.Config().Dir, build.Version, build.Commit)
	select {
	case sig := <-sigs:
		signal.Stop(sigs) // a second signal now kills the process the default way
		fmt.Fprintf(stderr, "lsmgo serve: received %v; shutting down (another signal exits at once)\n", sig)
	case <-srv.ShutdownAsked():
		signal.Stop(sigs)
		fmt.Fprintln(stderr, "lsmgo serve: SHUTDOWN received; shutting down (a signal exits at once)")
	}

	// The shutdown-timeout setting bounds the wait for busy clients.
	if err := srv.Shutdown(context.Background()); err != nil {
		fmt.Fprintf(stderr, "lsmgo serve: shutdown: %v\n", err)
		return 1
	}
	return 0
}
