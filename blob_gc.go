package lsmgo

import (
	"fmt"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/internal/compaction"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// blobGC is one compaction's garbage collection of blob files
// (doc/blob.md): every entry the compaction keeps that points into one of
// the files in from has its value copied to a blob file of the
// compaction's own, and the output table points there. Once the edit that
// installs the outputs is durable, the old files lose those references;
// a file nothing points into any more is deleted (blobFiles.removeObsolete).
type blobGC struct {
	db   *DB
	from map[base.FileNum]bool

	// The output file, created at the first relocated value and pinned
	// until the edit that names it in tables is installed.
	num base.FileNum
	w   *blob.Writer

	buf, out      []byte
	values, bytes int64
}

// newBlobGC returns the garbage collection for a compaction of version v,
// or nil when no blob file is a candidate: a retired file whose bytes the
// tables of v point to are below BlobGCThreshold of its size. The count
// is an upper bound of the live bytes (shadowed versions not yet dropped
// by a compaction count too), so a file becomes a candidate late, never
// early.
func (db *DB) newBlobGC(v *manifest.Version) *blobGC {
	if from := db.blobGCCandidates(v); from != nil {
		return &blobGC{db: db, from: from}
	}
	return nil
}

// blobGCCandidates returns the blob files to collect (see newBlobGC), or
// nil.
func (db *DB) blobGCCandidates(v *manifest.Version) map[base.FileNum]bool {
	threshold := db.opts.BlobGCThreshold
	if threshold <= 0 {
		return nil
	}
	referenced := make(map[base.FileNum]uint64)
	for _, files := range v.Files {
		for _, f := range files {
			for _, r := range f.BlobRefs {
				referenced[r.FileNum] += r.Bytes
			}
		}
	}
	if len(referenced) == 0 {
		return nil
	}
	var from map[base.FileNum]bool
	for num, size := range db.blobs.retiredSizes() {
		if n, ok := referenced[num]; ok && float64(n) < threshold*float64(size) {
			if from == nil {
				from = make(map[base.FileNum]bool)
			}
			from[num] = true
		}
	}
	return from
}

// pickBlobRewrite returns a compaction that rewrites, in its level, the
// table of L1 or deeper that points to the most bytes in blob files being
// collected, or nil. It is the work the picker schedules when nothing
// else is due (doc/blob.md, "Forcing"): without it a file whose pointers
// sit in tables no compaction touches, such as the bottom level of a DB
// that stopped growing, would never be reclaimed. L0 tables are left to
// the L0 compactions that come soon anyway.
func (db *DB) pickBlobRewrite(v *manifest.Version) *compaction.Compaction {
	from := db.blobGCCandidates(v)
	if from == nil {
		return nil
	}
	var best *manifest.FileMetadata
	bestLevel, bestBytes := 0, uint64(0)
	for level := 1; level < manifest.NumLevels; level++ {
		for _, f := range v.Files[level] {
			if f.Compacting {
				continue
			}
			var n uint64
			for _, r := range f.BlobRefs {
				if from[r.FileNum] {
					n += r.Bytes
				}
			}
			if n > bestBytes {
				best, bestLevel, bestBytes = f, level, n
			}
		}
	}
	if best == nil {
		return nil
	}
	return compaction.InPlace(v, bestLevel, best)
}

// relocate returns the value to write for an entry of a blob kind: value
// itself, or, when it points into a file being collected, a pointer to a
// copy of the value in the compaction's blob file. The result is valid
// until the next call.
func (g *blobGC) relocate(key base.InternalKey, value []byte) ([]byte, error) {
	p, err := entryPointer(key.Kind(), value)
	if err != nil {
		return nil, base.Corruptf("", -1, "key %s: blob pointer: %v", key, err)
	}
	if !g.from[p.FileNum] {
		return value, nil
	}
	if g.buf, err = g.db.blobs.readPointer(p, g.buf); err != nil {
		return nil, err
	}
	if g.w == nil {
		num, f, err := g.db.blobs.create()
		if err != nil {
			return nil, err
		}
		g.num, g.w = num, blob.NewWriter(f, num, g.db.blobs.path(num))
	}
	np, err := g.w.Add(key.UserKey, g.buf)
	if err != nil {
		return nil, err
	}
	g.values++
	g.bytes += int64(len(g.buf))
	// The expiry, if any, stays in front of the pointer.
	g.out = np.Append(append(g.out[:0], value[:len(value)-len(encodedPointer(key.Kind(), value))]...))
	return g.out, nil
}

// encodedPointer returns the pointer part of a blob-kind entry's value,
// which entryPointer has accepted.
func encodedPointer(kind base.Kind, value []byte) []byte {
	if kind.HasExpiry() {
		return value[base.ExpiryLen:]
	}
	return value
}

// finish makes the compaction's blob file durable and closes it, before
// the edit that installs tables pointing into it.
func (g *blobGC) finish() error {
	if g == nil || g.w == nil {
		return nil
	}
	err := g.w.Sync()
	size := g.w.Size()
	if cerr := g.w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	g.w = nil
	if err != nil {
		return fmt.Errorf("lsmgo: blob garbage collection: %w", err)
	}
	g.db.blobs.setSize(g.num, size)
	return nil
}

// release drops the pin on the compaction's blob file: after the install,
// tables hold it; after a failure before the edit was written, nothing
// does and it is deleted. It also counts the work done.
func (g *blobGC) release(installed bool) {
	if g == nil || g.num == 0 {
		return
	}
	if g.w != nil {
		g.w.Close()
		g.w = nil
	}
	if installed {
		g.db.m.blobGCRuns.Add(1)
		g.db.m.blobGCValues.Add(g.values)
		g.db.m.blobGCBytes.Add(g.bytes)
	}
	g.db.blobs.unpin([]base.FileNum{g.num})
}
