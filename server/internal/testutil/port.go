package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lowestPort is the lowest port FreePort picks, the first one that is
// not privileged: the ports below it are system services' (CI runs as
// root, which may bind them).
const lowestPort = 1024

// EphemeralLow is the first port of the kernel's ephemeral range, from
// which it gives outgoing connections their local port (Linux's
// ip_local_port_range; its default start where that cannot be read).
func EphemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}

// FreePort returns a loopback TCP port nothing listens on now, for a
// child process that must be given its port: one that cannot listen on
// port 0 and say which port it got (redis-server, Sentinel, nutcracker,
// weed), or one restarted on the same address. The port is picked at
// random below the ephemeral range: a port in that range, as port 0
// gives, may be taken by any outgoing connection (the test's own, or
// the child's) before the child binds it; below it, only a process that
// binds that very port can take it, which StartRetrying's callers start
// the child again for.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := FreePortErr()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreePortErr is FreePort for a helper without a testing.TB.
func FreePortErr() (int, error) {
	high := EphemeralLow()
	if high <= lowestPort+1000 {
		return 0, fmt.Errorf("testutil: the ephemeral port range starts at %d: no room below it for a free port", high)
	}
	var last error
	for range 100 {
		port := lowestPort + rand.IntN(high-lowestPort)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("testutil: no free port below %d in 100 tries: %w", high, last)
}

// AddrInUse reports whether err, or the log text it carries, says a
// listen failed because another socket holds the address.
func AddrInUse(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "address already in use")
}

// StartRetrying calls start, which starts a child process on a port it
// was given and waits until the child serves, until it succeeds: a start
// that fails because the port was taken (AddrInUse) is tried again after
// a pause, at most five times in all; any other failure, or the fifth,
// fails t. Each call may pick a new port or keep the old one (a restart
// on the same address): what takes a port below the ephemeral range is
// mostly a moment's check like FreePort's own, gone a moment later.
func StartRetrying[T any](t testing.TB, what string, start func() (T, error)) T {
	t.Helper()
	for try := 1; ; try++ {
		v, err := start()
		if err == nil {
			return v
		}
		if !AddrInUse(err) || try == 5 {
			t.Fatalf("starting %s (try %d): %v", what, try, err)
		}
		t.Logf("%s: its address was in use (try %d): %v", what, try, err)
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
}
