package manifest

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
)

// Version is an immutable snapshot of which table files make up each
// level. Readers take a reference (VersionSet.Current or Ref) for as long as
// they read its files; a file is deleted only after every Version holding
// it has been released.
type Version struct {
	// Files lists each level's files. L0 is ordered newest first (by
	// LargestSeq descending, ties by FileNum descending) and its files may
	// overlap; L1 and deeper are sorted by Smallest and their user-key
	// ranges do not overlap. The slices must not be modified.
	Files [NumLevels][]*FileMetadata

	refs atomic.Int32
	// vs is told when the last reference goes; nil for Versions built
	// outside a VersionSet.
	vs *VersionSet
	// prev and next link the VersionSet's list of live Versions, guarded
	// by vs.mu.
	prev, next *Version
}

// Ref takes a reference. The caller must already hold one (directly or via
// the VersionSet), since a released Version cannot come back.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref releases a reference. Releasing the last one decrements the file
// reference counts and may report obsolete files through
// Options.OnObsoleteFile, synchronously in the caller's goroutine.
func (v *Version) Unref() {
	switch n := v.refs.Add(-1); {
	case n < 0:
		panic("lsmgo: manifest.Version reference count below zero")
	case n == 0 && v.vs != nil:
		v.vs.release(v)
	}
}

// Overlaps returns the files of level whose user-key range intersects
// [start, end], both inclusive. A nil start or end leaves that side
// unbounded. For L0 every overlapping file is returned, newest first; no
// transitive expansion is done. The result may share memory with v.Files
// and must not be modified.
func (v *Version) Overlaps(level int, start, end []byte) []*FileMetadata {
	files := v.Files[level]
	if level == 0 {
		var out []*FileMetadata
		for _, f := range files {
			if overlaps(f, start, end) {
				out = append(out, f)
			}
		}
		return out
	}
	i := 0
	if start != nil {
		i = sort.Search(len(files), func(i int) bool {
			return bytes.Compare(files[i].Largest.UserKey, start) >= 0
		})
	}
	j := i
	for j < len(files) && (end == nil || bytes.Compare(files[j].Smallest.UserKey, end) <= 0) {
		j++
	}
	if i == j {
		return nil
	}
	return files[i:j:j]
}

func overlaps(f *FileMetadata, start, end []byte) bool {
	return (start == nil || bytes.Compare(f.Largest.UserKey, start) >= 0) &&
		(end == nil || bytes.Compare(f.Smallest.UserKey, end) <= 0)
}

// LevelSize returns the total size in bytes of level's files.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Files[level] {
		n += f.Size
	}
	return n
}

// String lists the files of every non-empty level, for dumps.
func (v *Version) String() string {
	var b strings.Builder
	for level, files := range v.Files {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if b.Len() == 0 {
		return "(empty)\n"
	}
	return b.String()
}

// CheckOrdering verifies the level invariants documented on Files and that
// every file's bounds are in order.
func (v *Version) CheckOrdering() error {
	for level, files := range v.Files {
		for i, f := range files {
			if err := f.validate(); err != nil {
				//lint:ignore ST1005 L%d is a level's name.
				return fmt.Errorf("L%d: %w", level, err)
			}
			if i == 0 {
				continue
			}
			prev := files[i-1]
			if level == 0 {
				if !l0Before(prev, f) {
					return fmt.Errorf("L0: file %d (largest seq %d) is not older than file %d (largest seq %d)",
						f.FileNum, f.LargestSeq, prev.FileNum, prev.LargestSeq)
				}
				continue
			}
			if bytes.Compare(prev.Largest.UserKey, f.Smallest.UserKey) >= 0 {
				//lint:ignore ST1005 L%d is a level's name.
				return fmt.Errorf("L%d: file %d [%s-%s] overlaps or precedes file %d [%s-%s]",
					level, f.FileNum, f.Smallest, f.Largest, prev.FileNum, prev.Smallest, prev.Largest)
			}
		}
	}
	return nil
}

// l0Before reports whether a belongs before b in L0: newer data first.
func l0Before(a, b *FileMetadata) bool {
	if a.LargestSeq != b.LargestSeq {
		return a.LargestSeq > b.LargestSeq
	}
	return a.FileNum > b.FileNum
}
