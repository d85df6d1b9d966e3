package testutil

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestFreePort: the port lies below the ephemeral range and can be bound.
func TestFreePort(t *testing.T) {
	p := FreePort(t)
	if p < lowestPort || p >= EphemeralLow() {
		t.Fatalf("FreePort = %d, want one in [%d, %d)", p, lowestPort, EphemeralLow())
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("listening on FreePort's %d: %v", p, err)
	}
	l.Close()
}

// TestStartRetryingOutlastsAHolder: a start on a port another socket holds
// for a moment fails with "address already in use" and is tried again
// until the holder lets go.
func TestStartRetryingOutlastsAHolder(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	holder, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(150*time.Millisecond, func() { holder.Close() })
	tries := 0
	l := StartRetrying(t, "a listener", func() (net.Listener, error) {
		tries++
		return net.Listen("tcp", addr)
	})
	l.Close()
	if tries < 2 {
		t.Fatalf("%d tries: the first listen should have found the address in use", tries)
	}
}
