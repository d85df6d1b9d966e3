package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkPointRead measures the collection point reads one per round
// trip, as at pipeline depth 1, through a client that allocates nothing,
// so that allocs/op is what the server allocates per read. Each
// collection holds pointReadElems elements, in the engine's tables as well
// as its memtable, and every read asks for a different element.
func BenchmarkPointRead(b *testing.B) {
	const n = pointReadElems
	for _, bc := range []struct {
		name string
		req  func(i int) string
		// reply is the reply to req(i).
		reply func(i int) string
	}{
		{"HGET", func(i int) string { return prCmd("HGET", "h", prField(i)) }, func(i int) string { return prBulk(prValue(i)) }},
		{"HEXISTS", func(i int) string { return prCmd("HEXISTS", "h", prField(i)) }, func(int) string { return ":1\r\n" }},
		{"HMGET", func(i int) string { return prCmd("HMGET", "h", prField(i), prField(i+1)) },
			func(i int) string { return "*2\r\n" + prBulk(prValue(i)) + prBulk(prValue(i+1)) }},
		{"SISMEMBER", func(i int) string { return prCmd("SISMEMBER", "s", prField(i)) }, func(int) string { return ":1\r\n" }},
		{"SMISMEMBER", func(i int) string { return prCmd("SMISMEMBER", "s", prField(i), "nope") },
			func(int) string { return "*2\r\n:1\r\n:0\r\n" }},
		{"ZSCORE", func(i int) string { return prCmd("ZSCORE", "z", prField(i)) }, func(i int) string { return prBulk(fmt.Sprint(i)) }},
		{"ZMSCORE", func(i int) string { return prCmd("ZMSCORE", "z", prField(i), "nope") },
			func(i int) string { return "*2\r\n" + prBulk(fmt.Sprint(i)) + "$-1\r\n" }},
		{"LINDEX", func(i int) string { return prCmd("LINDEX", "l", fmt.Sprint(i)) }, func(i int) string { return prBulk(prValue(i)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := startServer(b, nil)
			fillPointReadColls(b, s, n)
			nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			// Requests and replies are built before the timer starts.
			reqs, replies := make([][]byte, n), make([][]byte, n)
			for i := range n {
				reqs[i], replies[i] = []byte(bc.req(i)), []byte(bc.reply(i))
			}
			got := make([]byte, 0, 256)
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				want := replies[i]
				if _, err := nc.Write(reqs[i]); err != nil {
					b.Fatal(err)
				}
				got = got[:len(want)]
				if _, err := io.ReadFull(nc, got); err != nil {
					b.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					b.Fatalf("reply %q, want %q", got, want)
				}
				i = (i + 7919) % (n - 1) // a prime stride: every element in turn
			}
		})
	}
}

const pointReadElems = 20000

func prField(i int) string   { return fmt.Sprintf("field:%08d", i) }
func prValue(i int) string   { return fmt.Sprintf("value:%08d", i) }
func prBulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

func prCmd(args ...string) string {
	s := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		s += prBulk(a)
	}
	return s
}

// fillPointReadColls fills the hash h, set s, sorted set z and list l
// with n elements each (prField(i) → prValue(i), member prField(i) with score
// i, list index i → prValue(i)), half of them flushed to tables.
func fillPointReadColls(b *testing.B, s *Server, n int) {
	ctx := context.Background()
	c := newClient(b, s, 2, nil)
	for start := 0; start < n; start += 1000 {
		p := c.Pipeline()
		for i := start; i < min(n, start+1000); i++ {
			p.HSet(ctx, "h", prField(i), prValue(i))
			p.SAdd(ctx, "s", prField(i))
			p.ZAdd(ctx, "z", redis.Z{Score: float64(i), Member: prField(i)})
			p.RPush(ctx, "l", prValue(i))
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		if start == n/2 {
			if err := s.ks.db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
