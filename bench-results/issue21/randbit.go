//go:build ignore

// randbit sends SETBIT/GETBIT at random offsets of one key from many
// connections, pipelined, and prints throughput and latency percentiles.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server")
	conns := flag.Int("c", 50, "connections")
	pipe := flag.Int("P", 1, "pipeline depth")
	n := flag.Int("n", 100000, "requests in all")
	maxOff := flag.Int("r", 1<<20, "offsets in [0, r)")
	cmd := flag.String("cmd", "SETBIT", "SETBIT or GETBIT")
	key := flag.String("key", "bitmap", "key")
	flag.Parse()
	per := *n / *conns / *pipe
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for c := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", *addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(300 * time.Second))
			rd := bufio.NewReader(nc)
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var mine []time.Duration
			var buf []byte
			for range per {
				buf = buf[:0]
				for range *pipe {
					off := strconv.Itoa(rng.IntN(*maxOff))
					if *cmd == "SETBIT" {
						buf = fmt.Appendf(buf, "*4\r\n$6\r\nSETBIT\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$1\r\n1\r\n", len(*key), *key, len(off), off)
					} else {
						buf = fmt.Appendf(buf, "*3\r\n$6\r\nGETBIT\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(*key), *key, len(off), off)
					}
				}
				t0 := time.Now()
				if _, err := nc.Write(buf); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				for range *pipe {
					line, err := rd.ReadString('\n')
					if err != nil || line[0] != ':' {
						fmt.Fprintln(os.Stderr, "bad reply", line, err)
						os.Exit(1)
					}
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	total := len(lat) * *pipe
	fmt.Printf("%s,%d req,%.0f req/s,p50 %.2f ms,p99 %.2f ms\n", *cmd, total, float64(total)/el.Seconds(),
		float64(lat[len(lat)/2])/1e6, float64(lat[len(lat)*99/100])/1e6)
}
