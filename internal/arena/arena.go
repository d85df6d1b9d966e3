// Package arena owns a fixed-size, append-only byte region from which the
// memtable carves its nodes, keys and values. Allocations are addressed by
// uint32 offsets rather than pointers, so the garbage collector sees one
// pointer-free object however many entries it holds.
//
// Invariants: memory is never freed or reused until the whole arena is
// dropped or Reset; Alloc is safe from many goroutines at once and never hands out
// overlapping ranges; offset 0 is never returned, so callers may use it as
// a nil reference; the backing store is 8-byte aligned, so an offset
// aligned to 4 or 8 by Alloc is aligned in memory too.
package arena

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"
)

// Arena is a bump allocator over one preallocated buffer.
type Arena struct {
	size   atomic.Uint32
	buf    []byte
	mapped bool // buf was mapped by NewMapped and must be unmapped
}

// MaxCapacity is the largest arena: offsets are 32-bit.
const MaxCapacity = math.MaxUint32

// New returns an arena of capacity bytes on the Go heap. capacity must be
// between 1 and MaxCapacity.
func New(capacity int) *Arena {
	checkCapacity(capacity)
	// Backing the bytes with uint64s guarantees 8-byte alignment of the
	// base; a plain make([]byte) of a small size may come from the tiny
	// allocator at any address, which would break atomic access.
	words := make([]uint64, (capacity+7)/8)
	return newArena(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), capacity), false)
}

// NewMapped returns an arena of capacity bytes outside the Go heap, in
// anonymous memory mapped from the OS (page-aligned, zero, resident only
// once touched), or on the heap where mapping is not available. Its memory
// does not count toward the heap the garbage collector paces itself by:
// a DB holding a few 32 MiB memtables would otherwise let the heap, and
// the process's RSS, grow to twice their size between collections. The
// caller must Free it, and must not touch it afterwards.
func NewMapped(capacity int) *Arena {
	checkCapacity(capacity)
	buf, err := mapAnon(capacity)
	if err != nil {
		return New(capacity)
	}
	return newArena(buf, true)
}

func checkCapacity(capacity int) {
	if capacity < 1 || uint64(capacity) > MaxCapacity {
		panic(fmt.Sprintf("arena: capacity %d out of range [1, %d]", capacity, uint32(MaxCapacity)))
	}
}

func newArena(buf []byte, mapped bool) *Arena {
	a := &Arena{buf: buf, mapped: mapped}
	// Byte 0 is reserved so that offset 0 can mean "no allocation".
	a.size.Store(1)
	return a
}

// Discard empties the arena as Reset does and gives a mapped arena's pages
// back to the OS: the region stays mapped and reads as zeros, and each page
// is faulted in again when an allocation reaches it. A kept, idle arena
// then costs no resident memory; refilling it costs one fault per huge
// page (the arena asks for them), a few milliseconds per 32 MiB. Nothing
// may read the arena's earlier allocations afterwards.
func (a *Arena) Discard() {
	a.Reset()
	if a.mapped {
		// Only a bad address fails, which the arena never passes.
		_ = discardPages(a.buf)
	}
}

// Free returns a mapped arena's memory to the OS; a heap arena is left to
// the garbage collector. Nothing may use the arena afterwards: a mapped
// arena's memory is gone, and a read of it faults.
func (a *Arena) Free() {
	if a.mapped {
		// Munmap of a region this arena mapped fails only on a bad
		// address, which the arena never passes.
		_ = unmap(a.buf)
	}
	a.buf, a.mapped = nil, false
}

// Alloc reserves size bytes whose offset is a multiple of align, which must
// be a power of two. ok is false, and nothing is reserved, when the arena
// cannot fit the request. In a new arena the bytes are zero; after Reset
// they hold whatever an earlier allocation left there.
func (a *Arena) Alloc(size, align uint32) (offset uint32, ok bool) {
	mask := uint64(align) - 1
	for {
		old := a.size.Load()
		start := (uint64(old) + mask) &^ mask
		end := start + uint64(size)
		if end > uint64(len(a.buf)) {
			return 0, false
		}
		// A CAS loop rather than an atomic add keeps Size exact after a
		// failed allocation, which the memtable reports as its footprint.
		if a.size.CompareAndSwap(old, uint32(end)) {
			return uint32(start), true
		}
	}
}

// Reset empties the arena so that it can serve again without a new
// allocation. It does not clear the memory: callers must write every byte
// they later read. Nothing may use an earlier allocation once Reset is
// called.
func (a *Arena) Reset() { a.size.Store(1) }

// Size returns the number of bytes handed out, including alignment padding
// and the reserved byte 0.
func (a *Arena) Size() uint32 { return a.size.Load() }

// Capacity returns the arena's total size in bytes.
func (a *Arena) Capacity() uint32 { return uint32(len(a.buf)) }

// Bytes returns the n bytes at off. The slice's capacity is capped at n so
// appending to it cannot spill into a neighbouring allocation.
func (a *Arena) Bytes(off, n uint32) []byte {
	end := uint64(off) + uint64(n)
	return a.buf[off:end:end]
}

// Uint32 returns the 4 bytes at off as an atomic word. off must be 4-byte
// aligned (as returned by Alloc with align >= 4, plus a multiple of 4).
func (a *Arena) Uint32(off uint32) *atomic.Uint32 {
	if uint64(off)+4 > uint64(len(a.buf)) || off%4 != 0 {
		panic(fmt.Sprintf("arena: bad atomic word offset %d", off))
	}
	return (*atomic.Uint32)(unsafe.Pointer(&a.buf[off]))
}
