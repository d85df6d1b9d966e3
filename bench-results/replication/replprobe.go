//go:build ignore

// replprobe helps bench-results/replication/run.sh with two jobs that
// redis-benchmark cannot do:
//
//	lag   every -every, SET a probe key to a fresh value on the primary and
//	      time, from the primary's +OK, until each replica returns that
//	      value to GET (polled every 200 µs); on SIGTERM or after -for it
//	      prints count, p50, p99 and max of those times in ms, per replica
//	      and over all.
//	load  fill the primary with -n keys (key:0 …) of -d random bytes each
//	      (incompressible, so neither the engine's compression nor the RDB's
//	      LZF shrinks them), -c connections, -P commands in flight each.
//
// It speaks RESP itself (the commands it sends are few) so it needs no
// module beyond the standard library.
//
//	go run bench-results/replication/replprobe.go -mode lag -primary 127.0.0.1:7000 -replicas 127.0.0.1:7001,127.0.0.1:7002
//	go run bench-results/replication/replprobe.go -mode load -primary 127.0.0.1:7000 -n 1000000 -d 1024
package main

import (
	"bufio"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	mode := flag.String("mode", "lag", "lag or load")
	primary := flag.String("primary", "127.0.0.1:7000", "primary address")
	replicas := flag.String("replicas", "", "replica addresses, separated by commas (lag)")
	every := flag.Duration("every", 20*time.Millisecond, "time between probes (lag)")
	limit := flag.Duration("for", 10*time.Minute, "longest run (lag)")
	n := flag.Int("n", 1000000, "keys to write (load)")
	size := flag.Int("d", 1024, "value bytes (load)")
	conns := flag.Int("c", 4, "connections (load)")
	depth := flag.Int("P", 64, "commands in flight per connection (load)")
	flag.Parse()
	switch *mode {
	case "lag":
		probeLag(*primary, strings.Split(*replicas, ","), *every, *limit)
	case "load":
		load(*primary, *n, *size, *conns, *depth)
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}

type conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dial(addr string) *conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<16)}
}

// send buffers one command; flush sends what is buffered.
func (c *conn) send(args ...[]byte) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n", len(a))
		c.w.Write(a)
		c.w.WriteString("\r\n")
	}
}

func (c *conn) flush() {
	if err := c.w.Flush(); err != nil {
		log.Fatal(err)
	}
}

// reply reads one reply: simple strings and bulk strings as their text,
// nil bulk as "", errors fatal (the probe and the load expect none).
func (c *conn) reply() string {
	line, err := c.r.ReadString('\n')
	if err != nil {
		log.Fatal(err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:]
	case '$':
		var l int
		fmt.Sscan(line[1:], &l)
		if l < 0 {
			return ""
		}
		buf := make([]byte, l+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			log.Fatal(err)
		}
		return string(buf[:l])
	default:
		log.Fatalf("reply %q", line)
	}
	return ""
}

func (c *conn) do(args ...string) string {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	c.send(bs...)
	c.flush()
	return c.reply()
}

func probeLag(primary string, replicas []string, every, limit time.Duration) {
	p := dial(primary)
	rs := make([]*conn, len(replicas))
	for i, a := range replicas {
		rs[i] = dial(a)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	deadline := time.After(limit)
	lags := make([][]float64, len(rs))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			report(replicas, lags)
			return
		case <-deadline:
			report(replicas, lags)
			return
		case <-tick.C:
		}
		value := fmt.Sprint(time.Now().UnixNano(), "-", i)
		p.do("SET", "replprobe", value)
		acked := time.Now()
		var wg sync.WaitGroup
		for j, r := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r.do("GET", "replprobe") != value {
					time.Sleep(200 * time.Microsecond)
				}
				lags[j] = append(lags[j], float64(time.Since(acked).Microseconds())/1000)
			}()
		}
		wg.Wait()
	}
}

func report(names []string, lags [][]float64) {
	var all []float64
	for i, l := range lags {
		fmt.Printf("replica %s %s\n", names[i], summary(l))
		all = append(all, l...)
	}
	fmt.Printf("all %s\n", summary(all))
}

func summary(ms []float64) string {
	if len(ms) == 0 {
		return "count=0"
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1))] }
	return fmt.Sprintf("count=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f", len(s), at(0.5), at(0.99), s[len(s)-1])
}

func load(primary string, n, size, conns, depth int) {
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(primary)
			value := make([]byte, size)
			inFlight := 0
			for k := w; k < n; k += conns {
				rand.Read(value)
				c.send([]byte("SET"), []byte(fmt.Sprint("key:", k)), value)
				inFlight++
				if inFlight == depth {
					c.flush()
					for ; inFlight > 0; inFlight-- {
						c.reply()
					}
				}
			}
			c.flush()
			for ; inFlight > 0; inFlight-- {
				c.reply()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	fmt.Printf("loaded %d keys of %d bytes in %.1fs (%.0f SET/s, %.0f MB/s)\n",
		n, size, el.Seconds(), float64(n)/el.Seconds(), float64(n*size)/el.Seconds()/1e6)
}
