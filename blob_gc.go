package lsmgo

import (
	"cmp"
	"fmt"
	"slices"

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

// blobSpaceTarget bounds the bytes of the retired blob files that tables
// point into, as a multiple of the bytes they point to: past it, the
// files least live are collected even when more than BlobGCThreshold of
// them is live, until the rest is within the bound. BlobGCThreshold alone
// lets each file stay up to half garbage (the default), which random
// overwrites approach: 1.8 times the live bytes in TestBlobGCSettles, 2.08
// in the 2 GB benchmark. Collecting a file that is a fraction f live
// copies f/(1-f) bytes per byte freed, 4 at the f = 0.8 this bound can
// reach.
const blobSpaceTarget = 1.25

// newBlobGC returns the garbage collection for a compaction of version v
// that collects the blob files in from, or when from is nil the files
// below BlobGCThreshold (blobGCCandidates); nil when there are none.
func (db *DB) newBlobGC(v *manifest.Version, from map[base.FileNum]bool) *blobGC {
	if from == nil {
		from = db.blobGCCandidates(v, false)
	}
	if from != nil {
		return &blobGC{db: db, from: from}
	}
	return nil
}

// blobGCCandidates returns the blob files to collect, or nil: the retired
// files whose record bytes the tables of v point to are below
// BlobGCThreshold of their records' size, and with toTarget then, least live first, those that bring
// the retired files within blobSpaceTarget of what the tables point to.
// Only a quiet DB collects to the target (pickBlobRewrite), so a burst of
// overwrites does not copy values its next writes will kill. The count is
// an upper bound of the live bytes (shadowed versions not yet dropped by
// a compaction count too), so a file becomes a candidate late, never
// early; pickBlobMerge makes the count exact. (Tables written before the
// count included record headers and keys count values only: their files
// may be collected once, early.)
func (db *DB) blobGCCandidates(v *manifest.Version, toTarget bool) map[base.FileNum]bool {
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
	type file struct {
		num       base.FileNum
		size, ref float64
	}
	var files []file
	var total, live float64
	for num, size := range db.blobs.retiredSizes() {
		if n, ok := referenced[num]; ok {
			// The records, without the file header: a file all live
			// is never a candidate, whatever the threshold.
			records := uint64(max(size-blob.HeaderLen, 0))
			f := file{num, float64(records), float64(min(n, records))}
			files = append(files, f)
			total += f.size
			live += f.ref
		}
	}
	slices.SortFunc(files, func(a, b file) int {
		return cmp.Or(cmp.Compare(a.ref/a.size, b.ref/b.size), cmp.Compare(a.num, b.num))
	})
	var from map[base.FileNum]bool
	for _, f := range files {
		if f.ref >= threshold*f.size && (!toTarget || total <= blobSpaceTarget*live) {
			break
		}
		if from == nil {
			from = make(map[base.FileNum]bool)
		}
		from[f.num] = true
		total -= f.size - f.ref
	}
	return from
}

// blobMergeGain is how many blob bytes a merge for blob liveness
// (pickBlobMerge) must be able to find dead per byte of table it
// rewrites: such merges are worth it where the tables are a small tree of
// pointers to large values, and are not done where they are not.
const blobMergeGain = 4

// pickBlobMerge returns, when the tree has no compaction due, a
// compaction that merges a table holding blob pointers with the older
// tables, in L0 or deeper levels, whose pointers its own may shadow; or
// nil. The references a table records (MANIFEST tag 6) count the
// versions a newer one in a higher level shadows as live until a
// compaction drops them, so after a burst of overwrites the blob files'
// garbage stays invisible to blobGCCandidates while the tree is idle.
// Merging the levels drops the shadowed pointers, the references become
// exact, and pickBlobRewrite then finds the files worth collecting. Each
// merge moves pointers down, so the merges end once no table holding
// pointers overlaps an older one. L0 is merged as a whole, as PickManual
// does; a merge is done only if the bytes it may find dead are at least
// blobMergeGain times the table bytes it rewrites (blobMergeWorthIt).
func (db *DB) pickBlobMerge(v *manifest.Version) *compaction.Compaction {
	for level := 0; level < manifest.NumLevels-1; level++ {
		for _, f := range v.Files[level] {
			if f.Compacting || len(f.BlobRefs) == 0 {
				continue
			}
			// Below L0 a merge has two layers, and at most the smaller
			// one's bytes can die: a table pointing to less than
			// blobMergeGain times its own size is never worth it, which
			// keeps this walk from building a compaction per table of a
			// tree of small values.
			if level > 0 && blobRefBytes(f) < blobMergeGain*f.Size {
				continue
			}
			if !shadowsBlobs(v, level, f) {
				continue
			}
			var c *compaction.Compaction
			if level == 0 {
				c = db.picker.PickManual(v, 0, nil, nil)
			} else {
				c = db.picker.PickManual(v, level, f.Smallest.UserKey, f.Largest.UserKey)
			}
			if c != nil && blobMergeWorthIt(c) {
				return c
			}
			if level == 0 {
				// The whole of L0 was the candidate.
				break
			}
		}
	}
	return nil
}

// shadowsBlobs reports whether another table that points into blob files
// overlaps f's keys: another L0 table when f is in L0, or a table of a
// deeper level.
func shadowsBlobs(v *manifest.Version, level int, f *manifest.FileMetadata) bool {
	if level == 0 {
		for _, g := range v.Overlaps(0, f.Smallest.UserKey, f.Largest.UserKey) {
			if g != f && len(g.BlobRefs) > 0 {
				return true
			}
		}
	}
	for deeper := level + 1; deeper < manifest.NumLevels; deeper++ {
		for _, g := range v.Overlaps(deeper, f.Smallest.UserKey, f.Largest.UserKey) {
			if len(g.BlobRefs) > 0 {
				return true
			}
		}
	}
	return false
}

// blobMergeWorthIt reports whether c may find at least blobMergeGain
// times the bytes of its input tables dead in blob files. The inputs
// fall into layers that shadow one another (each L0 table, the start
// level's tables, the output level's tables); a key's version in one
// layer can shadow only versions in the others, so at most the blob
// bytes of all layers but the one pointing to the most can die.
func blobMergeWorthIt(c *compaction.Compaction) bool {
	var tables, total, largest uint64
	layer := func(files ...*manifest.FileMetadata) {
		var n uint64
		for _, f := range files {
			tables += f.Size
			n += blobRefBytes(f)
		}
		total += n
		largest = max(largest, n)
	}
	if c.StartLevel == 0 {
		for _, f := range c.Inputs[0] {
			layer(f)
		}
	} else {
		layer(c.Inputs[0]...)
	}
	layer(c.Inputs[1]...)
	return total-largest >= blobMergeGain*tables
}

// blobRefBytes returns the blob bytes table f points to.
func blobRefBytes(f *manifest.FileMetadata) uint64 {
	var n uint64
	for _, r := range f.BlobRefs {
		n += r.Bytes
	}
	return n
}

// pickBlobRewrite returns a compaction that rewrites the table pointing
// to the most bytes in blob files to collect, and those files, or nil.
// The files are those below BlobGCThreshold and, when quiet (no
// separated value written since the last flush, as after DB.Flush), those
// over blobSpaceTarget too (blobGCCandidates). It is the work
// the picker schedules when nothing else is due (doc/blob.md, "Forcing"):
// without it a file whose pointers sit in tables no compaction touches,
// such as the bottom level of a DB that stopped growing, would never be
// reclaimed. A table of L1 or deeper is rewritten in its level; when the
// table is in L0, all of L0 is compacted into the level below it
// (PickManual), since an L0 table cannot leave L0 without the older ones.
func (db *DB) pickBlobRewrite(v *manifest.Version, quiet bool) (*compaction.Compaction, map[base.FileNum]bool) {
	from := db.blobGCCandidates(v, quiet)
	if from == nil {
		return nil, nil
	}
	var best *manifest.FileMetadata
	bestLevel, bestBytes := 0, uint64(0)
	for level := range manifest.NumLevels {
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
		return nil, nil
	}
	if bestLevel == 0 {
		return db.picker.PickManual(v, 0, nil, nil), from
	}
	return compaction.InPlace(v, bestLevel, best), from
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
	if g.buf, err = g.db.blobs.readPointer(p, g.buf[:0]); err != nil {
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
