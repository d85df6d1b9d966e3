package vfs

// WriteMapper is an optional capability of a File returned by Create: the
// file can be written through a shared memory mapping. A store into the
// mapping is a store into the OS's page cache of the file, made without a
// system call, and like a write(2) it survives the death of the process
// (not a power loss: Sync makes it durable). The WAL uses it so that a
// commit costs no system call (doc/durability.md); an FS whose files lack
// it (MemFS, errorfs) is written with Write as before.
//
// A store into a mapping faults (SIGBUS) where the file has no backing for
// it: past the file's end, or where the filesystem cannot allocate a block.
// A writer therefore allocates every byte before it stores into it; then a
// full disk fails Allocate, with ENOSPC, and not a store. (Mapping bytes
// past the end is allowed; only a store there faults.) A copy-on-write
// filesystem (btrfs) may still fail a store into allocated bytes when it
// runs out of space; a writer that catches the fault writes the bytes again
// with WriteAt, which reports the ENOSPC.
type WriteMapper interface {
	// Allocate gives bytes [off, off+n) of the file disk space now,
	// extending the file when they lie past its end; bytes never written
	// read as zeros. Bytes already in the file are left as they are. It
	// fails with an error matching syscall.ENOSPC when the disk has no
	// room. unit is the size of the page-cache pieces the allocation
	// leaves: a store dirties, and a sync writes back, a whole piece, so a
	// writer that syncs a few bytes at a time asks for small pieces, and
	// one that rarely syncs for large ones, which fault less often.
	Allocate(off, n int64, unit int) error
	// WriteAt writes through the file, not the mapping.
	WriteAt(p []byte, off int64) (int, error)
	// Map maps bytes [off, off+n) of the file for reading and writing,
	// shared with the file. off must be a multiple of os.Getpagesize().
	// A filesystem that cannot map files fails it.
	Map(off int64, n int) ([]byte, error)
	// Unmap releases a mapping Map returned; b must not be used after.
	Unmap(b []byte) error
}
