//go:build ignore

// load.go fills a hash h with fields f:%012d -> v:%012d and a sorted set z
// with members m:%012d scored i, for i in [0, N), over one connection:
// multi-field HSET and multi-member ZADD commands of 1,000 pairs, up to 64
// in flight. The names are those redis-benchmark's __rand_int__ makes
// with -r N, so its HGET/ZSCORE of random names all hit.
//
//	go run load.go -addr 127.0.0.1:7401 -n 10000000
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server")
	n := flag.Int("n", 10_000_000, "elements per collection")
	flag.Parse()
	c, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	const batch, window = 1000, 64
	cmds := 2 * ((*n + batch - 1) / batch)
	// slots holds a token per command that may still be sent: the writer
	// takes one per command, the reader gives one back per reply.
	slots := make(chan struct{}, window)
	for range window {
		slots <- struct{}{}
	}
	done := make(chan error, 1)
	go func() { // one reply line per command: integers, or an error
		r := bufio.NewReaderSize(c, 1<<16)
		for i := 0; i < cmds; i++ {
			line, err := r.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			if line[0] == '-' {
				done <- fmt.Errorf("command %d: %s", i, line)
				return
			}
			slots <- struct{}{}
		}
		done <- nil
	}()
	w := bufio.NewWriterSize(c, 1<<20)
	start := time.Now()
	for _, kind := range []string{"hset", "zadd"} {
		for lo := 0; lo < *n; lo += batch {
			select {
			case <-slots:
			default: // window full: send what is buffered, then wait
				if err := w.Flush(); err != nil {
					log.Fatal(err)
				}
				<-slots
			}
			hi := min(lo+batch, *n)
			fmt.Fprintf(w, "*%d\r\n$4\r\n%s\r\n$1\r\n%c\r\n", 2+2*(hi-lo), kind, kind[0])
			for i := lo; i < hi; i++ {
				a, b := fmt.Sprintf("f:%012d", i), fmt.Sprintf("v:%012d", i)
				if kind == "zadd" {
					a, b = strconv.Itoa(i), fmt.Sprintf("m:%012d", i)
				}
				fmt.Fprintf(w, "$%d\r\n%s\r\n$%d\r\n%s\r\n", len(a), a, len(b), b)
			}
		}
	}
	w.Flush()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loaded %d fields and %d members in %.1fs\n", *n, *n, time.Since(start).Seconds())
}
