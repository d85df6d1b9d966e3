package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that keeps, besides what is visible, what a real
// disk would still hold after a power loss, so that CrashClone can simulate
// one. Paths are slash-separated and cleaned with path.Clean; relative paths
// are taken from the root, and "", "." and "/" all name the root, which
// always exists.
//
// What is durable, and so survives CrashClone:
//   - a file's data up to its last File.Sync (Create's truncation is a data
//     change like any write: it becomes durable at the next Sync);
//   - a directory's entry set (names and the files or directories they point
//     to) as of the last Sync of a handle from OpenDir on that directory.
//
// Everything else, including unsynced writes and the effect of Create,
// Rename, Remove and MkdirAll on a directory that was not synced since, is
// lost; CrashCloneReorder instead keeps a random part of it, page by page
// and entry by entry. A MemFS is safe for use by many goroutines.
type MemFS struct {
	// mu guards the tree: every directory's children and durableChildren,
	// and locks. It is taken before any memNode.mu, never after.
	mu    sync.Mutex
	root  *memNode
	locks map[string]bool

	// capacity is the byte budget SetCapacity set (0: none). capMu is
	// held across the check and the write it admits, so concurrent
	// writers cannot together overrun the budget; it is taken before
	// fs.mu.
	capacity atomic.Int64
	capMu    sync.Mutex
}

// memNode is an inode: a file or a directory. Several directory entries may
// point to one memNode, in the durable state after a rename was synced in
// one directory but not the other, the way a hard link does after a crash.
type memNode struct {
	isDir bool

	// Directory state, guarded by MemFS.mu.
	children        map[string]*memNode
	durableChildren map[string]*memNode

	// File state, guarded by mu. The bytes inside [0, len) of any slice
	// ever stored in durable are never modified afterwards: a write
	// changes data in place only past the durable length (durable's
	// capacity ends with it, so nothing there is visible through it), and
	// copies the array before changing bytes below it. That is what lets
	// Sync and CrashClone share arrays instead of copying whole files.
	mu      sync.RWMutex
	data    []byte
	durable []byte
}

func newMemDir() *memNode {
	return &memNode{isDir: true, children: map[string]*memNode{}, durableChildren: map[string]*memNode{}}
}

// NewMem returns an empty in-memory filesystem holding only the root.
func NewMem() *MemFS {
	return &MemFS{root: newMemDir(), locks: map[string]bool{}}
}

var (
	_ FS     = (*MemFS)(nil)
	_ Linker = (*MemFS)(nil)
)

// cleanPath maps every spelling of a path to one absolute, cleaned form, so
// that "a/b", "/a/b" and "a//b/." all name the same file and the same lock.
func cleanPath(name string) string { return path.Clean("/" + name) }

// resolve returns the node at the cleaned path p. fs.mu must be held.
func (fs *MemFS) resolve(op, name, p string) (*memNode, error) {
	n := fs.root
	if p == "/" {
		return n, nil
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if !n.isDir {
			return nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		child, ok := n.children[elem]
		if !ok {
			return nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOENT}
		}
		n = child
	}
	return n, nil
}

// parent returns the directory that holds the cleaned path p and p's last
// element. The root has no parent, so naming it is an error for every
// caller. fs.mu must be held.
func (fs *MemFS) parent(op, name, p string) (*memNode, string, error) {
	if p == "/" {
		return nil, "", &os.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	dir, err := fs.resolve(op, name, path.Dir(p))
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return dir, path.Base(p), nil
}

// Create creates or truncates the named file; its parent must exist. The
// returned file can be both written and read.
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.createLocked("create", name)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.data = nil
	n.mu.Unlock()
	return &memFile{name: name, node: n, fs: fs, writable: true}, nil
}

// createLocked returns the file at name, adding an entry for a new one.
// fs.mu must be held.
func (fs *MemFS) createLocked(op, name string) (*memNode, error) {
	dir, base, err := fs.parent(op, name, cleanPath(name))
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	if !ok {
		n = &memNode{}
		dir.children[base] = n
	}
	if n.isDir {
		return nil, &os.PathError{Op: op, Path: name, Err: syscall.EISDIR}
	}
	return n, nil
}

