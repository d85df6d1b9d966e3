package server

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// replTestBatch is a replicated batch header (no records needed by the
// backlog) at seq spanning count sequence numbers, padded to size bytes.
func replTestBatch(seq uint64, count uint32, size int) []byte {
	b := make([]byte, max(size, 12))
	binary.LittleEndian.PutUint64(b, seq)
	binary.LittleEndian.PutUint32(b[8:], count)
	return b
}

// TestReplBacklog adds seeded random batches and checks every position
// against a model: the backlog serves exactly the batches from a position
// it still holds, refuses one it dropped, one inside a batch and one not
// reached yet, and stays within its limit.
func TestReplBacklog(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	const limit = 1000
	b := newReplBacklog(limit, 1)
	b.activate()
	type rec struct {
		seq   uint64
		count uint32
		size  int
	}
	var all []rec
	seq := uint64(1)
	for range 400 {
		if rng.IntN(50) == 0 {
			seq += uint64(1 + rng.IntN(3)) // a gap: the backlog starts over
			all = nil
		}
		r := rec{seq, uint32(1 + rng.IntN(4)), 12 + rng.IntN(200)}
		b.add(r.seq, r.count, replTestBatch(r.seq, r.count, r.size))
		all = append(all, r)
		seq += uint64(r.count)
		// The model: the newest batches within the limit.
		kept, bytes := len(all), 0
		for kept > 0 && (bytes+all[kept-1].size <= limit || kept == len(all)) {
			bytes += all[kept-1].size
			kept--
		}
		held := all[kept:]
		for i, r := range held {
			got, _, ok := b.from(r.seq)
			if want := len(held) - i; !ok || len(got) != want {
				t.Fatalf("from(%d): %d batches, ok=%v; want %d", r.seq, len(got), ok, want)
			}
			if s := binary.LittleEndian.Uint64(got[0]); s != r.seq {
				t.Fatalf("from(%d) starts at %d", r.seq, s)
			}
			if r.count > 1 {
				if _, _, ok := b.from(r.seq + 1); ok {
					t.Fatalf("from(%d), inside a batch, served", r.seq+1)
				}
			}
		}
		if got, _, ok := b.from(seq); !ok || len(got) != 0 {
			t.Fatalf("from(next=%d) = %d batches, %v", seq, len(got), ok)
		}
		if _, _, ok := b.from(seq + 1); ok {
			t.Fatalf("from(%d), beyond the newest, served", seq+1)
		}
		if kept > 0 {
			if _, _, ok := b.from(all[kept-1].seq); ok {
				t.Fatalf("from(%d), dropped, served", all[kept-1].seq)
			}
		}
	}
}

// BenchmarkReplBacklogAdd is the write path's cost of the backlog per
// committed batch of about 200 bytes: inactive (no replica ever
// connected) it only follows the position; active it copies the batch.
func BenchmarkReplBacklogAdd(b *testing.B) {
	for _, active := range []bool{false, true} {
		b.Run(map[bool]string{false: "inactive", true: "active"}[active], func(b *testing.B) {
			bl := newReplBacklog(replBacklogSize, 1)
			if active {
				bl.activate()
			}
			data := replTestBatch(1, 1, 200)
			b.ReportAllocs()
			for i := range b.N {
				seq := uint64(i + 1)
				binary.LittleEndian.PutUint64(data, seq)
				bl.add(seq, 1, data)
			}
		})
	}
}
