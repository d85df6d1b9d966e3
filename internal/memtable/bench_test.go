package memtable

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

const benchCapacity = 64 << 20

// benchKey writes a 16-byte user key with a random-looking but unique
// prefix, so inserts land all over the list as in a real workload.
func benchKey(buf []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(buf, i*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(buf[8:], i)
	return buf[:16]
}

// BenchmarkAdd inserts 16-byte keys with 100-byte values from all procs.
// A full memtable is swapped for a fresh one, as the engine would rotate.
func BenchmarkAdd(b *testing.B) {
	var cur atomic.Pointer[Memtable]
	cur.Store(New(benchCapacity))
	var seq atomic.Uint64
	value := make([]byte, 100)
	b.SetBytes(16 + 100)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 16)
		for pb.Next() {
			s := seq.Add(1)
			k := base.MakeInternalKey(benchKey(buf, s), base.SeqNum(s), base.KindSet)
			for {
				m := cur.Load()
				err := m.Add(k, value)
				if errors.Is(err, ErrFull) {
					cur.CompareAndSwap(m, New(benchCapacity))
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				break
			}
		}
	})
}

func fillForRead(b *testing.B, n int) *Memtable {
	m := New(n * 200)
	buf := make([]byte, 16)
	value := make([]byte, 100)
	for i := range n {
		if err := m.Add(base.MakeInternalKey(benchKey(buf, uint64(i)), base.SeqNum(i+1), base.KindSet), value); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkGet probes present keys in a memtable of 100k entries.
func BenchmarkGet(b *testing.B) {
	const n = 100_000
	m := fillForRead(b, n)
	rng := rand.New(rand.NewPCG(1, 1))
	buf := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, ok := m.Get(benchKey(buf, rng.Uint64N(n)), base.SeqNumMax); !ok {
			b.Fatal("key not found")
		}
	}
}

// BenchmarkIterNext measures a full forward scan per entry.
func BenchmarkIterNext(b *testing.B) {
	m := fillForRead(b, 100_000)
	it := m.NewIter()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !it.Next() {
			it.First()
		}
	}
}
