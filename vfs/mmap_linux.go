package vfs

import (
	"os"
	"syscall"
)

// mappedFile is a file of the OS filesystem that offers WriteMapper; the
// methods of *os.File come with it unchanged.
type mappedFile struct{ *os.File }

// osFile wraps a file Create returned with the capabilities the OS has.
func osFile(f *os.File) File { return mappedFile{f} }

// allocZeros is what Allocate writes; read-only. Its size is the largest
// unit Allocate writes at once.
var allocZeros [64 << 10]byte

// Allocate writes zeros past the file's end, unit bytes at a time (at most
// 64 KiB). The write reserves the blocks (a full disk fails it with ENOSPC)
// and leaves the pages in the page cache in folios of up to unit bytes, so
// that a store into the mapping faults once per folio rather than once per
// 4 KiB page, as it does over fallocate(2)'s unwritten blocks: with 64 KiB
// units, measured 0.5 µs less CPU per 200-byte commit, a quarter of what
// the mapping saved. A sync writes a whole dirty folio back: a writer that
// syncs a few records at a time writing into 64 KiB folios measured ten
// times the device writes of write(2), hence the unit.
func (f mappedFile) Allocate(off, n int64, unit int) error {
	unit = min(max(unit, 1), len(allocZeros))
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if size := fi.Size(); size > off {
		off, n = size, n-(size-off)
	}
	for n > 0 {
		w, err := f.WriteAt(allocZeros[:min(n, int64(unit))], off)
		if err != nil {
			return err
		}
		off, n = off+int64(w), n-int64(w)
	}
	return nil
}

// withFd runs fn with the file's descriptor, without Fd's side effects.
func (f mappedFile) withFd(fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (f mappedFile) Map(off int64, n int) ([]byte, error) {
	var b []byte
	err := f.withFd(func(fd int) error {
		var err error
		b, err = syscall.Mmap(fd, off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return b, nil
}

func (f mappedFile) Unmap(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return &os.PathError{Op: "munmap", Path: f.Name(), Err: err}
	}
	return nil
}
