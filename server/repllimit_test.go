package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplicaOutputLimit connects a replica that asks for the stream and
// then reads nothing, so that what the primary holds for it grows with
// every write: past client-output-buffer-limit replica's hard limit, or
// past its soft limit for longer than the soft time, the primary
// disconnects it and counts it in INFO; under the limits it stays.
func TestReplicaOutputLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, limit string
		soft        bool
	}{
		{"hard", "replica 256kb 0 0", false},
		{"soft", "replica 0 64kb 1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := startServer(t, nil)
			pc := newClient(t, primary, 2, nil)
			if _, msg := do(ctx, pc, "config", "set", "client-output-buffer-limit", tc.limit); msg != "" {
				t.Fatal(msg)
			}
			// A replica of another dataset takes a full copy, then the
			// stream; it never reads either.
			stalled := dialRaw(t, primary)
			stalled.send("*6\r\n$7\r\nLSMSYNC\r\n$1\r\n2\r\n$5\r\nother\r\n$1\r\n1\r\n$1\r\n0\r\n$1\r\n?\r\n")
			waitFor(t, "the stream to start", func() bool {
				primary.repl.mu.Lock()
				defer primary.repl.mu.Unlock()
				return len(primary.repl.replicas) == 1
			})
			// pending is what the primary holds for the replica, -1 once
			// it is gone.
			pending := func() int64 {
				primary.repl.mu.Lock()
				defer primary.repl.mu.Unlock()
				for _, rs := range primary.repl.replicas {
					return primary.pending(rs)
				}
				return -1
			}
			closed := func() bool { return pending() < 0 }
			value := strings.Repeat("v", 16<<10)
			// Below the soft limit, the stream stays past the soft time.
			do(ctx, pc, "set", "small", "v")
			time.Sleep(1500 * time.Millisecond)
			if closed() {
				t.Fatal("a replica below the limits was disconnected")
			}
			// Writes fill the socket's buffers first, then the primary's
			// share of the backlog for the replica: until the hard limit
			// closes it, or until past the soft limit for the soft time.
			// The kernel may still take some of the stream whenever a
			// loaded machine lets the stream run, and what is pending
			// then falls under the soft limit again: the writes go on,
			// one each time it does, until the primary disconnects the
			// replica. below is when the pending bytes were last seen
			// under the soft limit, before the write that passed it.
			var below time.Time
			i := 0
			for deadline := time.Now().Add(time.Minute); !closed(); i++ {
				if time.Now().After(deadline) {
					t.Fatalf("still connected a minute on, %d bytes pending", pending())
				}
				if tc.soft && pending() > 64<<10 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				below = time.Now()
				if _, msg := do(ctx, pc, "set", "k"+strconv.Itoa(i%64), value); msg != "" {
					t.Fatal(msg)
				}
			}
			if d := time.Since(below); tc.soft && d < 900*time.Millisecond {
				t.Fatalf("disconnected %v after passing the soft limit of 1 s", d)
			}
			info, _ := do(ctx, pc, "info", "stats")
			if !strings.Contains(info.(string), "client_output_buffer_limit_disconnections:1\r\n") {
				t.Fatalf("INFO stats after the disconnect:\n%s", info)
			}
		})
	}
}
