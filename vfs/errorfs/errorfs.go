// Package errorfs wraps a vfs.FS so that tests can make any of its
// operations fail: EIO, ENOSPC, torn writes, chosen by operation, by path
// and by count. It owns no state of the wrapped filesystem; every call that
// the Injector lets through goes to it unchanged.
//
// Invariant: an operation that is failed by injection has no effect on the
// wrapped filesystem, except a failed Write on an Injector that asks for torn
// writes (see TornWriter), which writes a prefix of the buffer first, as a
// full disk may.
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Op names a filesystem operation that can be failed.
type Op int

// The operations an Injector is consulted on.
const (
	// OpCreate is FS.Create.
	OpCreate Op = iota
	// OpOpen is FS.Open.
	OpOpen
	// OpOpenDir is FS.OpenDir.
	OpOpenDir
	// OpRead is File.Read and File.ReadAt.
	OpRead
	// OpWrite is File.Write and WriteAt.
	OpWrite
	// OpSync is File.Sync, on files and on directories.
	OpSync
	// OpClose is File.Close.
	OpClose
	// OpRemove is FS.Remove.
	OpRemove
	// OpRename is FS.Rename.
	OpRename
	// OpMkdirAll is FS.MkdirAll.
	OpMkdirAll
	// OpList is FS.List.
	OpList
	// OpStat is FS.Stat and File.Stat.
	OpStat
	// OpLock is FS.Lock.
	OpLock
	// OpTruncate is vfs.Truncater's Truncate.
	OpTruncate
	// OpLink is vfs.Linker's Link.
	OpLink
)

var opNames = [...]string{
	OpCreate:   "create",
	OpOpen:     "open",
	OpOpenDir:  "opendir",
	OpRead:     "read",
	OpWrite:    "write",
	OpSync:     "sync",
	OpClose:    "close",
	OpRemove:   "remove",
	OpRename:   "rename",
	OpMkdirAll: "mkdirall",
	OpList:     "list",
	OpStat:     "stat",
	OpLock:     "lock",
	OpTruncate: "truncate",
	OpLink:     "link",
}

// String returns the operation's lower-case name.
func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// ErrInjected is wrapped by every error this package makes up, so that a
// test can tell an injected failure from a real one with errors.Is.
var ErrInjected = errors.New("errorfs: injected error")

// ENOSPC returns an injected "no space left on device": errors.Is matches
// both ErrInjected and syscall.ENOSPC.
func ENOSPC() error { return fmt.Errorf("%w: %w", ErrInjected, syscall.ENOSPC) }

// EIO returns an injected I/O error: errors.Is matches both ErrInjected and
// syscall.EIO.
func EIO() error { return fmt.Errorf("%w: %w", ErrInjected, syscall.EIO) }

// Injector decides, before each operation, whether it fails. A nil error
// lets the operation run; a non-nil one is returned instead, wrapped in an
// *os.PathError naming the operation and path (errors.Is still sees it).
// path is the name the operation was called with; for operations on an open
// file it is the name the file was opened with; for OpRename it is
// oldname + " -> " + newname, so that a substring test can match either.
// MaybeError is called from many goroutines at once.
type Injector interface {
	MaybeError(op Op, path string) error
}

// TornWriter is an optional interface of an Injector. When it fails a
// Write of n bytes, the wrapper first writes the leading TornPrefix(n)
// bytes (0 <= result < n) to the wrapped file, and returns that count with
// the error, the way a write that runs out of disk space stops part way.
type TornWriter interface {
	TornPrefix(n int) int
}

// InjectorFunc adapts a function to the Injector interface.
type InjectorFunc func(op Op, path string) error

// MaybeError calls f.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// Wrap returns fs with every operation, on the FS and on the files it
// returns, first offered to inj. PathJoin is pure and never fails.
func Wrap(fs vfs.FS, inj Injector) vfs.FS {
	return &errorFS{fs: fs, inj: inj}
}

type errorFS struct {
	fs  vfs.FS
	inj Injector
}

