package server

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMemoryUsage checks MEMORY USAGE against the entry bytes it
// estimates: exact with SAMPLES 0, the same for elements of one size
// whatever the sample count, null for a missing key, and Redis' errors.
func TestMemoryUsage(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "str", strings.Repeat("v", 100), 0)
	// 'k' + key, the header byte, the value.
	if got, _ := c.MemoryUsage(ctx, "str").Result(); got != 1+3+1+100 {
		t.Fatalf("MEMORY USAGE of a 100-byte string = %d", got)
	}
	for i := range 50 {
		c.HSet(ctx, "h", "f"+strings.Repeat("x", 9)+string(rune('a'+i%26))+string(rune('a'+i/26)), strings.Repeat("v", 20))
	}
	// Metadata: 'k' + key + header + 16; each field: 'e' + 4 + key + 8 +
	// a 12-byte field + a 20-byte value.
	want := int64(1+1+1+16) + 50*int64(1+4+1+8+12+20)
	for _, samples := range []int{0, 1, 5, 49} {
		if got, _ := c.MemoryUsage(ctx, "h", samples).Result(); got != want {
			t.Fatalf("MEMORY USAGE h SAMPLES %d = %d, want %d", samples, got, want)
		}
	}
	// A sorted set has two entries per member; SAMPLES 0 reads them all.
	c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"})
	all, _ := c.MemoryUsage(ctx, "z", 0).Result()
	if some, _ := c.MemoryUsage(ctx, "z").Result(); all <= 19+3*2*14 || all != some {
		t.Fatalf("MEMORY USAGE of a 3-member sorted set: %d with SAMPLES 0, %d by default", all, some)
	}
	// A bitmap past 64 KiB is stored in 4 KiB fragments, zero ones not
	// at all: one bit costs its metadata and the tail of one fragment.
	c.SetBit(ctx, "bits", 1000000, 1)
	if got, _ := c.MemoryUsage(ctx, "bits").Result(); got <= 0 || got > 200 {
		t.Fatalf("MEMORY USAGE of a one-bit 122 KiB bitmap = %d", got)
	}
	if _, err := c.MemoryUsage(ctx, "missing").Result(); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Fatalf("MEMORY USAGE of a missing key: %v", err)
	}
	for _, args := range [][]any{{"memory", "usage", "h", "samples"}, {"memory", "usage", "h", "samples", "-1"}, {"memory", "usage", "h", "x", "1"}} {
		if _, err := c.Do(ctx, args...).Result(); err == nil || !strings.Contains(err.Error(), "syntax") {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, err := c.Do(ctx, "memory", "usage", "h", "samples", "x").Result(); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("SAMPLES x: %v", err)
	}
	stats, err := c.Do(ctx, "memory", "stats").Result()
	if err != nil || len(stats.([]any)) == 0 {
		t.Fatalf("MEMORY STATS = %v, %v", stats, err)
	}
	if doc, err := c.Do(ctx, "memory", "doctor").Text(); err != nil || !strings.Contains(doc, "memtables") {
		t.Fatalf("MEMORY DOCTOR = %q, %v", doc, err)
	}
}