// Open opens the named file for reading.
func (fs *MemFS) Open(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.resolve("open", name, cleanPath(name))
	if err != nil {
		return nil, err
	}
	if n.isDir {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	return &memFile{name: name, node: n}, nil
}

// OpenDir opens a directory; syncing the handle makes its current entries
// durable.
func (fs *MemFS) OpenDir(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.resolve("open", name, cleanPath(name))
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	return &memFile{name: name, node: n, fs: fs}, nil
}

// Remove removes a file or an empty directory. Open handles on a removed
// file keep working, as on POSIX.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parent("remove", name, cleanPath(name))
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.children) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname to newname, replacing a file there (or an empty
// directory, when oldname is a directory too).
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	oldp, newp := cleanPath(oldname), cleanPath(newname)
	linkErr := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errno}
	}
	oldDir, oldBase, err := fs.parent("rename", oldname, oldp)
	if err != nil {
		return err
	}
	n, ok := oldDir.children[oldBase]
	if !ok {
		return linkErr(syscall.ENOENT)
	}
	newDir, newBase, err := fs.parent("rename", newname, newp)
	if err != nil {
		return err
	}
	if oldp == newp {
		return nil
	}
	if n.isDir && strings.HasPrefix(newp, oldp+"/") {
		return linkErr(syscall.EINVAL)
	}
	if target, ok := newDir.children[newBase]; ok {
		switch {
		case target.isDir && !n.isDir:
			return linkErr(syscall.EISDIR)
		case !target.isDir && n.isDir:
			return linkErr(syscall.ENOTDIR)
		case target.isDir && len(target.children) > 0:
			return linkErr(syscall.ENOTEMPTY)
		}
	}
	newDir.children[newBase] = n
	delete(oldDir.children, oldBase)
	return nil
}

// Link makes newname a second name of the file oldname: both share one
// inode, so a write through either is seen through both, and CrashClone
// keeps them shared where both entries are durable. newname must not
// exist.
func (fs *MemFS) Link(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	linkErr := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errno}
	}
	n, err := fs.resolve("link", oldname, cleanPath(oldname))
	if err != nil {
		return err
	}
	if n.isDir {
		return linkErr(syscall.EPERM)
	}
	dir, base, err := fs.parent("link", newname, cleanPath(newname))
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return linkErr(syscall.EEXIST)
	}
	dir.children[base] = n
	return nil
}

// MkdirAll creates dir and any missing parents. perm is ignored.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := cleanPath(dir)
	n := fs.root
	if p == "/" {
		return nil
	}
	for _, elem := range strings.Split(p[1:], "/") {
		child, ok := n.children[elem]
		if !ok {
			child = newMemDir()
			n.children[elem] = child
		}
		if !child.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// List returns the sorted names of dir's entries.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.resolve("open", dir, cleanPath(dir))
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &os.PathError{Op: "readdirent", Path: dir, Err: syscall.ENOTDIR}
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes the named file or directory.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := cleanPath(name)
	n, err := fs.resolve("stat", name, p)
	if err != nil {
		return nil, err
	}
	return n.stat(path.Base(p)), nil
}

// Lock takes an in-memory exclusive lock on name, creating the file if
// needed (the new entry is durable only after a directory sync, as with
// Create). Locks belong to this MemFS alone and are not carried into a
// CrashClone, just as a crash releases every flock.
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, err := fs.createLocked("lock", name); err != nil {
		return nil, err
	}
	p := cleanPath(name)
	if fs.locks[p] {
		return nil, fmt.Errorf("vfs: lock %s: %w in this MemFS (%w)", name, ErrLocked, syscall.EWOULDBLOCK)
	}
	fs.locks[p] = true
	return &memLock{fs: fs, path: p}, nil
}

// PathJoin joins path elements with slashes.
func (fs *MemFS) PathJoin(elem ...string) string { return path.Join(elem...) }

