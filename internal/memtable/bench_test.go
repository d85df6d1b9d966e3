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

// engineKeyCount, engineKey and engineValueSize mirror lsmgo-bench's
// fillrandom at 1M keys: 32-byte keys that hold a big-endian key number
// in their first 8 bytes and '0' padding after it, 128-byte values, every
// key written once in random order.
const (
	engineKeyCount  = 1_000_000
	engineValueSize = 128
)

func engineKey(buf []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(buf, 2*i)
	for j := 8; j < 32; j++ {
		buf[j] = '0'
	}
	return buf[:32]
}

// enginePermutation returns the key numbers [0, engineKeyCount) in a fixed
// random order.
func enginePermutation() []uint32 {
	p := make([]uint32, engineKeyCount)
	for i := range p {
		p[i] = uint32(i)
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// newEngineBench returns fillrandom's key order, an empty mapped memtable
// of the engine's default 32 MiB, a key buffer and a value.
func newEngineBench(b *testing.B) (perm []uint32, m *Memtable, buf, value []byte) {
	m = NewMapped(32 << 20)
	b.Cleanup(m.Free)
	return enginePermutation(), m, make([]byte, 32), make([]byte, engineValueSize)
}

// BenchmarkAddEngineKeys inserts fillrandom's keys from one goroutine into
// a mapped memtable of the engine's default 32 MiB, reset when full as the
// engine's pool recycles it: the cost per Set that the engine's write
// path pays in the skiplist.
func BenchmarkAddEngineKeys(b *testing.B) {
	perm, m, buf, value := newEngineBench(b)
	b.SetBytes(32 + engineValueSize)
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := range b.N {
		k := base.MakeInternalKey(engineKey(buf, uint64(perm[i%engineKeyCount])), base.SeqNum(i+1), base.KindSet)
		if err := m.Add(k, value); err != nil {
			if !errors.Is(err, ErrFull) {
				b.Fatal(err)
			}
			m.Reset()
			if err := m.Add(k, value); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkGetEngineKeys probes present keys in a full 32 MiB memtable of
// fillrandom's keys.
func BenchmarkGetEngineKeys(b *testing.B) {
	perm, m, buf, value := newEngineBench(b)
	n := 0
	for ; ; n++ {
		k := base.MakeInternalKey(engineKey(buf, uint64(perm[n])), base.SeqNum(n+1), base.KindSet)
		if err := m.Add(k, value); errors.Is(err, ErrFull) {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	defer reportCPU(b)()
	for range b.N {
		if _, _, ok := m.Get(engineKey(buf, uint64(perm[rng.IntN(n)])), base.SeqNumMax); !ok {
			b.Fatal("key not found")
		}
	}
}

// reportCPU resets the benchmark timer and returns a function that reports
// the process's CPU time per operation since then: on a shared machine
// wall time per op moves with other tenants' load, CPU time much less.
func reportCPU(b *testing.B) func() {
	b.ResetTimer()
	start := processCPU(b)
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
	}
}
