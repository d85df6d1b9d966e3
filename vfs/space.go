package vfs

import (
	"errors"
	"os"
)

// DiskUsager is an optional capability of an FS: it reports the space of
// the filesystem that holds dir. The engine uses it to keep a reserve of
// free space and to postpone compactions whose output would not fit; on
// an FS without it those checks are skipped and only real ENOSPC errors
// are handled.
type DiskUsager interface {
	// DiskUsage returns the bytes free for an unprivileged writer and the
	// filesystem's total size.
	DiskUsage(dir string) (free, total uint64, err error)
}

// DiskUsage asks fs for the space of the filesystem holding dir; it fails
// with errors.ErrUnsupported when fs cannot tell.
func DiskUsage(fs FS, dir string) (free, total uint64, err error) {
	du, ok := fs.(DiskUsager)
	if !ok {
		return 0, 0, errors.ErrUnsupported
	}
	return du.DiskUsage(dir)
}

// Truncater is an optional capability of an FS: it cuts a file to a size
// in place. A cut needs no free space, which is why the engine uses it to
// drop the torn end of a WAL on a full disk instead of rewriting the log.
// A truncation is durable once a handle of the file has been synced.
type Truncater interface {
	Truncate(name string, size int64) error
}

// Truncate cuts the named file to size; it fails with
// errors.ErrUnsupported when fs cannot.
func Truncate(fs FS, name string, size int64) error {
	t, ok := fs.(Truncater)
	if !ok {
		return &os.PathError{Op: "truncate", Path: name, Err: errors.ErrUnsupported}
	}
	return t.Truncate(name, size)
}

func (osFS) Truncate(name string, size int64) error { return os.Truncate(name, size) }
