//go:build ignore

// load21 sends one of issue 21's workloads that redis-benchmark cannot
// express from many connections, pipelined, and prints throughput and
// latency percentiles (of each pipelined round trip):
//
//	setbit, getbit  SETBIT key off 1 / GETBIT key off, off uniform in [0, r)
//	geoadd          GEOADD key lon lat m:i, i uniform in [0, r), points uniform
//	                over lon ±180, lat ±80
//	geosearch       GEOSEARCH key FROMLONLAT lon lat BYRADIUS 200 km ASC COUNT 10
//	xpair           XREADGROUP GROUP g c<conn> COUNT 1 STREAMS key >, then
//	                XACK key g <id>: P reads in one write, then their P acks
//	                in one write; a pair counts as one request
//
// go run bench-results/issue21/load21.go -addr 127.0.0.1:6379 -mode xpair -c 50 -P 16 -n 100000
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// reply is a parsed RESP2 reply: an error, a string or integer (text),
// or an array.
type reply struct {
	err   string
	text  string
	array []reply
}

func readReply(rd *bufio.Reader) (reply, error) {
	line, err := rd.ReadString('\n')
	if err != nil || len(line) < 3 {
		return reply{}, errors.Join(err, errors.New("short reply"))
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '-':
		return reply{err: body}, nil
	case '+', ':':
		return reply{text: body}, nil
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return reply{}, nil
		}
		b := make([]byte, n+2)
		_, err := io.ReadFull(rd, b)
		return reply{text: string(b[:n])}, err
	case '*':
		n, _ := strconv.Atoi(body)
		r := reply{array: []reply{}}
		for range max(n, 0) {
			e, err := readReply(rd)
			if err != nil {
				return r, err
			}
			r.array = append(r.array, e)
		}
		return r, nil
	}
	return reply{}, fmt.Errorf("bad reply %q", line)
}

func appendCmd(buf []byte, args ...string) []byte {
	buf = fmt.Appendf(buf, "*%d\r\n", len(args))
	for _, a := range args {
		buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
	}
	return buf
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server")
	conns := flag.Int("c", 50, "connections")
	pipe := flag.Int("P", 1, "pipeline depth")
	n := flag.Int("n", 100000, "requests in all")
	r := flag.Int64("r", 1<<32, "offsets (setbit, getbit) or members (geoadd) in [0, r)")
	mode := flag.String("mode", "getbit", "setbit, getbit, geoadd, geosearch or xpair")
	key := flag.String("key", "k", "key")
	flag.Parse()
	per := *n / *conns / *pipe
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	fail := func(err any) {
		fmt.Fprintln(os.Stderr, *mode, err)
		os.Exit(1)
	}
	start := time.Now()
	for c := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", *addr)
			if err != nil {
				fail(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(300 * time.Second))
			rd := bufio.NewReaderSize(nc, 64<<10)
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			coord := func(span float64) string { return strconv.FormatFloat((rng.Float64()*2-1)*span, 'f', 6, 64) }
			consumer := "c" + strconv.Itoa(c)
			var mine []time.Duration
			var buf []byte
			roundTrip := func() []reply {
				if _, err := nc.Write(buf); err != nil {
					fail(err)
				}
				out := make([]reply, *pipe)
				for i := range out {
					if out[i], err = readReply(rd); err != nil {
						fail(err)
					}
					if out[i].err != "" {
						fail(out[i].err)
					}
				}
				return out
			}
			for range per {
				buf = buf[:0]
				for range *pipe {
					switch *mode {
					case "setbit":
						buf = appendCmd(buf, "SETBIT", *key, strconv.FormatInt(rng.Int64N(*r), 10), "1")
					case "getbit":
						buf = appendCmd(buf, "GETBIT", *key, strconv.FormatInt(rng.Int64N(*r), 10))
					case "geoadd":
						buf = appendCmd(buf, "GEOADD", *key, coord(180), coord(80), "m:"+strconv.FormatInt(rng.Int64N(*r), 10))
					case "geosearch":
						buf = appendCmd(buf, "GEOSEARCH", *key, "FROMLONLAT", coord(180), coord(80), "BYRADIUS", "200", "km", "ASC", "COUNT", "10")
					case "xpair":
						buf = appendCmd(buf, "XREADGROUP", "GROUP", "g", consumer, "COUNT", "1", "STREAMS", *key, ">")
					default:
						fail("unknown mode")
					}
				}
				t0 := time.Now()
				replies := roundTrip()
				if *mode == "xpair" {
					buf = buf[:0]
					for _, rep := range replies {
						// [[key, [[id, fields]]]]
						if len(rep.array) != 1 || len(rep.array[0].array) != 2 || len(rep.array[0].array[1].array) != 1 {
							fail("XREADGROUP read nothing: the stream ran dry")
						}
						buf = appendCmd(buf, "XACK", *key, "g", rep.array[0].array[1].array[0].array[0].text)
					}
					roundTrip()
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
	fmt.Printf("%s,%d req,%.0f req/s,p50 %.2f ms,p99 %.2f ms\n", *mode, total, float64(total)/el.Seconds(),
		float64(lat[len(lat)/2])/1e6, float64(lat[len(lat)*99/100])/1e6)
}
