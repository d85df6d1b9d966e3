package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// TestStreamReclaim deletes a stream with entries, a group and a full PEL:
// DEL writes the metadata only, and the reclaimer's compaction drops
// every element of the old version (entries, pending entries, the
// consumer's records of them).
func TestStreamReclaim(t *testing.T) {
	const n = 20_000
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	p := c.Pipeline()
	for i := 1; i <= n; i++ {
		p.Do(ctx, "XADD", "big", fmt.Sprintf("%d-0", i), "field", fmt.Sprintf("value-%08d", i))
		if p.Len() == 200 || i == n {
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	eq(t, "XGROUP CREATE", c.XGroupCreate(ctx, "big", "g", "0").Val(), "OK")
	if err := c.Do(ctx, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "big", ">").Err(); err != nil {
		t.Fatal(err)
	}
	eq(t, "XPENDING count", c.XPending(ctx, "big", "g").Val().Count, int64(n))
	if err := s.DB().Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	filtered := s.DB().Metrics().Compaction.Filtered
	start := time.Now()
	eq(t, "DEL", c.Del(ctx, "big").Val(), int64(1))
	t.Logf("DEL of a stream of %d entries and %d pending answered in %v", n, n, time.Since(start))
	for deadline := time.Now().Add(3 * time.Minute); !s.ks.reclaim.idle(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reclaimer did not finish")
		}
	}
	// Entries, pending entries and the consumer's ids: 3n elements.
	if got := s.DB().Metrics().Compaction.Filtered - filtered; got < 3*n {
		t.Errorf("the filter dropped %d entries, want at least %d", got, 3*n)
	}
	eq(t, "XLEN", c.XLen(ctx, "big").Val(), int64(0))
}

// FuzzStreamEntry feeds stored entry values to the decoder: damaged
// bytes are a corruption error, never a panic, and what decodes encodes
// back to the same bytes.
func FuzzStreamEntry(f *testing.F) {
	f.Add(encodeStreamEntry(3, [][]byte{[]byte("f"), []byte("v"), {}, []byte("x")}))
	f.Add([]byte{0, 1, 1})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, v []byte) {
		e, err := decodeStreamEntry([]byte("k"), streamID{1, 2}, v)
		if err != nil {
			return
		}
		if len(e.fields)%2 != 0 {
			t.Fatalf("%d fields: not pairs", len(e.fields))
		}
		// Varints have several encodings; compare the decoded values.
		back, err := decodeStreamEntry([]byte("k"), e.id, encodeStreamEntry(e.node, e.fields))
		if err != nil || back.node != e.node || len(back.fields) != len(e.fields) {
			t.Fatalf("round trip: %v, %+v vs %+v", err, back, e)
		}
		for i := range e.fields {
			if !bytes.Equal(back.fields[i], e.fields[i]) {
				t.Fatalf("field %d: %q vs %q", i, back.fields[i], e.fields[i])
			}
		}
	})
}
