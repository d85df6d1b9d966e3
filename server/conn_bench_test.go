package server

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

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
			nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
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
