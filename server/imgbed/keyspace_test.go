package imgbed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server"
)

// TestRedisKeyspaceNeverSeesImages runs the Redis server and the image
// host on one DB: KEYS, SCAN and DBSIZE over RESP do not see images, and
// FLUSHALL and FLUSHDB do not delete them.
func TestRedisKeyspaceNeverSeesImages(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.HTTPAddr, cfg.Dir, cfg.AppendFsync = "127.0.0.1:0", "", t.TempDir(), "no"
	cfg.LogOutput = io.Discard
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	h, err := New(s.DB(), Config{SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	th := &testHost{Host: h, db: s.DB(), srv: httptest.NewServer(h.Handler())}
	defer th.srv.Close()
	data := encodePNG(t, gradient(600, 400))
	_, r := th.uploadRaw(t, data, "image/png")
	if resp, _ := th.get(t, r.Data.Links.ThumbnailURL); resp.StatusCode != 200 {
		t.Fatalf("thumbnail: %d", resp.StatusCode)
	}

	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	cmd := func(args ...string) string {
		fmt.Fprintf(conn, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(a), a)
		}
		return readReply(t, rd)
	}
	cmd("SET", "user:1", "x")
	if got := cmd("KEYS", "*"); got != "$user:1" {
		t.Errorf("KEYS * = %q, want only user:1", got)
	}
	if got := cmd("SCAN", "0", "COUNT", "1000"); got != "$0 $user:1" {
		t.Errorf("SCAN = %q, want only user:1", got)
	}
	if got := cmd("DBSIZE"); got != ":1" {
		t.Errorf("DBSIZE = %q, want :1", got)
	}
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		if got := cmd(flush); got != "+OK" {
			t.Fatalf("%s: %q", flush, got)
		}
		if resp, body := th.get(t, r.Data.Links.URL); resp.StatusCode != 200 || len(body) != len(data) {
			t.Fatalf("after %s: %d", flush, resp.StatusCode)
		}
	}
	if got := cmd("DBSIZE"); got != ":0" {
		t.Errorf("DBSIZE after FLUSHALL = %q", got)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
}

// readReply reads one RESP reply and flattens it into one line: arrays
// become their elements joined by spaces, bulk strings "$" + the string.
func readReply(t testing.TB, rd *bufio.Reader) string {
	t.Helper()
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '*':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = readReply(t, rd)
		}
		return strings.Join(parts, " ")
	case '$':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		if n < 0 {
			return "$nil"
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			t.Fatal(err)
		}
		return "$" + string(buf[:n])
	}
	return line
}
