package testutil

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// StartRedis starts redis-server in a temporary directory, listening only
// on a unix socket (port 0 turns TCP off), with persistence off, and
// returns the socket's path; t's cleanup stops it. Without redis-server
// the test is skipped, except under CI, which installs it.
func StartRedis(t testing.TB) string { return startRedis(t, 0) }

// StartRedisWith is StartRedis with more of redis-server's command-line
// settings ("--user", "alice", "on", ...).
func StartRedisWith(t testing.TB, args ...string) string { return startRedis(t, 0, args...) }

// StartRedisTCP is StartRedis listening on a loopback TCP port too, for
// tests in which Redis itself connects to another server (MIGRATE); it
// returns the socket's path and the TCP address. redis-server's port 0
// turns TCP off, so it is given a free port, and started again on another
// when that one was taken before it bound it.
func StartRedisTCP(t testing.TB) (sock, addr string) {
	t.Helper()
	var port int
	sock = StartRetrying(t, "redis-server", func() (string, error) {
		port = FreePort(t)
		return tryStartRedis(t, port)
	})
	return sock, fmt.Sprintf("127.0.0.1:%d", port)
}

func startRedis(t testing.TB, port int, args ...string) string {
	t.Helper()
	sock, err := tryStartRedis(t, port, args...)
	if err != nil {
		t.Fatal(err)
	}
	return sock
}

// tryStartRedis starts redis-server and waits until its socket answers. It
// fails with the log of a redis-server that exited before that.
func tryStartRedis(t testing.TB, port int, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server not on PATH; CI installs Debian's redis-server package")
		}
		t.Skip("redis-server not on PATH (apt-get install redis-server); skipping the differential test")
	}
	// A unix socket path must fit in about 100 bytes, which t.TempDir
	// may not.
	dir, err := os.MkdirTemp("", "lsmgo-redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	logFile := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--unixsocket", sock, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", logFile)
	cmd.Args = append(cmd.Args, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // only this redis-server's PID
		<-exited
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if nc, err := net.Dial("unix", sock); err == nil {
			nc.Close()
			return sock, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile)
			return "", fmt.Errorf("redis-server exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("redis-server did not start:\n%s", log)
		}
	}
}

// Client is a minimal synchronous RESP client for tests.
type Client struct {
	nc  net.Conn
	rd  *resp.Reader
	out []byte
}

// Dial connects to network/addr; t's cleanup closes the connection.
func Dial(t testing.TB, network, addr string) *Client {
	t.Helper()
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Client{nc: nc, rd: resp.NewReader(nc, resp.Limits{})}
}

// Do sends one command and returns its reply, copied out of the reader's
// buffer; an I/O error fails t.
func (c *Client) Do(t testing.TB, args ...[]byte) resp.Value {
	t.Helper()
	c.out = resp.AppendCommand(c.out[:0], args...)
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Write(c.out); err != nil {
		t.Fatal(err)
	}
	v, err := c.rd.ReadValue()
	if err != nil {
		t.Fatal(err)
	}
	return CloneValue(v)
}

// Read reads one more value, a pushed message, without sending anything.
func (c *Client) Read(t testing.TB) resp.Value {
	t.Helper()
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	v, err := c.rd.ReadValue()
	if err != nil {
		t.Fatal(err)
	}
	return CloneValue(v)
}

// CloneValue copies the parts of v that alias a reader's buffer.
func CloneValue(v resp.Value) resp.Value {
	v.Str = bytes.Clone(v.Str)
	for i := range v.Array {
		v.Array[i] = CloneValue(v.Array[i])
	}
	return v
}
