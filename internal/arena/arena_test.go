package arena

import (
	"sync"
	"testing"
)

// constructors are the two kinds of arena; every behaviour holds for both.
var constructors = []struct {
	name string
	new  func(int) *Arena
}{{"heap", New}, {"mapped", NewMapped}}

func TestAllocAlignmentAndFull(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) { testAllocAlignmentAndFull(t, c.new(64)) })
	}
}

func testAllocAlignmentAndFull(t *testing.T, a *Arena) {
	defer a.Free()
	if a.Capacity() != 64 || a.Size() != 1 {
		t.Fatalf("fresh arena: capacity %d size %d", a.Capacity(), a.Size())
	}
	off, ok := a.Alloc(3, 1)
	if !ok || off != 1 {
		t.Fatalf("first byte alloc at %d ok=%v, want 1 (0 is reserved)", off, ok)
	}
	off, ok = a.Alloc(8, 8)
	if !ok || off != 8 {
		t.Fatalf("aligned alloc at %d ok=%v, want 8", off, ok)
	}
	before := a.Size()
	if _, ok := a.Alloc(49, 4); ok {
		t.Fatal("alloc beyond capacity succeeded")
	}
	if a.Size() != before {
		t.Fatalf("failed alloc moved size from %d to %d", before, a.Size())
	}
	off, ok = a.Alloc(48, 4)
	if !ok || off != 16 || a.Size() != 64 {
		t.Fatalf("exact fit at %d ok=%v size %d", off, ok, a.Size())
	}
	if _, ok := a.Alloc(0, 1); !ok {
		t.Fatal("empty alloc in a full arena failed")
	}
}

func TestBytesCapped(t *testing.T) {
	a := New(16)
	x, _ := a.Alloc(4, 4)
	y, _ := a.Alloc(4, 4)
	copy(a.Bytes(y, 4), "yyyy")
	_ = append(a.Bytes(x, 4), 'Z')
	if string(a.Bytes(y, 4)) != "yyyy" {
		t.Fatal("append to one allocation overwrote the next")
	}
}

func TestConcurrentAllocDisjoint(t *testing.T) {
	const goroutines, perG = 8, 500
	a := New(goroutines * perG * 16)
	offs := make([][]uint32, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				size := uint32(1 + (g+i)%13)
				off, ok := a.Alloc(size, 4)
				if !ok {
					return
				}
				b := a.Bytes(off, size)
				for j := range b {
					b[j] = byte(g + 1)
				}
				a.Uint32(off) // alignment holds for atomic use
				offs[g] = append(offs[g], off, size)
			}
		}()
	}
	wg.Wait()
	// Each byte must still carry the mark of the goroutine that owns it.
	for g, list := range offs {
		for i := 0; i < len(list); i += 2 {
			for _, c := range a.Bytes(list[i], list[i+1]) {
				if c != byte(g+1) {
					t.Fatalf("allocation at %d of goroutine %d overlapped another", list[i], g)
				}
			}
		}
	}
}

// TestMappedMemory writes every byte of a mapped arena, through a reset,
// and reads it back: the mapping is real, writable memory of the full
// capacity, zero when fresh.
func TestMappedMemory(t *testing.T) {
	const n = 1 << 20
	a := NewMapped(n)
	defer a.Free()
	off, ok := a.Alloc(n-1, 1)
	if !ok {
		t.Fatal("cannot allocate the whole arena")
	}
	b := a.Bytes(off, n-1)
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("fresh mapped byte %d is %d", i, b[i])
		}
		b[i] = byte(i)
	}
	a.Reset()
	off, _ = a.Alloc(n-1, 1)
	for i, c := range a.Bytes(off, n-1) {
		if c != byte(i) {
			t.Fatalf("byte %d reads %d after a reset, want %d", i, c, byte(i))
		}
	}
	// Offset k holds byte(k-1): the allocation began at offset 1.
	if got := a.Uint32(4).Add(1); got != 0x06050403+1 {
		t.Fatalf("atomic word reads %#x", got)
	}
}

// TestMappedDiscard fills a mapped arena, discards it and finds it empty
// and reading zeros: the pages went back to the OS (a Reset alone keeps
// the old bytes, TestMappedMemory), and the arena serves again, from
// fresh pages, for the whole capacity.
func TestMappedDiscard(t *testing.T) {
	const n = 4 << 20 // two huge pages
	a := NewMapped(n)
	defer a.Free()
	if !a.mapped {
		t.Skip("no anonymous mappings here: NewMapped fell back to the heap")
	}
	for round := range 2 {
		off, ok := a.Alloc(n-1, 1)
		if !ok {
			t.Fatalf("round %d: cannot allocate the whole arena", round)
		}
		b := a.Bytes(off, n-1)
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("round %d: byte %d is %d, want the zero of a fresh page", round, i, b[i])
			}
			b[i] = byte(i) | 1
		}
		a.Discard()
		if a.Size() != 1 {
			t.Fatalf("round %d: size %d after Discard, want 1", round, a.Size())
		}
	}
}
