package cache

import (
	"sync"
	"sync/atomic"
)

// Block is a decoded table block whose memory is recycled once nobody
// reads it. References are counted: the cache holds one while the block
// is cached, and every Get hands out another, which the reader drops with
// Release when it is done (a point read copies the value it found first).
// The last Release puts the buffer back in a pool for the next block of
// its size class, sparing the allocation, the zeroing and the garbage of
// a fresh one.
//
// A reader that cannot say when it is done, such as an iterator that
// exposes keys and values aliasing the block, calls Escape first: an
// escaped block's memory is never recycled and is left to the garbage
// collector.
type Block struct {
	// Data is the block's bytes; read-only once the block is published.
	Data []byte

	buf     []byte // the whole buffer; cap is the size class
	class   int    // index into blockPools; -1 when not pooled
	refs    atomic.Int32
	escaped atomic.Bool
}

// Buffers come in size classes blockClassSize apart up to maxPooledBlock,
// so a buffer wastes less than one class step, a fraction of a typical
// 4 KiB block; larger blocks are allocated and freed by the GC.
const (
	blockClassSize = 512
	maxPooledBlock = 64 << 10
)

var blockPools [maxPooledBlock / blockClassSize]sync.Pool

// poison, when set, fills recycled buffers with a pattern, so that a read
// of a block after its last Release shows up as garbage in tests.
var poison atomic.Bool

// PoisonRecycledBlocks makes every recycled buffer be overwritten with
// 0xDB; tests turn it on to catch a use after Release.
func PoisonRecycledBlocks(on bool) { poison.Store(on) }

// NewBlock returns a block of n bytes with one reference, the caller's.
// The bytes are not zeroed: the caller fills them before publishing it.
func NewBlock(n int) *Block {
	if n <= 0 || n > maxPooledBlock {
		b := &Block{Data: make([]byte, n), class: -1}
		b.refs.Store(1)
		return b
	}
	class := (n - 1) / blockClassSize
	b, _ := blockPools[class].Get().(*Block)
	if b == nil {
		b = &Block{buf: make([]byte, (class+1)*blockClassSize), class: class}
	}
	b.Data = b.buf[:n]
	b.refs.Store(1)
	return b
}

// Charge is the memory the block occupies: its buffer, not just its data.
func (b *Block) Charge() int64 {
	if b.class < 0 {
		return int64(cap(b.Data))
	}
	return int64(cap(b.buf))
}

// Escape marks the block's bytes as possibly referenced for ever: its
// memory will not be recycled. Call it before dropping the reference.
func (b *Block) Escape() { b.escaped.Store(true) }

// Release drops a reference; the last one recycles the buffer unless the
// block escaped.
func (b *Block) Release() {
	switch n := b.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("cache: block released more often than referenced")
	}
	if b.class < 0 || b.escaped.Load() {
		return
	}
	if poison.Load() {
		for i := range b.buf {
			b.buf[i] = 0xDB
		}
	}
	b.Data = nil
	blockPools[b.class].Put(b)
}

func (b *Block) ref() { b.refs.Add(1) }
