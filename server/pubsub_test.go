package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSlowSubscriberClosed subscribes a client that never reads, and
// publishes to it until the server closes it for passing
// client-output-buffer-limit pubsub: first by the hard limit, then by
// the soft limit with no grace time. However much is published, the
// server's heap must stay within a few times the limit, and the
// disconnection must show in INFO. No step waits for time to pass:
// each loop runs until what it waits for has happened.
func TestSlowSubscriberClosed(t *testing.T) {
	for _, limit := range []string{"pubsub 1mb 0 0", "pubsub 0 256kb 0"} {
		t.Run(limit, func(t *testing.T) {
			s := startServer(t, nil)
			ctx := context.Background()
			pub := newClient(t, s, 2, nil)
			if err := pub.ConfigSet(ctx, "client-output-buffer-limit", limit).Err(); err != nil {
				t.Fatal(err)
			}
			sub := dialRaw(t, s)
			sub.send("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nslow\r\n")
			if got := sub.reply(); !strings.Contains(got, "subscribe") {
				t.Fatalf("SUBSCRIBE: %q", got)
			}
			// From here on the subscriber reads nothing.
			msg := bytes.Repeat([]byte("x"), 64<<10)
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var peak uint64
			published := 0
			for deadline := time.Now().Add(2 * time.Minute); ; published++ {
				n, err := pub.Publish(ctx, "slow", msg).Result()
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("subscriber still connected after %d messages (%d MiB)", published, published*len(msg)>>20)
				}
				if published%8 == 0 {
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapAlloc)
					// The kernel's socket buffers take some before the
					// queue grows at all; past them the queue alone grows,
					// to the limit.
					if grown := int64(peak) - int64(before.HeapAlloc); grown > 64<<20 {
						t.Fatalf("heap grew by %d MiB while publishing to a subscriber that does not read", grown>>20)
					}
				}
			}
			info := pub.Info(ctx, "stats").Val()
			if !strings.Contains(info, "client_output_buffer_limit_disconnections:1\r\n") {
				t.Errorf("INFO stats does not count the disconnection:\n%s", info)
			}
			if got := pub.PubSubNumSub(ctx, "slow").Val()["slow"]; got != 0 {
				t.Errorf("NUMSUB slow = %d after the subscriber was closed", got)
			}
			// The subscriber finds its connection closed once it reads
			// what the kernel had buffered.
			sub.nc.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.Copy(io.Discard, sub.nc); err != nil && !strings.Contains(err.Error(), "reset") {
				t.Errorf("reading the closed subscriber: %v", err)
			}
			t.Logf("%s: closed after %d messages of 64 KiB; heap peak %d MiB over the start", limit, published,
				(int64(peak)-int64(before.HeapAlloc))>>20)
		})
	}
}

// TestPubsubInfo checks INFO stats' pubsub_channels and pubsub_patterns
// and that a closing subscriber's subscriptions go with it.
func TestPubsubInfo(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	ps := c.Subscribe(ctx, "a", "b")
	if err := ps.PSubscribe(ctx, "p*"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		info := c.Info(ctx, "stats").Val()
		if strings.Contains(info, "pubsub_channels:2\r\n") && strings.Contains(info, "pubsub_patterns:1\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO stats after subscribing to 2 channels and 1 pattern:\n%s", info)
		}
	}
	if n := c.Publish(ctx, "pa", "x").Val(); n != 1 {
		t.Fatalf("PUBLISH pa reached %d subscribers, want 1", n)
	}
	m, err := ps.ReceiveMessage(ctx)
	if err != nil || m.Pattern != "p*" || m.Channel != "pa" || m.Payload != "x" {
		t.Fatalf("message %+v, %v", m, err)
	}
	ps.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		info := c.Info(ctx, "stats").Val()
		if strings.Contains(info, "pubsub_channels:0\r\n") && strings.Contains(info, "pubsub_patterns:0\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO stats after the subscriber closed:\n%s", fmt.Sprint(info))
		}
	}
}

// TestPubsubDeliveryOrder checks, many times over, that a message is
// delivered to a subscriber that waits idle, and that a message published
// before a subscriber's command arrives comes before that command's
// reply. (The second once failed about one time in 200 under -race, when
// a read found the command ready although a publisher had just moved its
// deadline to wake it.)
func TestPubsubDeliveryOrder(t *testing.T) {
	s := startServer(t, nil)
	sub := dialDiff(t, "tcp", s.Addr().String(), 2)
	pub := dialDiff(t, "tcp", s.Addr().String(), 2)
	sub.do(t, "SUBSCRIBE", "c")
	for i := range 2000 {
		msg := fmt.Sprint(i)
		pub.send([]string{"PUBLISH", "c", msg})
		if v, err := pub.flushRead(1); err != nil || v[0].Int != 1 {
			t.Fatalf("PUBLISH: %v, %v", v, err)
		}
		if i%2 == 0 {
			sub.send([]string{"PING", "x"})
		}
		v, err := sub.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(v[0], exact); len(v[0].Array) != 3 || string(v[0].Array[2].Str) != msg {
			t.Fatalf("round %d: subscriber got %s before the message", i, got)
		}
		if i%2 == 0 {
			if v, err := sub.flushRead(1); err != nil || len(v[0].Array) != 2 {
				t.Fatalf("round %d: PING answered %v, %v", i, v, err)
			}
		}
	}
}
