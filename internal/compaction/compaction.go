// Package compaction owns the policy of the leveled LSM tree: which files to
// compact next (the Picker), where to cut output tables (the
// OutputSplitter), and which entries of the merged input survive (the Iter:
// snapshot-aware garbage dropping, TTL expiry, tombstone removal at the
// bottom). It is pure logic: it does no I/O, keeps no locks, and never
// mutates a Version or a FileMetadata. The DB calls it with its mutex held,
// marks the chosen files Compacting itself, and runs the merge.
//
// Invariants the package relies on and preserves:
//   - L0 files may overlap; L1 and deeper levels hold files sorted by
//     smallest key whose user-key ranges do not overlap.
//   - For any user key, every version in level n is newer than every version
//     in level n+1, and among L0 files newer files hold newer versions. A
//     compaction therefore takes all L0 files at once, and takes, for its
//     start-level files, every overlapping file of the output level.
//   - Two compactions never share a file: a pick is refused when any file
//     it needs is already Compacting. Because the output level's inputs are
//     all the files overlapping the start files, the outputs of concurrent
//     compactions into one level cover disjoint key ranges.
//   - The versions of one user key never span two output tables of a level.
//
// Slice lifetimes: a Compaction's slices are freshly allocated and owned by
// the caller; the *FileMetadata pointers are shared with the Version.
package compaction

import (
	"fmt"
	"strings"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// maxGrandparentOverlapFactor bounds, in multiples of the target file size,
// how many bytes of the next level one output table may overlap: a table
// overlapping more would make its own later compaction rewrite that much.
const maxGrandparentOverlapFactor = 10

// Config holds the leveled policy's knobs. It has no defaults of its own:
// the caller passes every field set and positive (the root package fills
// them from Options, which owns the defaults).
type Config struct {
	// L0CompactionThreshold is the L0 file count that triggers L0 -> L1.
	L0CompactionThreshold int
	// LBaseMaxBytes is the target size of L1 in bytes.
	LBaseMaxBytes int64
	// LevelMultiplier is the target size ratio of Ln+1 to Ln.
	LevelMultiplier int
	// TargetFileSize is the size at which output tables are cut.
	TargetFileSize int64
}

// Compaction is one unit of work: merge Inputs[0] (files of StartLevel) with
// Inputs[1] (the overlapping files of OutputLevel) into new files of
// OutputLevel.
type Compaction struct {
	// StartLevel is the level the compaction drains.
	StartLevel int
	// OutputLevel is where the outputs go: StartLevel+1, or for a manual
	// compaction possibly deeper, past levels with nothing in its range.
	OutputLevel int
	// Inputs holds the files of StartLevel and of OutputLevel, each slice in
	// its level's order (L0 newest first, deeper levels by key).
	Inputs [2][]*manifest.FileMetadata
	// Grandparents are the files of OutputLevel+1 overlapping the
	// compaction's key range, by key; the OutputSplitter cuts on them.
	Grandparents []*manifest.FileMetadata
	// Score is the start level's score when the compaction was picked.
	Score float64
	// Bottommost is true when no file in any level deeper than OutputLevel
	// overlaps [Smallest, Largest]: nothing older can exist below the
	// outputs, so tombstones and expired entries can vanish.
	Bottommost bool
	// Manual is true for compactions requested through PickManual.
	Manual bool
	// Smallest and Largest bound the user keys of all inputs, inclusive.
	// They share memory with the input files' keys: read only.
	Smallest, Largest []byte

	// maxGrandparentOverlap is the grandparent byte limit of TrivialMove.
	maxGrandparentOverlap uint64
}

// InPlace returns the compaction that rewrites the single file f of
// level (1 or deeper) into the same level: its outputs stay within f's key
// range, which no other file of the level overlaps. It serves work that
// must see entries no policy compaction would soon reach, such as the
// bottom of a DB that stopped growing: blob garbage collection, and the
// compaction filter's reclaiming. It is Manual, so never a trivial move.
func InPlace(v *manifest.Version, level int, f *manifest.FileMetadata) *Compaction {
	c := &Compaction{
		StartLevel:  level,
		OutputLevel: level,
		Inputs:      [2][]*manifest.FileMetadata{{f}, nil},
		Manual:      true,
		Smallest:    f.Smallest.UserKey,
		Largest:     f.Largest.UserKey,
		Bottommost:  true,
	}
	for deeper := level + 1; deeper < manifest.NumLevels; deeper++ {
		if len(v.Overlaps(deeper, c.Smallest, c.Largest)) > 0 {
			c.Bottommost = false
			break
		}
	}
	if level+1 < manifest.NumLevels {
		c.Grandparents = v.Overlaps(level+1, c.Smallest, c.Largest)
	}
	return c
}

// AllInputs returns the files of both input levels in one new slice: the
// set the caller marks Compacting and later deletes.
func (c *Compaction) AllInputs() []*manifest.FileMetadata {
	all := make([]*manifest.FileMetadata, 0, len(c.Inputs[0])+len(c.Inputs[1]))
	all = append(all, c.Inputs[0]...)
	return append(all, c.Inputs[1]...)
}

// TrivialMove reports whether the compaction may be run by re-linking its
// single input file into OutputLevel instead of rewriting it: nothing in the
// output level overlaps it and it does not overlap too many grandparent
// bytes. A moved file keeps its shadowed versions, tombstones and expired
// entries, so manual compactions (asked for to reclaim space) never move.
func (c *Compaction) TrivialMove() bool {
	if c.Manual || len(c.Inputs[0]) != 1 || len(c.Inputs[1]) != 0 {
		return false
	}
	return totalSize(c.Grandparents) <= c.maxGrandparentOverlap
}

// String describes the compaction for logs and tests, e.g.
// "L1->L2 score=1.50 in=[000007] out=[000003 000004] gp=[000009] keys=[a,f] bottommost".
func (c *Compaction) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d->L%d score=%.2f in=[%s] out=[%s] gp=[%s] keys=[%s,%s]",
		c.StartLevel, c.OutputLevel, c.Score,
		fileNums(c.Inputs[0]), fileNums(c.Inputs[1]), fileNums(c.Grandparents),
		c.Smallest, c.Largest)
	if c.Bottommost {
		b.WriteString(" bottommost")
	}
	if c.Manual {
		b.WriteString(" manual")
	}
	return b.String()
}

func fileNums(files []*manifest.FileMetadata) string {
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%06d", f.FileNum)
	}
	return b.String()
}

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// anyCompacting reports whether some file already belongs to a running
// compaction.
func anyCompacting(files []*manifest.FileMetadata) bool {
	for _, f := range files {
		if f.Compacting {
			return true
		}
	}
	return false
}

// userKeyRange returns the smallest and largest user keys of files, at
// least one of which must be given. Both results are non-nil even for the
// empty user key, because nil means "unbounded" to Version.Overlaps.
func userKeyRange(files ...[]*manifest.FileMetadata) (smallest, largest []byte) {
	first := true
	for _, level := range files {
		for _, f := range level {
			if first || base.CompareUser(f.Smallest.UserKey, smallest) < 0 {
				smallest = f.Smallest.UserKey
			}
			if first || base.CompareUser(f.Largest.UserKey, largest) > 0 {
				largest = f.Largest.UserKey
			}
			first = false
		}
	}
	if smallest == nil {
		smallest = []byte{}
	}
	if largest == nil {
		largest = []byte{}
	}
	return smallest, largest
}
