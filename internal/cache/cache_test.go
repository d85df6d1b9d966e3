package cache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

func block(fileNum base.FileNum, offset uint64, n int) []byte {
	b := fmt.Appendf(nil, "%d/%d/", fileNum, offset)
	for len(b) < n {
		b = append(b, 'x')
	}
	return b
}

func TestGetSet(t *testing.T) {
	c := New(1 << 20)
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("hit in empty cache")
	}
	c.Set(1, 0, []byte("a"))
	c.Set(1, 100, []byte("b"))
	c.Set(2, 0, []byte("c"))
	c.Set(1, 0, []byte("a2")) // replaces
	for _, tc := range []struct {
		f    base.FileNum
		off  uint64
		want string
	}{{1, 0, "a2"}, {1, 100, "b"}, {2, 0, "c"}} {
		if got, ok := c.Get(tc.f, tc.off); !ok || string(got) != tc.want {
			t.Fatalf("Get(%d, %d) = %q, %v", tc.f, tc.off, got, ok)
		}
	}
	hits, misses, size, count := c.Metrics()
	if hits != 3 || misses != 1 || count != 3 || size != 4+3*EntryOverhead {
		t.Fatalf("metrics hits=%d misses=%d size=%d count=%d", hits, misses, size, count)
	}
	c.EvictFile(1)
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("evicted block still cached")
	}
	if _, ok := c.Get(2, 0); !ok {
		t.Fatal("EvictFile dropped another file's block")
	}
	if _, _, size, count := c.Metrics(); count != 1 || size != 1+EntryOverhead {
		t.Fatalf("after EvictFile: size=%d count=%d", size, count)
	}
}

func TestDisabled(t *testing.T) {
	for _, c := range []*Cache{New(0), New(-5), nil} {
		c.Set(1, 0, []byte("a"))
		if _, ok := c.Get(1, 0); ok {
			t.Fatal("disabled cache returned a block")
		}
		c.EvictFile(1)
		if _, _, size, count := c.Metrics(); size != 0 || count != 0 || c.Capacity() != 0 {
			t.Fatalf("disabled cache holds %d blocks, %d bytes", count, size)
		}
	}
}

// TestClock fills one shard's worth of blocks that all land in a single
// shard and checks that eviction spares the referenced block and takes the
// first unreferenced one after the hand.
func TestClock(t *testing.T) {
	const blockLen = 1000
	c := New(numShards * 3 * (blockLen + EntryOverhead))
	// Find five keys of file 1 in the same shard.
	var offs []uint64
	s0 := c.shardFor(key{1, 0})
	for off := uint64(0); len(offs) < 5; off += 4096 {
		if c.shardFor(key{1, off}) == s0 {
			offs = append(offs, off)
		}
	}
	for _, off := range offs[:3] {
		c.Set(1, off, make([]byte, blockLen))
	}
	c.Get(1, offs[0]) // offs[1] is now the first unreferenced block
	c.Set(1, offs[3], make([]byte, blockLen))
	for i, want := range []bool{true, false, true, true} {
		if _, ok := c.Get(1, offs[i]); ok != want {
			t.Fatalf("block %d cached=%v, want %v", i, ok, want)
		}
	}
	// Every cached block is now referenced (the Gets above): the hand
	// clears them all, comes round and evicts the first after it.
	c.Set(1, offs[4], make([]byte, blockLen))
	if _, _, _, count := c.Metrics(); count != 3 {
		t.Fatalf("%d blocks cached, want 3", count)
	}
	// A block bigger than a shard is not cached and does not flush the
	// shard.
	c.Set(1, offs[1], make([]byte, 4*blockLen))
	if _, ok := c.Get(1, offs[1]); ok {
		t.Fatal("oversized block cached")
	}
	if _, _, _, count := c.Metrics(); count != 3 {
		t.Fatal("oversized block evicted others")
	}
}

// TestHotSurvivesScan reads a few blocks between inserts of many blocks
// that are never read again: CLOCK must keep the hot ones.
func TestHotSurvivesScan(t *testing.T) {
	c := New(numShards * 64 * (1000 + EntryOverhead))
	for off := uint64(0); off < 8; off++ {
		c.Set(1, off, make([]byte, 1000))
	}
	for off := uint64(0); off < 100000; off++ {
		c.Set(2, off, make([]byte, 1000))
		if off%16 == 0 {
			for hot := uint64(0); hot < 8; hot++ {
				if _, ok := c.Get(1, hot); !ok {
					t.Fatalf("hot block %d evicted after %d cold inserts", hot, off)
				}
			}
		}
	}
}