// CrashClone returns a new, independent MemFS holding what the disk would
// hold had the power failed now: the durable directory entries, each
// pointing to the durable data of its file. Entries reachable under two
// durable names share one inode in the clone, like a hard link. It may run
// while other goroutines use fs and does not change fs.
func (fs *MemFS) CrashClone() *MemFS { return fs.crashClone(nil) }

// CrashPageSize is the unit in which CrashCloneReorder keeps or loses
// unsynced file data: the page size of the kernel's page cache.
const CrashPageSize = 4 << 10

// CrashCloneReorder is CrashClone for a kernel that had begun writing dirty
// pages back, in no particular order, when the power failed. What is
// durable survives as with CrashClone; besides that, rng decides
// independently
//   - for each CrashPageSize page of a file whose unsynced data differs
//     from its durable data there, whether the page reached the disk: if it
//     did, the clone holds its current bytes; if not, its durable bytes,
//     and beyond the durable size zeros or garbage (stale blocks), which
//     rng also picks;
//   - for each file whose size changed since its last sync, whether the
//     new size reached the disk (otherwise the durable size stays);
//   - for each unsynced directory change of one name (a new entry, a
//     removed one, or a name now pointing to another inode), whether it
//     reached the disk. So a rename may leave both names, either, or
//     neither.
//
// A file that a write or a Create's truncation touched after its last sync
// may therefore come back as [durable][lost page][surviving page]: the
// damage a log reader meets after a real power loss. The clone is a
// function of fs's state and rng's sequence; everything in it is durable.
func (fs *MemFS) CrashCloneReorder(rng *rand.Rand) *MemFS { return fs.crashClone(rng) }

func (fs *MemFS) crashClone(rng *rand.Rand) *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := &crashCopier{rng: rng, memo: map[*memNode]*memNode{}}
	clone := &MemFS{locks: map[string]bool{}, root: c.copy(fs.root)}
	clone.capacity.Store(fs.capacity.Load())
	return clone
}

// crashCopier builds a crash clone. memo keeps shared inodes shared and
// ends cycles, which durable entry sets written at different times can
// form after directory renames. rng is nil for CrashClone.
type crashCopier struct {
	rng  *rand.Rand
	memo map[*memNode]*memNode
}

// copy returns the crash state of n and of everything below it.
func (c *crashCopier) copy(n *memNode) *memNode {
	if cp, ok := c.memo[n]; ok {
		return cp
	}
	if !n.isDir {
		n.mu.RLock()
		data := n.durable
		if c.rng != nil {
			data = c.reorderData(n.data, n.durable)
		}
		n.mu.RUnlock()
		cp := &memNode{data: data, durable: data}
		c.memo[n] = cp
		return cp
	}
	cp := newMemDir()
	c.memo[n] = cp
	entries := n.durableChildren
	if c.rng != nil {
		entries = c.reorderEntries(n)
	}
	// Sorted, so that the clone depends on rng alone, not on map order.
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		child := c.copy(entries[name])
		cp.children[name] = child
		cp.durableChildren[name] = child
	}
	return cp
}

