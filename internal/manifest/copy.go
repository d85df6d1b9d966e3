package manifest

import (
	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// CurrentState returns the current Version, with a reference taken, and
// the LogNum and LastSeq recorded with it, read together: a copy of the
// DB made from them describes one moment.
func (vs *VersionSet) CurrentState() (v *Version, logNum base.FileNum, lastSeq base.SeqNum) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v = vs.current
	v.Ref()
	return v, vs.logNum, vs.lastSeq
}

// NextFileNum returns the number NewFileNum would hand out next: every
// file the manifest mentions is numbered below it.
func (vs *VersionSet) NextFileNum() base.FileNum { return base.FileNum(vs.nextFileNum.Load()) }

// WriteCopy writes into dir, which must exist and hold no CURRENT, a
// manifest describing exactly v's files with logNum and lastSeq, and a
// CURRENT naming it, both durable. The manifest is numbered nextFileNum
// and its snapshot hands out numbers above that, so a DB opened on the
// copy never reuses the number of a file the copy's source had made. It
// is how DB.Checkpoint gives a checkpoint a manifest of its own.
func WriteCopy(fs vfs.FS, dir string, v *Version, logNum base.FileNum, lastSeq base.SeqNum, nextFileNum base.FileNum) error {
	vs := newVersionSet(Options{FS: fs, Dir: dir})
	vs.nextFileNum.Store(uint64(nextFileNum))
	err := vs.writeSnapshot(v.Files, logNum, lastSeq)
	if vs.manifestFile != nil {
		if cerr := vs.manifestFile.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
