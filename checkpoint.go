package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// CheckpointTempSuffix ends the name of the directory a checkpoint is
// written into before it is renamed to its own name: a directory so named
// is an interrupted checkpoint, never a usable one, and the next
// Checkpoint to the same place removes it.
const CheckpointTempSuffix = ".checkpoint-tmp"

// Checkpoint writes into dir, which must not exist, a consistent copy of
// the DB that Open accepts, while writes go on. The copy holds every write
// acknowledged before the call, and of the writes made during it exactly
// those numbered below some sequence number: a prefix, never a write
// without one acknowledged before it began.
//
// How (doc/operations.md, "Backups"): Checkpoint first flushes the
// memtable, as Flush does, so that the copy needs no WAL; writes go on
// into the next memtable meanwhile. It then takes the current version of
// the tree and gives each of its tables and blob files a second name in
// the checkpoint: a hard link where the filesystem makes one (the files
// never change once written), a copy otherwise. The blob file being
// appended to is retired first (the next separated value starts a new
// one), so that it can be linked too. A fresh manifest describing exactly
// that version, and an empty WAL, are written beside them.
//
// Everything is written into dir+CheckpointTempSuffix, synced, and renamed
// to dir only at the end, the rename made durable too: after a crash, dir
// either does not exist or holds the whole checkpoint. dir's parent is
// created if needed and must be on the DB's filesystem (Options.FS). Two
// Checkpoint calls must not write to the same dir at once.
//
// A DB that is read-only after a background error cannot flush, and
// Checkpoint fails with that error.
func (db *DB) Checkpoint(dir string) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.checkpoint(dir); err != nil {
		return fmt.Errorf("lsmgo: checkpoint %s: %w", dir, err)
	}
	return nil
}

func (db *DB) checkpoint(dir string) error {
	fs := db.fs
	// "ckpt/" must name the same directory as "ckpt", not hold its
	// temporary sibling.
	dir = filepath.Clean(dir)
	if _, err := fs.Stat(dir); err == nil {
		return os.ErrExist
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	cp, err := db.pinCheckpoint()
	if err != nil {
		return err
	}
	defer cp.v.Unref()

	tmp := dir + CheckpointTempSuffix
	if err := removeFlatDir(fs, tmp); err != nil {
		return fmt.Errorf("removing an interrupted checkpoint: %w", err)
	}
	// The checkpoint's own entry is synced at the end; the directories
	// above it, if new, must be durable too.
	if err := vfs.MkdirAllSynced(fs, filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range cp.files {
		if err := linkOrCopy(fs, db.path(f.name), tmp, f.done); err != nil {
			return err
		}
	}
	if err := cp.writeManifest(fs, tmp); err != nil {
		return err
	}
	if err := vfs.SyncDir(fs, tmp); err != nil {
		return err
	}
	if err := fs.Rename(tmp, dir); err != nil {
		return err
	}
	return vfs.SyncDir(fs, filepath.Dir(dir))
}

// pinnedCheckpoint is the state a checkpoint copies: a version, pinned
// until v.Unref, and the files it needs.
type pinnedCheckpoint struct {
	v           *manifest.Version
	lastSeq     base.SeqNum
	nextFileNum base.FileNum
	files       []checkpointFile
}

// checkpointFile is a table or blob file of a checkpoint, by name in the
// DB's directory; done is set when it no longer changes.
type checkpointFile struct {
	name string
	done bool
}

// pinCheckpoint flushes the memtable, so that the copy needs no WAL, and
// pins the resulting version with the files it needs.
func (db *DB) pinCheckpoint() (*pinnedCheckpoint, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	// The values the flushed tables point to may be in the blob file
	// still appended to: retired, it can be linked, not copied.
	if err := db.blobs.retireActive(); err != nil {
		return nil, err
	}
	// The version, and the files in it, stay on disk while referenced:
	// neither a compaction nor blob garbage collection removes them.
	v, _, lastSeq := db.vs.CurrentState()
	cp := &pinnedCheckpoint{v: v, lastSeq: lastSeq, nextFileNum: db.vs.NextFileNum()}
	retired := db.blobs.retiredSizes()
	blobs := map[base.FileNum]bool{}
	for _, files := range v.Files {
		for _, f := range files {
			cp.files = append(cp.files, checkpointFile{name: base.MakeFilename(base.FileTypeTable, f.FileNum), done: true})
			for _, r := range f.BlobRefs {
				blobs[r.FileNum] = true
			}
		}
	}
	for num := range blobs {
		// A file still written (the active file if writes came after
		// retireActive, a compaction's output) grows after the copy,
		// and a failed write may cut it, so it is copied; the bytes the
		// version's tables point to were written before.
		_, done := retired[num]
		cp.files = append(cp.files, checkpointFile{name: base.MakeFilename(base.FileTypeBlob, num), done: done})
	}
	return cp, nil
}

// writeManifest writes into dir what a checkpoint holds besides its
// tables and blob files: an empty WAL, which the manifest names as the
// oldest needed (the checkpoint needs none, but a DB always has one, as
// after a flush), and a manifest describing exactly the pinned version.
func (cp *pinnedCheckpoint) writeManifest(fs vfs.FS, dir string) error {
	walNum := cp.nextFileNum
	if err := createEmpty(fs, fs.PathJoin(dir, base.MakeFilename(base.FileTypeLog, walNum))); err != nil {
		return err
	}
	return manifest.WriteCopy(fs, dir, cp.v, walNum, cp.lastSeq, walNum+1)
}

// linkOrCopy gives the file src the same name in directory dir: a hard
// link when link is set and fs makes one, otherwise a synced copy. A
// linked file is as durable as its source, which holds only synced data
// (a table is synced before its version is installed, a blob file when it
// is retired).
func linkOrCopy(fs vfs.FS, src, dir string, link bool) error {
	dst := fs.PathJoin(dir, filepath.Base(src))
	if link && vfs.Link(fs, src, dst) == nil {
		return nil
	}
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	// A blob file still written grows meanwhile: its size now covers
	// every byte the checkpoint's tables point to.
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := fs.Create(dst)
	if err != nil {
		return err
	}
	if _, err = io.CopyN(out, in, st.Size()); err != nil {
		out.Close()
		return err
	}
	return syncAndClose(out)
}

// createEmpty creates an empty file, synced.
func createEmpty(fs vfs.FS, name string) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	return syncAndClose(f)
}

// syncAndClose syncs f and closes it, returning the first error.
func syncAndClose(f vfs.File) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeFlatDir removes dir and the files in it, if it exists; a
// subdirectory in it is an error, since a checkpoint makes none.
func removeFlatDir(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := fs.Remove(fs.PathJoin(dir, name)); err != nil {
			return err
		}
	}
	return fs.Remove(dir)
}