// reorderEntries picks, name by name, the durable or the current entry of
// a directory.
func (c *crashCopier) reorderEntries(n *memNode) map[string]*memNode {
	out := maps.Clone(n.durableChildren)
	names := slices.Collect(maps.Keys(n.children))
	for name := range n.durableChildren {
		if _, ok := n.children[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		cur, ok := n.children[name]
		if out[name] == cur || c.rng.IntN(2) == 0 {
			continue
		}
		if ok {
			out[name] = cur
		} else {
			delete(out, name)
		}
	}
	return out
}

// reorderData returns a file's bytes after a crash that wrote back a random
// subset of the pages where data, the current bytes, differs from durable.
func (c *crashCopier) reorderData(data, durable []byte) []byte {
	if bytes.Equal(data, durable) {
		return durable
	}
	size := len(durable)
	if len(data) != size && c.rng.IntN(2) == 0 {
		size = len(data)
	}
	out := make([]byte, size)
	copy(out, durable)
	for off := 0; off < size; off += CrashPageSize {
		end := min(off+CrashPageSize, size)
		cur := data[min(off, len(data)):min(end, len(data))]
		old := durable[min(off, len(durable)):min(end, len(durable))]
		if bytes.Equal(cur, old) {
			continue
		}
		switch c.rng.IntN(4) {
		case 0, 1: // written back
			copy(out[off:end], cur)
		case 2: // lost; past the durable size the disk holds zeros
		default: // lost; past the durable size the disk holds stale bytes
			for i := off + len(old); i < end; i++ {
				out[i] = byte(c.rng.Uint32())
			}
		}
	}
	return out
}

// String lists every visible path with its size, the size that would
// survive a crash, and a mark on entries whose directory was not synced
// since they appeared; it is meant for test failure messages.
func (fs *MemFS) String() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var b strings.Builder
	var walk func(dir *memNode, prefix string)
	walk = func(dir *memNode, prefix string) {
		for _, name := range slices.Sorted(maps.Keys(dir.children)) {
			n := dir.children[name]
			mark := ""
			if dir.durableChildren[name] != n {
				mark = " (entry not synced)"
			}
			if n.isDir {
				fmt.Fprintf(&b, "%s%s/%s\n", prefix, name, mark)
				walk(n, prefix+name+"/")
				continue
			}
			n.mu.RLock()
			fmt.Fprintf(&b, "%s%s %d bytes, %d synced%s\n", prefix, name, len(n.data), len(n.durable), mark)
			n.mu.RUnlock()
		}
	}
	walk(fs.root, "/")
	return b.String()
}

