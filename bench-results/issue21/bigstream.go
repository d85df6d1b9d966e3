//go:build ignore

// bigstream builds issue 21's large values on one server and reports its
// resident memory after each phase: a stream of -n entries (XADD * with
// one 16-byte field), a consumer group that reads -pending of them and
// acknowledges -acked, a bitmap with -bits bits set at random offsets
// below 2^32; then reads them (XRANGE over the whole stream, XPENDING,
// BITCOUNT, GETBIT), trims the stream to -keep entries and deletes both
// keys. Every phase is pipelined from -c connections and bounded by
// -timeout. The server's memory comes from /proc/PID/status (VmRSS now,
// VmHWM the peak), so the server must run on this machine.
//
// go run bench-results/issue21/bigstream.go -addr 127.0.0.1:6379 -pid PID
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	addr    = flag.String("addr", "127.0.0.1:6379", "server")
	pid     = flag.Int("pid", 0, "the server's process id")
	n       = flag.Int("n", 10_000_000, "stream entries")
	pending = flag.Int("pending", 1_000_000, "entries the group reads")
	acked   = flag.Int("acked", 500_000, "of those, entries acknowledged")
	bits    = flag.Int("bits", 1_000_000, "bits set in the bitmap")
	keep    = flag.Int("keep", 1_000_000, "entries XTRIM MAXLEN ~ keeps")
	conns   = flag.Int("c", 8, "connections for the bulk phases")
	depth   = flag.Int("P", 500, "pipeline depth of the bulk phases")
	timeout = flag.Duration("timeout", 20*time.Minute, "bound on the whole run")
	name    = flag.String("name", "server", "name printed in each row")
)

type client struct {
	nc net.Conn
	rd *bufio.Reader
}

func dial() *client {
	nc, err := net.Dial("tcp", *addr)
	check(err)
	nc.SetDeadline(time.Now().Add(*timeout))
	return &client{nc, bufio.NewReaderSize(nc, 1<<20)}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigstream:", err)
		os.Exit(1)
	}
}

func appendCmd(buf []byte, args ...string) []byte {
	buf = fmt.Appendf(buf, "*%d\r\n", len(args))
	for _, a := range args {
		buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
	}
	return buf
}

// skip reads one reply and returns its first line; nested replies are
// read and dropped (bulk strings counted in bytes).
func (c *client) skip() string {
	line, err := c.rd.ReadString('\n')
	check(err)
	switch line[0] {
	case '-':
		check(fmt.Errorf("error reply: %s", line))
	case '$':
		k, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if k >= 0 {
			_, err := io.CopyN(io.Discard, c.rd, int64(k+2))
			check(err)
		}
	case '*':
		k, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for range max(k, 0) {
			c.skip()
		}
	}
	return strings.TrimSpace(line)
}

func (c *client) do(args ...string) string {
	_, err := c.nc.Write(appendCmd(nil, args...))
	check(err)
	return c.skip()
}

// bulk sends total commands made by gen from *conns connections, *depth
// at a time.
func bulk(total int, gen func(rng *rand.Rand, i int) []string) {
	var wg sync.WaitGroup
	per := (total + *conns - 1) / *conns
	for w := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial()
			defer c.nc.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 21))
			from, to := w*per, min((w+1)*per, total)
			var buf []byte
			for i := from; i < to; {
				buf = buf[:0]
				k := 0
				for ; k < *depth && i < to; k, i = k+1, i+1 {
					buf = appendCmd(buf, gen(rng, i)...)
				}
				_, err := c.nc.Write(buf)
				check(err)
				for range k {
					c.skip()
				}
			}
		}()
	}
	wg.Wait()
}

func memory() (rss, peak string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", *pid))
	check(err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss = f[1]
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			peak = f[1]
		}
	}
	return rss, peak
}

func phase(what string, fn func() string) {
	t0 := time.Now()
	note := fn()
	rss, peak := memory()
	fmt.Printf("%s,%s,%.1f s,rss %s kB,peak %s kB,%s\n", *name, what, time.Since(t0).Seconds(), rss, peak, note)
}

