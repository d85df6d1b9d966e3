package vfs

import (
	"errors"
	"os"
	"syscall"
)

// mappedFile is a file of the OS filesystem that offers WriteMapper; the
// methods of *os.File come with it unchanged.
type mappedFile struct{ *os.File }

// osFile wraps a file Create returned with the capabilities the OS has.
func osFile(f *os.File) File { return mappedFile{f} }

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

// Allocate uses fallocate(2), which reserves blocks without writing them;
// on a filesystem without it, it writes zeros past the file's end, which
// reserves them too (and is all a writer that appends needs).
func (f mappedFile) Allocate(off, n int64) error {
	err := f.withFd(func(fd int) error {
		for {
			err := syscall.Fallocate(fd, 0, off, n)
			if err != syscall.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return f.writeZeros(off, n)
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}

func (f mappedFile) writeZeros(off, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if size := fi.Size(); size > off {
		off, n = size, n-(size-off)
	}
	zeros := make([]byte, min(n, 64<<10))
	for n > 0 {
		w, err := f.WriteAt(zeros[:min(n, int64(len(zeros)))], off)
		if err != nil {
			return err
		}
		off, n = off+int64(w), n-int64(w)
	}
	return nil
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
