package sstable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
)

// benchTable builds a table of n keys "key%08d" with 100-byte values and
// opens it with a cache big enough to hold it.
func benchTable(b *testing.B, n int, c Compression) (*Reader, [][]byte) {
	keys := make([][]byte, n)
	entries := make([]entry, n)
	value := make([]byte, 100)
	for i := range entries {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		entries[i] = entry{base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet), value}
	}
	data, _ := buildTable(b, entries, WriterOptions{BlockSize: 4096, BloomBitsPerKey: 10, Compression: c})
	r, err := openTable(data, ReaderOptions{Cache: cache.New(64 << 20), FileNum: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r, keys
}

func BenchmarkGet(b *testing.B) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		b.Run(c.String(), func(b *testing.B) {
			r, keys := benchTable(b, 100000, c)
			rng := rand.New(rand.NewPCG(1, 1))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, found, err := r.Get(keys[rng.IntN(len(keys))], base.SeqNumMax); !found || err != nil {
					b.Fatal("missing key", err)
				}
			}
		})
	}
}

func BenchmarkGetAbsent(b *testing.B) {
	r, _ := benchTable(b, 100000, NoCompression)
	key := []byte("key-absent")
	b.ReportAllocs()
	for b.Loop() {
		r.Get(key, base.SeqNumMax)
	}
}

func BenchmarkIterNext(b *testing.B) {
	r, _ := benchTable(b, 100000, SnappyCompression)
	it := r.NewIter(nil, nil)
	defer it.Close()
	it.First()
	b.ReportAllocs()
	for b.Loop() {
		if !it.Next() {
			it.First()
		}
	}
}

func BenchmarkIterPrev(b *testing.B) {
	r, _ := benchTable(b, 100000, SnappyCompression)
	it := r.NewIter(nil, nil)
	defer it.Close()
	it.Last()
	b.ReportAllocs()
	for b.Loop() {
		if !it.Prev() {
			it.Last()
		}
	}
}

func BenchmarkSeekGE(b *testing.B) {
	r, keys := benchTable(b, 100000, SnappyCompression)
	it := r.NewIter(nil, nil)
	defer it.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		it.SeekGE(keys[rng.IntN(len(keys))])
	}
}

func BenchmarkWriter(b *testing.B) {
	value := make([]byte, 100)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := NewWriter(&memFile{}, WriterOptions{BlockSize: 4096, BloomBitsPerKey: 10, Compression: SnappyCompression})
		for i, k := range keys {
			w.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), value)
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