func main() {
	flag.Parse()
	c := dial()
	c.do("DEL", "big", "bm")
	phase("start", func() string { return "" })
	phase("xadd", func() string {
		bulk(*n, func(_ *rand.Rand, i int) []string {
			return []string{"XADD", "big", "*", "f", fmt.Sprintf("value-%010d", i)}
		})
		return "XLEN " + c.do("XLEN", "big")
	})
	phase("group", func() string {
		c.do("XGROUP", "CREATE", "big", "g", "0")
		for read := 0; read < *pending; read += 1000 {
			c.do("XREADGROUP", "GROUP", "g", "c"+strconv.Itoa(read%7), "COUNT", strconv.Itoa(min(1000, *pending-read)), "STREAMS", "big", ">")
		}
		// Acknowledge the first -acked of the delivered ids, in pages.
		start := "-"
		for done := 0; done < *acked; {
			_, err := c.nc.Write(appendCmd(nil, "XPENDING", "big", "g", start, "+", strconv.Itoa(min(1000, *acked-done))))
			check(err)
			line, err := c.rd.ReadString('\n')
			check(err)
			k, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			ids := []string{"XACK", "big", "g"}
			for range k {
				c.rd.ReadString('\n') // *4
				c.rd.ReadString('\n') // $len
				id, _ := c.rd.ReadString('\n')
				ids = append(ids, strings.TrimSpace(id))
				c.skip()
				c.skip()
				c.skip()
			}
			c.do(ids...)
			done += k
			start = "(" + ids[len(ids)-1]
		}
		return "XPENDING count " + strings.Fields(strings.ReplaceAll(summary(c), ",", " "))[0]
	})
	phase("setbit", func() string {
		bulk(*bits, func(rng *rand.Rand, _ int) []string {
			return []string{"SETBIT", "bm", strconv.FormatUint(rng.Uint64N(1<<32), 10), "1"}
		})
		return ""
	})
	phase("xrange-all", func() string {
		start, pages := "-", 0
		for {
			_, err := c.nc.Write(appendCmd(nil, "XRANGE", "big", start, "+", "COUNT", "10000"))
			check(err)
			line, err := c.rd.ReadString('\n')
			check(err)
			k, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			last := ""
			for range k {
				c.rd.ReadString('\n')
				c.rd.ReadString('\n')
				id, _ := c.rd.ReadString('\n')
				last = strings.TrimSpace(id)
				c.skip()
			}
			pages++
			if k < 10000 {
				return fmt.Sprintf("%d pages", pages)
			}
			start = "(" + last
		}
	})
	phase("bitcount", func() string { return "BITCOUNT " + c.do("BITCOUNT", "bm") })
	phase("getbit", func() string {
		bulk(100_000, func(rng *rand.Rand, _ int) []string {
			return []string{"GETBIT", "bm", strconv.FormatUint(rng.Uint64N(1<<32), 10)}
		})
		return "100000 GETBIT"
	})
	phase("xtrim", func() string {
		// "~" with its default LIMIT (100 nodes' worth, 10,000 entries)
		// per call, as a client trimming a live stream would.
		calls, deleted := 0, 0
		for {
			k, _ := strconv.Atoi(strings.TrimPrefix(c.do("XTRIM", "big", "MAXLEN", "~", strconv.Itoa(*keep)), ":"))
			if k == 0 {
				break
			}
			calls, deleted = calls+1, deleted+k
		}
		return fmt.Sprintf("%d XTRIM calls deleted %d, XLEN %s", calls, deleted, c.do("XLEN", "big"))
	})
	phase("del", func() string { return "DEL " + c.do("DEL", "big", "bm") })
	time.Sleep(5 * time.Second)
	phase("idle-5s", func() string { return "" })
}

// summary returns XPENDING's summary count as text.
func summary(c *client) string {
	_, err := c.nc.Write(appendCmd(nil, "XPENDING", "big", "g"))
	check(err)
	c.rd.ReadString('\n')
	count, _ := c.rd.ReadString('\n')
	for range 3 {
		c.skip()
	}
	return strings.TrimPrefix(strings.TrimSpace(count), ":")
}
