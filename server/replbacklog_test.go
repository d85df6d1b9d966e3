package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"syscall"
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

// replTestFrame is data as a RESP bulk string, as the backlog holds it.
func replTestFrame(data []byte) []byte {
	return append(fmt.Appendf(nil, "$%d\r\n", len(data)), append(data, '\r', '\n')...)
}

// TestReplBacklog adds seeded random batches and checks every position
// against a model: the backlog serves exactly the frames of the batches
// from a position it still holds, whole or in pieces of about the asked
// size, refuses one it dropped, one inside a batch and one not reached
// yet, and stays within its limit (on the batches' bytes, and half as
// much again on their frames), taking chunks (and pages of its index) as
// frames come and giving them back as they leave. Frames cross chunks and
// the index crosses pages in both cases.
func TestReplBacklog(t *testing.T) {
	for _, tc := range []struct{ limit, maxBatch int }{{1000, 200}, {300 << 10, 6000}} {
		t.Run(strconv.Itoa(tc.limit), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(23, uint64(tc.limit)))
			b := newReplBacklog(tc.limit, 1)
			b.activate()
			wake := b.watch()
			defer b.unwatch(wake)
			type rec struct {
				seq   uint64
				count uint32
				frame []byte
				size  int
			}
			var all []rec
			seq := uint64(1)
			for step := range 400 {
				if rng.IntN(50) == 0 {
					seq += uint64(1 + rng.IntN(3)) // a gap: the backlog starts over
					all = nil
				}
				r := rec{seq: seq, count: uint32(1 + rng.IntN(4))}
				data := replTestBatch(r.seq, r.count, 12+rng.IntN(tc.maxBatch))
				for i := 12; i < len(data); i++ {
					data[i] = byte(rng.Uint32())
				}
				r.frame, r.size = replTestFrame(data), len(data)
				b.add(r.seq, r.count, data)
				select {
				case <-wake:
				default:
					t.Fatal("add did not wake the watcher")
				}
				all = append(all, r)
				seq += uint64(r.count)
				// The model: the newest batches within the limit.
				kept, size, framed := len(all), 0, 0
				for kept > 0 && (size+all[kept-1].size <= tc.limit && framed+len(all[kept-1].frame) <= tc.limit*3/2 || kept == len(all)) {
					size += all[kept-1].size
					framed += len(all[kept-1].frame)
					kept--
				}
				held := all[kept:]
				if first, n := b.extent(); first != held[0].seq || n != size {
					t.Fatalf("extent %d, %d bytes; want %d, %d", first, size, held[0].seq, size)
				}
				if held := uint64(len(b.chunks) * b.chunk); held > uint64(framed)+2*uint64(b.chunk) {
					t.Fatalf("%d chunks of %d bytes hold %d bytes of frames", len(b.chunks), b.chunk, framed)
				}
				if len(b.index) > b.n/b.page+2 {
					t.Fatalf("%d index pages of %d entries hold %d", len(b.index), b.page, b.n)
				}
				// A read from held[i] returns the frames from its own on:
				// a suffix of all the held frames, built once per batch
				// rather than once per held batch.
				var frames []byte
				for _, h := range held {
					frames = append(frames, h.frame...)
				}
				want := frames
				for i, r := range held {
					want, frames = frames, frames[len(r.frame):]
					if r.count > 1 && b.holds(r.seq+1) {
						t.Fatalf("holds(%d), inside a batch", r.seq+1)
					}
					// Under -short, reads start from every eighth held
					// batch, a different eighth each step, and the
					// newest: reading from each is quadratic in the
					// batches held, most of the test's time under -race.
					if testing.Short() && (i+step)%8 != 0 && i != len(held)-1 {
						continue
					}
					got, next, caughtUp, ok := b.read(r.seq, nil, math.MaxInt)
					if !ok || !caughtUp || next != seq || !bytes.Equal(got, want) {
						t.Fatalf("read(%d): %d bytes to %d, caught up %v, ok %v; want %d bytes to %d",
							r.seq, len(got), next, caughtUp, ok, len(want), seq)
					}
					// In pieces: each at least one batch, about limit bytes.
					limit := rng.IntN(3 * tc.maxBatch)
					got, at := got[:0], r.seq
					for {
						n := len(got)
						var caughtUp bool
						got, at, caughtUp, ok = b.read(at, got, limit)
						if !ok || len(got) == n {
							t.Fatalf("read(%d) in pieces of %d: ok %v, %d bytes", r.seq, limit, ok, len(got)-n)
						}
						if caughtUp {
							break
						}
					}
					if at != seq || !bytes.Equal(got, want) {
						t.Fatalf("read(%d) in pieces of %d: %d bytes to %d; want %d to %d", r.seq, limit, len(got), at, len(want), seq)
					}
				}
				if got, next, caughtUp, ok := b.read(seq, nil, math.MaxInt); !ok || !caughtUp || len(got) != 0 || next != seq {
					t.Fatalf("read(next=%d) = %d bytes, %v", seq, len(got), ok)
				}
				if b.holds(seq + 1) {
					t.Fatalf("holds(%d), beyond the newest", seq+1)
				}
				if kept > 0 && b.holds(all[kept-1].seq) {
					t.Fatalf("holds(%d), dropped", all[kept-1].seq)
				}
			}
		})
	}
}

// TestReplBacklogLargeBatch: a batch larger than the limit stays alone.
func TestReplBacklogLargeBatch(t *testing.T) {
	b := newReplBacklog(1000, 1)
	b.activate()
	b.add(1, 1, replTestBatch(1, 1, 100))
	big := replTestBatch(2, 3, 5000)
	b.add(2, 3, big)
	if b.holds(1) || !b.holds(2) {
		t.Fatal("the batch before the large one is held, or the large one is not")
	}
	got, next, _, ok := b.read(2, nil, 10)
	if !ok || next != 5 || !bytes.Equal(got, replTestFrame(big)) {
		t.Fatalf("read(2) = %d bytes to %d, %v", len(got), next, ok)
	}
	b.add(5, 1, replTestBatch(5, 1, 100))
	if b.holds(2) || !b.holds(5) {
		t.Fatal("the large batch outlived the limit")
	}
}

// BenchmarkReplBacklogAdd is the write path's cost of the backlog per
// committed batch of about 200 bytes: inactive (no replica ever
// connected) it only follows the position; active it keeps the batch,
// measured once the backlog is full (it then drops a batch per batch).
// cpu-ns/op is the process' CPU time (getrusage, garbage collection
// included) per batch, steadier than ns/op on a shared machine.
func BenchmarkReplBacklogAdd(b *testing.B) {
	for _, active := range []bool{false, true} {
		b.Run(map[bool]string{false: "inactive", true: "active"}[active], func(b *testing.B) {
			bl := newReplBacklog(replBacklogSize, 1)
			if active {
				bl.activate()
			}
			data := replTestBatch(1, 1, 200)
			seq := uint64(1)
			add := func() {
				binary.LittleEndian.PutUint64(data, seq)
				bl.add(seq, 1, data)
				seq++
			}
			for range replBacklogSize / len(data) {
				add()
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				add()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process' user and system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
