package server

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// unsubscribeRaces repeats, tries times, issue 24's interleaving on the
// server at network/addr: client A, subscribed to a channel, writes
// UNSUBSCRIBE without reading the reply; then B publishes to the channel
// and reads its reply. A's command reached the server before B's, so as in
// Redis the message must not reach A. It returns how many tries delivered
// it.
func unsubscribeRaces(t *testing.T, network, addr string, tries int) int {
	dial := func() *rawConn {
		nc, err := net.DialTimeout(network, addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(time.Minute))
		return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	}
	a, b := dial(), dial()
	delivered := 0
	for range tries {
		a.send("SUBSCRIBE ch\r\n")
		a.reply()
		a.send("UNSUBSCRIBE ch\r\n")
		b.send("PUBLISH ch m\r\n")
		b.reply()
		if r := a.reply(); strings.Contains(r, "message") {
			delivered++
			a.reply() // the UNSUBSCRIBE confirmation
		}
	}
	return delivered
}

func TestPubsubUnsubscribeThenPublish(t *testing.T) {
	const tries = 300
	s := startServer(t, nil)
	if n := unsubscribeRaces(t, "tcp", s.Addr().String(), tries); n != 0 {
		t.Errorf("lsmgo delivered a message published after an UNSUBSCRIBE had arrived in %d of %d tries", n, tries)
	}
}

// TestPubsubUnsubscribeThenPublishRedis checks the harness: Redis
// delivers none.
func TestPubsubUnsubscribeThenPublishRedis(t *testing.T) {
	const tries = 300
	if n := unsubscribeRaces(t, "unix", startRedis(t), tries); n != 0 {
		t.Errorf("redis delivered a message published after an UNSUBSCRIBE had arrived in %d of %d tries", n, tries)
	}
}