func (n *memNode) stat(name string) os.FileInfo {
	if n.isDir {
		return memFileInfo{name: name, mode: os.ModeDir | 0o755}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memFileInfo{name: name, size: int64(len(n.data)), mode: 0o644}
}

// memFile is an open file or directory. Directory handles carry fs, which
// Sync needs to read the entry set under fs.mu.
type memFile struct {
	name     string
	node     *memNode
	fs       *MemFS
	writable bool
	closed   atomic.Bool

	// offMu serializes Read and Write, which share the offset; ReadAt does
	// not touch it and so runs concurrently.
	offMu sync.Mutex
	off   int64
}

func (f *memFile) check(op string) error {
	if f.closed.Load() {
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	}
	if f.node.isDir && op != "sync" && op != "stat" && op != "close" {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	if err := f.check("read"); err != nil {
		return 0, err
	}
	f.offMu.Lock()
	defer f.offMu.Unlock()
	n, err := f.node.readAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	return f.node.readAt(p, off)
}

// readAt follows io.ReaderAt: a short read comes with io.EOF.
func (n *memNode) readAt(p []byte, off int64) (int, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	f.offMu.Lock()
	defer f.offMu.Unlock()
	n, err := f.writeAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// writeAt writes p at off within the byte budget: a write that would grow
// the filesystem past it writes the prefix that fits and fails with
// ENOSPC, as a real full disk does.
func (f *memFile) writeAt(p []byte, off int64) (int, error) {
	var err error
	n := f.node
	if f.fs != nil && f.fs.capacity.Load() > 0 {
		f.fs.capMu.Lock()
		defer f.fs.capMu.Unlock()
		room := f.fs.capacity.Load() - f.fs.used()
		n.mu.RLock()
		grow := off + int64(len(p)) - int64(len(n.data))
		n.mu.RUnlock()
		if grow > room {
			p = p[:max(int64(len(p))-(grow-max(room, 0)), 0)]
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
	}
	n.mu.Lock()
	n.data = writeAt(n.data, p, int(off), len(n.durable))
	n.mu.Unlock()
	return len(p), err
}

// WriteAt writes p at off without moving the offset Write uses; bytes
// past the end of the file are zeros.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: errors.New("negative offset")}
	}
	return f.writeAt(p, off)
}

// writeAt returns data with p written at off. Bytes a durable state shares
// (the first frozen bytes) are never changed in place (see memNode): an
// overwrite there copies the array. Past them, the write goes in place, so
// a WAL that overwrites the zeros written ahead of it costs no copy.
func writeAt(data, p []byte, off, frozen int) []byte {
	if off < frozen && off < len(data) {
		out := make([]byte, max(len(data), off+len(p)))
		copy(out, data)
		copy(out[off:], p)
		return out
	}
	// A gap, after another handle truncated the file, reads as zeros.
	if off > len(data) {
		data = append(data, make([]byte, off-len(data))...)
	}
	n := copy(data[off:], p)
	return append(data, p[n:]...)
}

// Sync makes a file's current data, or a directory's current entry set,
// durable.
func (f *memFile) Sync() error {
	if err := f.check("sync"); err != nil {
		return err
	}
	n := f.node
	if n.isDir {
		f.fs.mu.Lock()
		n.durableChildren = maps.Clone(n.children)
		f.fs.mu.Unlock()
		return nil
	}
	n.mu.Lock()
	n.durable = n.data[:len(n.data):len(n.data)]
	n.mu.Unlock()
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	return f.node.stat(path.Base(cleanPath(f.name))), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	return nil
}

// memLock is a held MemFS.Lock.
type memLock struct {
	fs       *MemFS
	path     string
	released atomic.Bool
}

func (l *memLock) Close() error {
	if l.released.Swap(true) {
		return &os.PathError{Op: "unlock", Path: l.path, Err: os.ErrClosed}
	}
	l.fs.mu.Lock()
	delete(l.fs.locks, l.path)
	l.fs.mu.Unlock()
	return nil
}

// memFileInfo is the os.FileInfo of a MemFS file; ModTime is always zero
// because nothing in the engine depends on it.
type memFileInfo struct {
	name string
	size int64
	mode os.FileMode
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (i memFileInfo) Mode() os.FileMode  { return i.mode }
func (i memFileInfo) ModTime() time.Time { return time.Time{} }
func (i memFileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memFileInfo) Sys() any           { return nil }

// SetCapacity gives the filesystem a byte budget: the data of all its
// files together may not exceed n, and a write that would exceed it
// writes what fits and fails with ENOSPC. Removing or truncating files
// frees space at once. n <= 0 removes the budget. Directories cost
// nothing, so creating a file never fails for lack of space.
func (fs *MemFS) SetCapacity(n int64) { fs.capacity.Store(max(n, 0)) }

// DiskUsage reports the budget SetCapacity set and what is left of it; it
// fails with errors.ErrUnsupported when there is no budget.
func (fs *MemFS) DiskUsage(string) (free, total uint64, err error) {
	c := fs.capacity.Load()
	if c <= 0 {
		return 0, 0, errors.ErrUnsupported
	}
	return uint64(max(c-fs.used(), 0)), uint64(c), nil
}

// used sums the data of every file reachable from the root; a removed
// file still open holds no space here, unlike on a real disk.
func (fs *MemFS) used() int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var total int64
	var walk func(n *memNode)
	walk = func(n *memNode) {
		for _, c := range n.children {
			if c.isDir {
				walk(c)
				continue
			}
			c.mu.RLock()
			total += int64(len(c.data))
			c.mu.RUnlock()
		}
	}
	walk(fs.root)
	return total
}

// Truncate cuts the named file to size, or extends it with zeros. Like a
// write, it becomes durable at the next Sync of a handle of the file.
func (fs *MemFS) Truncate(name string, size int64) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.resolve("truncate", name, cleanPath(name))
	if err != nil {
		return err
	}
	if n.isDir || size < 0 {
		return &os.PathError{Op: "truncate", Path: name, Err: syscall.EINVAL}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case size >= int64(len(n.data)):
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	case size < int64(len(n.durable)):
		// Bytes up to len(durable) are shared with the durable state,
		// which a later append in place would overwrite (see memNode).
		n.data = slices.Clone(n.data[:size])
	default:
		n.data = n.data[:size]
	}
	return nil
}