// maybeError asks the injector about op on path and dresses a failure the
// way the os package would.
func maybeError(inj Injector, op Op, path string) error {
	if err := inj.MaybeError(op, path); err != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

func (e *errorFS) Create(name string) (vfs.File, error) {
	if err := maybeError(e.inj, OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	return e.wrapFile(name, f, err)
}

func (e *errorFS) Open(name string) (vfs.File, error) {
	if err := maybeError(e.inj, OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	return e.wrapFile(name, f, err)
}

func (e *errorFS) OpenDir(name string) (vfs.File, error) {
	if err := maybeError(e.inj, OpOpenDir, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	return e.wrapFile(name, f, err)
}

// wrapFile wraps the result of an open for the name it was opened with.
func (e *errorFS) wrapFile(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &errorFile{f: f, name: name, inj: e.inj}, nil
}

func (e *errorFS) Remove(name string) error {
	if err := maybeError(e.inj, OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errorFS) Rename(oldname, newname string) error {
	if err := maybeError(e.inj, OpRename, oldname+" -> "+newname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

func (e *errorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := maybeError(e.inj, OpMkdirAll, dir); err != nil {
		return err
	}
	return e.fs.MkdirAll(dir, perm)
}

func (e *errorFS) List(dir string) ([]string, error) {
	if err := maybeError(e.inj, OpList, dir); err != nil {
		return nil, err
	}
	return e.fs.List(dir)
}

func (e *errorFS) Stat(name string) (os.FileInfo, error) {
	if err := maybeError(e.inj, OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

// Lock consults the injector before locking; releasing the lock is not an
// operation that can fail.
func (e *errorFS) Lock(name string) (io.Closer, error) {
	if err := maybeError(e.inj, OpLock, name); err != nil {
		return nil, err
	}
	return e.fs.Lock(name)
}

func (e *errorFS) PathJoin(elem ...string) string { return e.fs.PathJoin(elem...) }

// Truncate passes vfs.Truncater through, as OpTruncate.
func (e *errorFS) Truncate(name string, size int64) error {
	if err := maybeError(e.inj, OpTruncate, name); err != nil {
		return err
	}
	return vfs.Truncate(e.fs, name, size)
}

// Link passes vfs.Linker through, as OpLink with the path written as for
// OpRename.
func (e *errorFS) Link(oldname, newname string) error {
	if err := maybeError(e.inj, OpLink, oldname+" -> "+newname); err != nil {
		return err
	}
	return vfs.Link(e.fs, oldname, newname)
}

// DiskUsage passes vfs.DiskUsager through; it is a query, so no fault is
// injected into it.
func (e *errorFS) DiskUsage(dir string) (free, total uint64, err error) {
	return vfs.DiskUsage(e.fs, dir)
}

// errorFile is a file opened through an errorFS.
type errorFile struct {
	f    vfs.File
	name string
	inj  Injector
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := maybeError(f.inj, OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := maybeError(f.inj, OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) { return f.write(p, f.f.Write) }

// WriteAt is Write at an offset, for files whose underlying file has
// it; a failed WriteAt tears like a failed Write.
func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	wa, ok := f.f.(io.WriterAt)
	if !ok {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: errors.ErrUnsupported}
	}
	return f.write(p, func(b []byte) (int, error) { return wa.WriteAt(b, off) })
}

// write runs a write through the injector: a failed one writes a torn
// prefix of p, when the injector tears writes, and returns the injected
// error.
func (f *errorFile) write(p []byte, to func([]byte) (int, error)) (int, error) {
	err := maybeError(f.inj, OpWrite, f.name)
	if err == nil {
		return to(p)
	}
	tw, ok := f.inj.(TornWriter)
	if !ok || len(p) == 0 {
		return 0, err
	}
	n, werr := to(p[:tw.TornPrefix(len(p))])
	if werr != nil {
		return n, werr
	}
	return n, err
}

func (f *errorFile) Sync() error {
	if err := maybeError(f.inj, OpSync, f.name); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := maybeError(f.inj, OpStat, f.name); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

// Close leaves the wrapped file open when the injector fails it, keeping
// the invariant that a failed operation has no effect.
func (f *errorFile) Close() error {
	if err := maybeError(f.inj, OpClose, f.name); err != nil {
		return err
	}
	return f.f.Close()
}
