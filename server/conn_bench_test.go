package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// dialBench connects to addr, closing the connection at the
// benchmark's end.
func dialBench(b *testing.B, addr string) net.Conn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return nc
}

// BenchmarkRoundTrip measures one command per round trip, as at pipeline
// depth 1, through a client that allocates nothing, so that allocs/op is
// what the server allocates per command (background work included).
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name, req, reply string
	}{
		{"PING", "*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"SET", "*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nbar\r\n", "+OK\r\n"},
		{"GET", "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n", "$3\r\nbar\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := startServer(b, nil)
			nc := dialBench(b, s.Addr().String())
			req, want := []byte(bc.req), []byte(bc.reply)
			got := make([]byte, len(want))
			roundTrip := func(req, reply []byte) {
				if _, err := nc.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(nc, reply); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip([]byte("*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"), make([]byte, len("+OK\r\n")))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				roundTrip(req, got)
			}
			b.StopTimer()
			if !bytes.Equal(got, want) {
				b.Fatalf("reply %q, want %q", got, want)
			}
		})
	}
}

// BenchmarkPipelined measures the server's cost per command, the round
// trip amortized over 64 pipelined commands (half SETs, half GETs, over
// 64 keys). The tracking variants price client-side caching: "off" is
// every connection's cost while nobody tracks; "bcast-elsewhere" while
// another client tracks a prefix no key has (every commit then consults
// the table); "tracking" with this connection tracking its reads.
func BenchmarkPipelined(b *testing.B) {
	var req []byte
	for i := range 64 {
		key := fmt.Sprintf("key:%02d", i)
		if i%2 == 0 {
			req = resp.AppendCommand(req, []byte("SET"), []byte(key), []byte("value"))
		} else {
			req = resp.AppendCommand(req, []byte("GET"), []byte(key))
		}
	}
	for _, mode := range []string{"off", "bcast-elsewhere", "tracking"} {
		b.Run(mode, func(b *testing.B) {
			s := startServer(b, nil)
			if mode == "bcast-elsewhere" {
				other := testutil.Dial(b, "tcp", s.Addr().String())
				other.Do(b, []byte("HELLO"), []byte("3"))
				other.Do(b, []byte("CLIENT"), []byte("TRACKING"), []byte("ON"), []byte("BCAST"), []byte("PREFIX"), []byte("nomatch:"))
			}
			nc := dialBench(b, s.Addr().String())
			rd := resp.NewReader(nc, resp.Limits{})
			setup := resp.AppendCommand(nil, []byte("HELLO"), []byte("3"))
			if mode == "tracking" {
				setup = resp.AppendCommand(setup, []byte("CLIENT"), []byte("TRACKING"), []byte("ON"), []byte("NOLOOP"))
			}
			nc.Write(setup)
			for range 1 + bytes.Count(setup, []byte("TRACKING")) {
				if _, err := rd.ReadValue(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := nc.Write(req); err != nil {
					b.Fatal(err)
				}
				for range 64 {
					if _, err := rd.ReadValue(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/cmd")
		})
	}
}

// BenchmarkPipelinedColl measures the server's cost per command of
// redis-benchmark's collection tests at -P 16: 16 pipelined commands on
// one hot key per round trip, members drawn from 100,000 as with -r
// 100000. A pop test alternates a pipeline of pops with one of pushes
// that refills what it took (outside the timer). allocs/op is per
// pipeline of 16; ns/cmd and cpu-ns/cmd (the process' CPU time, client
// included, steadier than time on a shared machine) per command.
func BenchmarkPipelinedColl(b *testing.B) {
	const depth = 16
	// cmd returns the words of a command, rand standing for a number
	// drawn from 100,000 (the i-th of a fixed sequence).
	cmd := func(words string, i int) [][]byte {
		var args [][]byte
		for _, w := range strings.Fields(words) {
			if w == "rand" {
				args = append(args, fmt.Appendf(nil, "%012d", (i*7919)%100000))
			} else {
				args = append(args, []byte(w))
			}
		}
		return args
	}
	for _, bc := range []struct{ name, cmd, refill string }{
		{"HSET", "HSET myhash rand xxx", ""},
		{"ZADD", "ZADD myzset 0 rand", ""},
		{"SADD", "SADD myset rand", ""},
		{"LPUSH", "LPUSH mylist xxx", ""},
		{"INCR", "INCR rand", ""},
		{"LPOP", "LPOP mylist", "RPUSH mylist xxx"},
		{"ZPOPMIN", "ZPOPMIN myzset", "ZADD myzset 0 rand"},
		{"SPOP", "SPOP myset", "SADD myset rand"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := startServer(b, nil)
			nc := dialBench(b, s.Addr().String())
			rd := resp.NewReader(nc, resp.Limits{})
			// 64 distinct pipelines (and their refills), built up front.
			var reqs, refills [][]byte
			for p := range 64 {
				var req, refill []byte
				for j := range depth {
					req = resp.AppendCommand(req, cmd(bc.cmd, p*depth+j)...)
					if bc.refill != "" {
						refill = resp.AppendCommand(refill, cmd(bc.refill, p*depth+j)...)
					}
				}
				reqs, refills = append(reqs, req), append(refills, refill)
			}
			send := func(req []byte) {
				if _, err := nc.Write(req); err != nil {
					b.Fatal(err)
				}
				for range depth {
					if _, err := rd.ReadValue(); err != nil {
						b.Fatal(err)
					}
				}
			}
			// A collection of 20,000 elements to work on, as after the
			// first seconds of redis-benchmark.
			for p := range 20000 / depth {
				if bc.refill != "" {
					send(refills[p%64])
				} else {
					send(reqs[p%64])
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			i, cpu := 0, int64(0)
			for b.Loop() {
				if bc.refill != "" {
					b.StopTimer()
					send(refills[i%64])
					b.StartTimer()
				}
				cpu -= processCPU()
				send(reqs[i%64])
				cpu += processCPU()
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/cmd")
			b.ReportMetric(float64(cpu)/float64(b.N*depth), "cpu-ns/cmd")
		})
	}
}
