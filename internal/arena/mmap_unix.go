//go:build unix

package arena

import "syscall"

func mapAnon(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err == nil {
		adviseHugePages(b)
	}
	return b, err
}

func unmap(b []byte) error { return syscall.Munmap(b) }

func discardPages(b []byte) error { return syscall.Madvise(b, syscall.MADV_DONTNEED) }
