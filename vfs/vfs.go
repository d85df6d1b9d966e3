// Package vfs is the filesystem interface the engine does all its I/O
// through. Users may pass their own implementation in Options.FS; tests use
// the in-memory MemFS, which can simulate a crash by dropping everything
// that was never synced, and vfs/errorfs, which injects faults.
//
// Durability contract every implementation keeps: file data is durable once
// File.Sync returns; a directory entry (create, rename, remove) is durable
// once the directory, opened with OpenDir, has been synced.
package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// File is an open file. Files opened for reading support ReadAt from many
// goroutines at once; writes are not concurrent.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written data durable.
	Sync() error
	// Stat returns the file's metadata (Size is what callers use).
	Stat() (os.FileInfo, error)
}

// FS is a filesystem.
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that it can be synced.
	OpenDir(name string) (File, error)
	// Remove removes a file or empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names of a directory's entries (not full paths).
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if needed.
	// It fails at once, without waiting, when another holder has it,
	// in this process or another, with an error matching ErrLocked; any
	// other error (the file cannot be created or opened) says why.
	// Closing the returned Closer releases it.
	Lock(name string) (io.Closer, error)
	// PathJoin joins path elements.
	PathJoin(elem ...string) string
}

// ErrLocked is matched (errors.Is) by Lock's error when another holder has
// the lock, as opposed to a lock file that cannot be opened at all.
var ErrLocked = errors.New("lock held")

// Default is the operating system's filesystem.
var Default FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile(f), nil
}

func (osFS) Open(name string) (File, error) { return os.Open(name) }

func (osFS) OpenDir(name string) (File, error) { return os.Open(name) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) Lock(name string) (io.Closer, error) { return lockFile(name) }

func (osFS) PathJoin(elem ...string) string { return filepath.Join(elem...) }

// SyncDir makes the entries of directory dir durable: the files created,
// renamed or removed in it. Every writer of a DB directory calls it after
// such a change, since a file's own Sync does not cover its name.
func SyncDir(fs FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// MkdirAllSynced is MkdirAll that also makes the new directories durable:
// the entry of each directory it creates is synced in its parent, so a
// crash cannot take away a directory whose files were synced.
func MkdirAllSynced(fs FS, dir string, perm os.FileMode) error {
	// top is the highest directory that does not exist yet.
	top := ""
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		top = d
		if d == filepath.Dir(d) {
			break
		}
	}
	if top == "" {
		return nil
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := SyncDir(fs, filepath.Dir(d)); err != nil {
			return err
		}
		if d == top {
			return nil
		}
	}
}
