//go:build ignore

// Syscost prints what a trivial system call costs on this machine, the
// figure BENCHMARKING.md asks every table to name: getppid, and a 1-byte
// write to /dev/null, each the best of five timed loops.
//
//	go run syscost.go
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "syscost:", err)
		os.Exit(1)
	}
	defer null.Close()
	b := []byte{'x'}
	fmt.Printf("getppid %s, 1-byte write %s per call\n",
		best(func() { syscall.Getppid() }), best(func() { syscall.Write(int(null.Fd()), b) }))
}

// best times n calls of f five times and returns the fastest per call:
// on a shared machine the slower loops measure the neighbours.
func best(f func()) time.Duration {
	const n = 200_000
	fastest := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		for range n {
			f()
		}
		fastest = min(fastest, time.Since(start)/n)
	}
	return fastest
}
