package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// testPanicCommand is registered only in the test binary: it locks its
// key, stages a write of it, and panics, as a buggy handler would.
const testPanicCommand = "lsmgo-test-panic"

func init() {
	register(spec{
		name: testPanicCommand, arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1,
		group: "server", since: "0.0.0", summary: "Test only: panics holding its key's lock.",
		run: func(c *conn, _ *command, args [][]byte) error {
			held := c.lock(args[1:2], 1)
			defer c.unlock(held)
			c.s.ks.putString(c.batch, &c.scratch, args[1], stringValue{val: []byte("half-written")})
			c.wr.ArrayHeader(2) // a reply cut short
			panic("test panic in " + testPanicCommand)
		},
	})
}

// TestHandlerPanicClosesOnlyItsConnection checks the last line of
// defence: a panicking handler, alone or inside EXEC, costs its client the
// connection, nothing more.
func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	s := startServer(t, nil)
	bystander := dialRaw(t, s)
	bystander.send("SET k before\r\n")
	eq(t, "bystander SET", bystander.reply(), "+OK\r\n")
	// The connection closes without a flush (recoverHandler says why), so
	// replies still buffered from the same pipeline are lost with it.
	for i, tc := range []struct{ name, in string }{
		{"alone", "SET a 1\r\n" + testPanicCommand + " k\r\nSET a 2\r\n"},
		{"inside EXEC", "MULTI\r\nSET x 1\r\n" + testPanicCommand + " k\r\nSET y 1\r\nEXEC\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.send(tc.in)
			r.expectClosed("")
			waitFor(t, "the panic counted", func() bool {
				return strings.Contains(infoText(t, s), "total_command_panics:"+string(rune('1'+i))+"\r\n")
			})
			// The key the handler locked is writable at once, and what it
			// staged was never applied.
			bystander.nc.SetDeadline(time.Now().Add(5 * time.Second))
			bystander.send("GET k\r\nSET k after\r\nGET k\r\nMGET a x y\r\n")
			eq(t, "k untouched", bystander.reply(), "$6\r\nbefore\r\n")
			eq(t, "k writable", bystander.reply(), "+OK\r\n")
			eq(t, "k written", bystander.reply(), "$5\r\nafter\r\n")
			eq(t, "no command after the panic ran, nor EXEC's", bystander.reply(),
				"*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n")
			bystander.send("SET k before\r\n")
			eq(t, "bystander SET", bystander.reply(), "+OK\r\n")
		})
	}
	code, body := httpGet(t, "http://"+s.HTTPAddr()+"/metrics")
	if code != 200 || !strings.Contains(body, "\nlsmgo_command_panics_total 2\n") {
		t.Errorf("/metrics: %d, lacks lsmgo_command_panics_total 2", code)
	}
	checkAlive(t, s)
}

func infoText(t *testing.T, s *Server) string {
	t.Helper()
	c := newClient(t, s, 2, nil)
	defer c.Close()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return info
}