// TestUnpackedKeys uses file numbers and offsets too large for the packed
// map key next to small ones that share their low bits.
func TestUnpackedKeys(t *testing.T) {
	c := New(1 << 20)
	keys := []key{
		{1, 0}, {1 << packedFileBits, 0}, {1, 1 << packedOffsetBits},
		{1<<packedFileBits + 1, 1<<packedOffsetBits + 7}, {1, 7},
	}
	for _, k := range keys {
		c.Set(k.fileNum, k.offset, block(k.fileNum, k.offset, 64))
	}
	for _, k := range keys {
		if b, ok := c.Get(k.fileNum, k.offset); !ok || !bytes.Equal(b, block(k.fileNum, k.offset, 64)) {
			t.Fatalf("Get(%d, %d) = %q, %v", k.fileNum, k.offset, b, ok)
		}
	}
	c.EvictFile(1<<packedFileBits + 1)
	c.EvictFile(1)
	if _, _, size, count := c.Metrics(); count != 1 || size != 64+EntryOverhead {
		t.Fatalf("after evictions: %d blocks, %d bytes", count, size)
	}
	if _, ok := c.Get(1<<packedFileBits, 0); !ok {
		t.Fatal("EvictFile dropped another file's block")
	}
}

// TestBudget inserts random-sized blocks and checks the charged size never
// exceeds the budget, and that the accounting matches what is cached.
func TestBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const capacity = 1 << 20
	c := New(capacity)
	live := map[key]int{}
	for i := 0; i < 20000; i++ {
		f, off := base.FileNum(rng.IntN(20)), uint64(rng.IntN(500))*4096
		switch r := rng.IntN(100); {
		case r < 60:
			n := rng.IntN(16 << 10)
			c.Set(f, off, block(f, off, n))
			live[key{f, off}] = n
		case r < 99:
			if b, ok := c.Get(f, off); ok && !bytes.Equal(b, block(f, off, len(b))) {
				t.Fatalf("Get(%d, %d) returned another block", f, off)
			}
		default:
			c.EvictFile(f)
		}
		if _, _, size, _ := c.Metrics(); size > capacity {
			t.Fatalf("size %d exceeds capacity %d", size, capacity)
		}
	}
	var sum, n int64
	for k := range live {
		if b, ok := c.Get(k.fileNum, k.offset); ok {
			sum += int64(len(b)) + EntryOverhead
			n++
		}
	}
	if _, _, size, count := c.Metrics(); size != sum || count != n {
		t.Fatalf("metrics size=%d count=%d, cached blocks add up to %d in %d", size, count, sum, n)
	}
	if float64(sum) < 0.5*capacity {
		t.Fatalf("cache only %d bytes full after many inserts", sum)
	}
}

// TestConcurrent hammers the cache from several goroutines; run with
// -race. Every hit must return the block stored under that key.
func TestConcurrent(t *testing.T) {
	c := New(256 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := 0; i < 5000; i++ {
				f, off := base.FileNum(rng.IntN(8)), uint64(rng.IntN(64))
				switch rng.IntN(10) {
				case 0, 1, 2:
					c.Set(f, off, block(f, off, 100+rng.IntN(4000)))
				case 3:
					if rng.IntN(50) == 0 {
						c.EvictFile(f)
					}
				default:
					if b, ok := c.Get(f, off); ok && !bytes.Equal(b, block(f, off, len(b))) {
						t.Errorf("Get(%d, %d) returned another block", f, off)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if _, _, size, _ := c.Metrics(); size > c.Capacity() {
		t.Fatalf("size %d exceeds capacity %d", size, c.Capacity())
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := New(64 << 20)
	for off := uint64(0); off < 1000; off++ {
		c.Set(1, off*4096, make([]byte, 4096))
	}
	b.RunParallel(func(pb *testing.PB) {
		off := uint64(0)
		for pb.Next() {
			c.Get(1, off*4096)
			off = (off + 1) % 1000
		}
	})
}
