//go:build ignore

// Pagetouch prints the CPU time of one random byte read from a 110 MiB
// region, each read's address depending on the last one's byte (so the
// reads do not overlap), for a read-only shared mapping of a file, the
// same mapping with MADV_RANDOM, anonymous memory in 4 KiB pages and in
// transparent huge pages, and a 4 MiB region; every region is touched
// whole first. A point read from a mapped table pays one such read per
// cold page it touches.
//
//	go run pagetouch.go [DIR]   (DIR holds the 110 MiB file; default /tmp)
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
)

const size = 110 << 20

func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func bench(name string, b []byte) {
	s := 0
	for i := 0; i < len(b); i += 4096 {
		s += int(b[i])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 2_000_000
	offs := make([]int, n)
	for i := range offs {
		offs[i] = rng.IntN(len(b))
	}
	fmt.Printf("%-9s", name)
	for range 3 {
		c := cpuNanos()
		for _, o := range offs {
			s += int(b[(o+s&1)%len(b)])
		}
		fmt.Printf(" %6.0f", float64(cpuNanos()-c)/n)
	}
	fmt.Printf(" ns CPU per read, three rounds (%d)\n", s&1)
}

func mapAnon(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		panic(err)
	}
	return b
}

func main() {
	dir := os.TempDir()
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	path := filepath.Join(dir, "pagetouch.data")
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	defer os.Remove(path)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for off := 0; off < size; off += len(chunk) {
		if _, err := f.WriteAt(chunk, int64(off)); err != nil {
			panic(err)
		}
	}
	for _, random := range []bool{false, true} {
		m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			panic(err)
		}
		name := "file"
		if random {
			name = "file-rand"
			syscall.Madvise(m, syscall.MADV_RANDOM)
		}
		bench(name, m)
		syscall.Munmap(m)
	}
	a := mapAnon(size)
	for i := 0; i < size; i += 4096 {
		a[i] = 1
	}
	bench("anon-4k", a)
	h := mapAnon(size)
	syscall.Madvise(h, syscall.MADV_HUGEPAGE)
	for i := 0; i < size; i += 4096 {
		h[i] = 1
	}
	bench("anon-thp", h)
	bench("4MiB", make([]byte, 4<<20))
}
