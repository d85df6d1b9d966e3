//go:build unix

package sstable

import (
	"syscall"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// mapFile maps the first size bytes of f read-only, if f is an OS file;
// ok is false when it cannot be mapped and must be read with ReadAt.
func mapFile(f vfs.File, size int64) (data []byte, unmap func() error, ok bool) {
	fd, isOS := f.(interface{ Fd() uintptr })
	if !isOS || size <= 0 || int64(int(size)) != size {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return b, func() error { return syscall.Munmap(b) }, true
}
