package lsmgo

import (
	"fmt"
	"io"
	"slices"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// StreamCheckpoint makes the same consistent copy of the DB as Checkpoint,
// but hands its files to send, one after another, instead of writing them
// into a directory: a replica's primary sends them over the network, and
// the replica writes each under its name into an empty directory, which
// Open then accepts. send must consume exactly size bytes from r, or fail;
// the first error it returns ends the stream and is returned.
//
// The copy is of the same files Checkpoint links (tables, blob files),
// read where they are: they stay on disk until StreamCheckpoint returns,
// whatever compactions run meanwhile. The manifest, CURRENT and an empty
// WAL come last, made in memory. lastSeq is the sequence number of the
// copy's last write: it holds every write up to lastSeq and none after,
// so a DB opened from it has LastSeq() == lastSeq.
func (db *DB) StreamCheckpoint(send func(name string, size int64, r io.Reader) error) (lastSeq uint64, err error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	cp, err := db.pinCheckpoint()
	if err != nil {
		return 0, fmt.Errorf("lsmgo: streaming a checkpoint: %w", err)
	}
	defer cp.v.Unref()
	for _, f := range cp.files {
		if err := sendFile(db.fs, db.path(f.name), f.name, send); err != nil {
			return 0, err
		}
	}
	mem := vfs.NewMem()
	const dir = "checkpoint"
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := cp.writeManifest(mem, dir); err != nil {
		return 0, fmt.Errorf("lsmgo: streaming a checkpoint: %w", err)
	}
	names, err := mem.List(dir)
	if err != nil {
		return 0, err
	}
	// CURRENT last: a receiver has the whole copy once it has CURRENT.
	slices.Sort(names)
	if i := slices.Index(names, "CURRENT"); i >= 0 {
		names = append(slices.Delete(names, i, i+1), "CURRENT")
	}
	for _, name := range names {
		if err := sendFile(mem, mem.PathJoin(dir, name), name, send); err != nil {
			return 0, err
		}
	}
	return uint64(cp.lastSeq), nil
}

// sendFile hands the file at path to send under name, with its size now:
// a blob file still appended to grows meanwhile, and its size now covers
// every byte the copy's tables point to.
func sendFile(fs vfs.FS, path, name string, send func(string, int64, io.Reader) error) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return send(name, st.Size(), io.LimitReader(f, st.Size()))
}
