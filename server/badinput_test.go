package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkAlive fails the test unless a new client gets PONG.
func checkAlive(t *testing.T, s *Server) {
	t.Helper()
	r := dialRaw(t, s)
	r.send("PING\r\n")
	eq(t, "server still serving", r.reply(), "+PONG\r\n")
}

// TestMalformedInputClosesOnlyThatClient sends Redis' classic protocol
// violations and checks the exact error reply, the clean close, and that
// other clients are unaffected.
func TestMalformedInputClosesOnlyThatClient(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ProtoMaxBulkLen = 1 << 20 })
	bystander := dialRaw(t, s)
	for _, tc := range []struct{ name, in, want string }{
		{"negative bulk length", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge bulk length", "*2\r\n$3\r\nGET\r\n$99999999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk over proto-max-bulk-len", "*2\r\n$3\r\nGET\r\n$1048577\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"overflowing bulk length", "*1\r\n$99999999999999999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length 2^63-1", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length -2^63", "*1\r\n$-9223372036854775808\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"multibulk length 2^63-1", "*9223372036854775807\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"huge multibulk length", "*9999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"junk multibulk length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"missing dollar", "*1\r\nPING\r\n", "-ERR Protocol error: expected '$', got 'P'\r\n"},
		{"unbalanced double quote", "SET k \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"unbalanced single quote", "SET 'k v\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"quote followed by text", "SET \"k\"v x\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"too big inline", strings.Repeat("a", 70<<10), "-ERR Protocol error: too big inline request\r\n"},
		{"pending writes before error", "SET a 1\r\nSET b 2\r\n*1\r\n$-5\r\n", "+OK\r\n+OK\r\n-ERR Protocol error: invalid bulk length\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.send(tc.in)
			r.expectClosed(tc.want)
		})
	}
	bystander.send("PING\r\n")
	eq(t, "bystander", bystander.reply(), "+PONG\r\n")
	c := newClient(t, s, 2, nil)
	eq(t, "writes before the protocol error were applied", c.MGet(context.Background(), "a", "b").Val(), []any{"1", "2"})
}

func TestValidOddInput(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	// Empty commands are skipped, inline quoting follows redis-cli, and
	// binary-safe arguments survive.
	r.send("\r\n*0\r\n*-1\r\n  \r\nPING\r\n")
	eq(t, "after empty commands", r.reply(), "+PONG\r\n")
	r.send("SET \"a b\" 'c\\'d'\r\nGET \"a b\"\r\n")
	eq(t, "inline SET", r.reply(), "+OK\r\n")
	eq(t, "inline GET", r.reply(), "$3\r\nc'd\r\n")
	r.send("SET \"\\x00\\xff\" \"\\n\"\r\nGET \"\\x00\\xff\"\r\n")
	eq(t, "hex escapes", r.reply(), "+OK\r\n")
	eq(t, "binary value", r.reply(), "$1\r\n\n\r\n")
	r.send("*2\r\n$3\r\nGET\r\n$2\r\n\x00\xff\r\n")
	eq(t, "binary key", r.reply(), "$1\r\n\n\r\n")
	r.send("$5\r\n")
	eq(t, "dollar line is an inline command", r.reply(), "-ERR unknown command '$5', with args beginning with: \r\n")
}

// TestBinaryJunk throws random bytes at the server from several clients;
// each gets replies or a close, and the server keeps serving.
func TestBinaryJunk(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	s := startServer(t, func(c *Config) { c.ProtoMaxBulkLen = 1 << 20 })
	for i := range 50 {
		junk := make([]byte, rng.IntN(4096))
		for j := range junk {
			junk[j] = byte(rng.UintN(256))
		}
		if i%2 == 0 && len(junk) > 0 {
			junk[0] = '*' // exercise the multibulk parser too
		}
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(junk)
		nc.(*net.TCPConn).CloseWrite()
		if _, err := io.ReadAll(nc); err != nil {
			t.Fatalf("junk %d (seed %d): read: %v", i, seed, err)
		}
		nc.Close()
	}
	checkAlive(t, s)
}

// TestSlowAndIdleClientsAreClosed sends one byte at a time, too slowly to
// complete a command within the timeout, while another client works.
func TestSlowAndIdleClientsAreClosed(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Timeout = time.Second })
	slow := dialRaw(t, s)
	idle := dialRaw(t, s)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, b := range []byte("*1\r\n$4\r\nPING\r\n") {
			if _, err := slow.nc.Write([]byte{b}); err != nil {
				return // closed by the server, as expected
			}
			time.Sleep(150 * time.Millisecond)
		}
	}()
	busy := dialRaw(t, s)
	for range 50 {
		busy.send("PING\r\n")
		eq(t, "busy client", busy.reply(), "+PONG\r\n")
		time.Sleep(10 * time.Millisecond)
	}
	idle.expectClosed("")
	// The close can be a reset, since the slow client may still be
	// writing; only our own deadline means the server left it open.
	slow.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := slow.nc.Read(make([]byte, 64)); err == nil {
		t.Fatalf("slow client got %d bytes instead of a close", n)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("slow client still open 20s later")
	}
	wg.Wait()
	checkAlive(t, s)
}

func TestQueryBufferLimit(t *testing.T) {
	s := startServer(t, func(c *Config) { c.QueryBufferLimit = 4096 })
	r := dialRaw(t, s)
	r.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + strings.Repeat("x", 20000))
	r.expectClosed("")
	checkAlive(t, s)
}

func TestMaxClients(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClients = 3 })
	for range 3 {
		r := dialRaw(t, s)
		r.send("PING\r\n")
		eq(t, "within maxclients", r.reply(), "+PONG\r\n")
	}
	extra := dialRaw(t, s)
	extra.expectClosed("-ERR max number of clients reached\r\n")
	if n := s.stats.rejected.Load(); n != 1 {
		t.Errorf("rejected = %d", n)
	}
}

// TestThousandsOfConnections opens 2000 simultaneous connections, each
// running a command, then checks the server still serves.
func TestThousandsOfConnections(t *testing.T) {
	s := startServer(t, nil)
	const n = 2000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		// Generous: a full accept queue on a loaded machine drops the
		// SYN, and the kernel resends it only after 1 s, then 3 s.
		nc, err := net.DialTimeout("tcp", s.Addr().String(), 20*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, nc)
	}
	errs := make(chan error, n)
	for i, nc := range conns {
		go func() {
			// Only a bound on a hung server: 2000 commands arriving at
			// once take tens of seconds on a loaded machine under -race.
			nc.SetDeadline(time.Now().Add(2 * time.Minute))
			fmt.Fprintf(nc, "SET c%d %d\r\n", i, i)
			buf := make([]byte, 5)
			_, err := io.ReadFull(nc, buf)
			if err == nil && string(buf) != "+OK\r\n" {
				err = fmt.Errorf("reply %q", buf)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, s, 2, nil)
	eq(t, "keys written", c.DBSize(context.Background()).Val(), int64(n))
	if got := s.clientCount(); got < n {
		t.Errorf("connected clients = %d, want >= %d", got, n)
	}
}
