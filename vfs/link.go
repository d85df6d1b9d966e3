package vfs

import (
	"errors"
	"os"
)

// Linker is an optional capability of an FS: it gives an existing file a
// second name (a hard link), so that both names reach the same bytes and
// the file lives on until both are removed. DB.Checkpoint uses it to share
// the immutable files of a DB with a checkpoint instead of copying them;
// on an FS without it, or where a link fails (another filesystem, a
// filesystem without hard links), it copies.
//
// The new name is durable, as any directory entry, once its directory has
// been synced; the data is the file's own and as durable as it already was.
type Linker interface {
	// Link creates newname as a second name of the file oldname. It fails
	// when newname exists or oldname is a directory.
	Link(oldname, newname string) error
}

// Link gives the file oldname the second name newname; it fails with an
// error matching errors.ErrUnsupported when fs cannot make hard links.
func Link(fs FS, oldname, newname string) error {
	l, ok := fs.(Linker)
	if !ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
	}
	return l.Link(oldname, newname)
}

func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }
