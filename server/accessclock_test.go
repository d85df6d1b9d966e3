package server

import (
	"context"
	"testing"
	"time"
)

// TestAccessClock: a slot's second only moves forward, an unused key is
// idle since the start, and commands that only inspect a key leave its
// idle time alone while reads and TOUCH reset it.
func TestAccessClock(t *testing.T) {
	var ac accessClock
	start := time.Unix(1000, 0)
	if got := ac.idle([]byte("k"), 1050, start); got != 50 {
		t.Fatalf("idle of an unused key = %d, want 50", got)
	}
	ac.touch([]byte("k"), 1040)
	ac.touch([]byte("k"), 1030) // older: ignored
	if got := ac.idle([]byte("k"), 1050, start); got != 10 {
		t.Fatalf("idle after a use at 1040 = %d, want 10", got)
	}

	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "foo", "bar", 0)
	// Age the key's slot instead of sleeping; the slot is atomic, so the
	// test may write it while the server runs.
	slot := &s.access.slots[accessSlot([]byte("foo"))]
	old := uint32(time.Now().Unix() - 100)
	slot.Store(old)
	for _, cmd := range [][]any{{"ttl", "foo"}, {"type", "foo"}, {"exists", "foo"}, {"object", "encoding", "foo"}, {"object", "idletime", "foo"}} {
		c.Do(ctx, cmd...)
	}
	if got := slot.Load(); got != old {
		t.Fatalf("TTL, TYPE, EXISTS or OBJECT moved the key's access second from %d to %d", old, got)
	}
	// A reset moves the slot. The idle time, in whole seconds, is then at
	// most the time since just before the resetting command plus the
	// second the rounding may add, however long a loaded machine takes
	// between the commands (the idle time is also capped by the server's
	// age, so the slot's move is what tells a reset here).
	used := time.Now()
	if n, _ := c.Touch(ctx, "foo", "missing").Result(); n != 1 {
		t.Fatalf("TOUCH = %d, want 1", n)
	}
	if idle, _ := c.ObjectIdleTime(ctx, "foo").Result(); idle > time.Since(used)+time.Second || slot.Load() == old {
		t.Fatalf("idle after TOUCH = %v, %v after it", idle, time.Since(used))
	}
	slot.Store(old)
	used = time.Now()
	c.Get(ctx, "foo")
	if idle, _ := c.ObjectIdleTime(ctx, "foo").Result(); idle > time.Since(used)+time.Second || slot.Load() == old {
		t.Fatalf("idle after GET = %v, %v after it", idle, time.Since(used))
	}
	if _, err := c.ObjectIdleTime(ctx, "missing").Result(); err == nil {
		t.Fatal("OBJECT IDLETIME of a missing key: no nil reply")
	}
}
