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

func init() { PoisonRecycledBlocks(true) }

// set caches a copy of data as a block and drops the caller's reference.
func set(c *Cache, f base.FileNum, off uint64, data []byte) {
	b := NewBlock(len(data))
	copy(b.Data, data)
	c.Set(f, off, b)
	b.Release()
}

// get returns a copy of the cached block's data and its charge.
func get(c *Cache, f base.FileNum, off uint64) (data []byte, charge int64, ok bool) {
	b, ok := c.Get(f, off)
	if !ok {
		return nil, 0, false
	}
	defer b.Release()
	return bytes.Clone(b.Data), b.Charge() + EntryOverhead, true
}

func TestGetSet(t *testing.T) {
	c := New(1 << 20)
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("hit in empty cache")
	}
	set(c, 1, 0, []byte("a"))
	set(c, 1, 100, []byte("b"))
	set(c, 2, 0, []byte("c"))
	set(c, 1, 0, []byte("a2")) // replaces
	for _, tc := range []struct {
		f    base.FileNum
		off  uint64
		want string
	}{{1, 0, "a2"}, {1, 100, "b"}, {2, 0, "c"}} {
		if got, _, ok := get(c, tc.f, tc.off); !ok || string(got) != tc.want {
			t.Fatalf("Get(%d, %d) = %q, %v", tc.f, tc.off, got, ok)
		}
	}
	hits, misses, size, count := c.Metrics()
	if hits != 3 || misses != 1 || count != 3 || size != 3*(blockClassSize+EntryOverhead) {
		t.Fatalf("metrics hits=%d misses=%d size=%d count=%d", hits, misses, size, count)
	}
	c.EvictFile(1)
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("evicted block still cached")
	}
	if _, ok := c.Get(2, 0); !ok {
		t.Fatal("EvictFile dropped another file's block")
	}
	if _, _, size, count := c.Metrics(); count != 1 || size != blockClassSize+EntryOverhead {
		t.Fatalf("after EvictFile: size=%d count=%d", size, count)
	}
}

func TestDisabled(t *testing.T) {
	for _, c := range []*Cache{New(0), New(-5), nil} {
		set(c, 1, 0, []byte("a"))
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
	const blockLen = 2 * blockClassSize // charged exactly its length
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
		set(c, 1, off, make([]byte, blockLen))
	}
	get(c, 1, offs[0]) // offs[1] is now the first unreferenced block
	set(c, 1, offs[3], make([]byte, blockLen))
	for i, want := range []bool{true, false, true, true} {
		if _, _, ok := get(c, 1, offs[i]); ok != want {
			t.Fatalf("block %d cached=%v, want %v", i, ok, want)
		}
	}
	// Every cached block is now referenced (the Gets above): the hand
	// clears them all, comes round and evicts the first after it.
	set(c, 1, offs[4], make([]byte, blockLen))
	if _, _, _, count := c.Metrics(); count != 3 {
		t.Fatalf("%d blocks cached, want 3", count)
	}
	// A block bigger than a shard is not cached and does not flush the
	// shard.
	set(c, 1, offs[1], make([]byte, 4*blockLen))
	if _, _, ok := get(c, 1, offs[1]); ok {
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
		set(c, 1, off, make([]byte, 1000))
	}
	// Even -short's cold inserts (CI) cycle the cache twenty times over.
	cold := uint64(100000)
	if testing.Short() {
		cold = 20000
	}
	for off := uint64(0); off < cold; off++ {
		set(c, 2, off, make([]byte, 1000))
		if off%16 == 0 {
			for hot := uint64(0); hot < 8; hot++ {
				if _, _, ok := get(c, 1, hot); !ok {
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
		set(c, k.fileNum, k.offset, block(k.fileNum, k.offset, 64))
	}
	for _, k := range keys {
		if b, _, ok := get(c, k.fileNum, k.offset); !ok || !bytes.Equal(b, block(k.fileNum, k.offset, 64)) {
			t.Fatalf("Get(%d, %d) = %q, %v", k.fileNum, k.offset, b, ok)
		}
	}
	c.EvictFile(1<<packedFileBits + 1)
	c.EvictFile(1)
	if _, _, size, count := c.Metrics(); count != 1 || size != blockClassSize+EntryOverhead {
		t.Fatalf("after evictions: %d blocks, %d bytes", count, size)
	}
	if _, _, ok := get(c, 1<<packedFileBits, 0); !ok {
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
	ops := 20000
	if testing.Short() {
		ops = 5000 // still about twenty times the capacity inserted
	}
	for i := 0; i < ops; i++ {
		f, off := base.FileNum(rng.IntN(20)), uint64(rng.IntN(500))*4096
		switch r := rng.IntN(100); {
		case r < 60:
			n := rng.IntN(16 << 10)
			set(c, f, off, block(f, off, n))
			live[key{f, off}] = n
		case r < 99:
			if b, _, ok := get(c, f, off); ok && !bytes.Equal(b, block(f, off, len(b))) {
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
		if _, charge, ok := get(c, k.fileNum, k.offset); ok {
			sum += charge
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
	perG := 5000
	if testing.Short() {
		perG = 1500
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := 0; i < perG; i++ {
				f, off := base.FileNum(rng.IntN(8)), uint64(rng.IntN(64))
				switch rng.IntN(10) {
				case 0, 1, 2:
					set(c, f, off, block(f, off, 100+rng.IntN(4000)))
				case 3:
					if rng.IntN(50) == 0 {
						c.EvictFile(f)
					}
				default:
					// The block is checked while the reference is held:
					// a recycled buffer would be poisoned.
					if b, ok := c.Get(f, off); ok {
						same := bytes.Equal(b.Data, block(f, off, len(b.Data)))
						b.Release()
						if !same {
							t.Errorf("Get(%d, %d) returned another block", f, off)
							return
						}
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
		set(c, 1, off*4096, make([]byte, 4096))
	}
	b.RunParallel(func(pb *testing.PB) {
		off := uint64(0)
		for pb.Next() {
			if blk, ok := c.Get(1, off*4096); ok {
				blk.Release()
			}
			off = (off + 1) % 1000
		}
	})
}

// TestBlockRecycling checks the reference counting: an evicted block a
// reader still holds keeps its bytes until that reader releases it, then
// its buffer is recycled (poisoned here); an escaped block never is.
func TestBlockRecycling(t *testing.T) {
	c := New(1 << 20)
	want := block(1, 0, 3000)
	for _, escape := range []bool{false, true} {
		set(c, 1, 0, want)
		b, ok := c.Get(1, 0)
		if !ok {
			t.Fatal("miss")
		}
		c.EvictFile(1)
		if !bytes.Equal(b.Data, want) {
			t.Fatal("an evicted block changed while a reader held it")
		}
		data := b.Data
		if escape {
			b.Escape()
		}
		b.Release()
		if recycled := data[0] == 0xDB; recycled == escape {
			t.Fatalf("escaped=%v: recycled=%v after the last release", escape, recycled)
		}
		if escape && !bytes.Equal(data, want) {
			t.Fatal("an escaped block changed after its release")
		}
	}
}
