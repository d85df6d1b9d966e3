package compaction

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// OutputSplitter decides where a compaction cuts its output tables. A table
// is finished when it reaches the target size, or when it has come to
// overlap more than maxGrandparentOverlapFactor target sizes of the next
// level down, so that compacting it later does not rewrite an unbounded
// amount of that level. A cut only happens where the user key changes: if
// two versions of one user key landed in two tables of one level, the
// tables' ranges would overlap and a read could stop in the older one.
type OutputSplitter struct {
	grandparents []*manifest.FileMetadata
	targetSize   uint64
	maxOverlap   uint64
	// next indexes the first grandparent not yet passed entirely.
	next int
	// overlap counts the bytes of grandparents passed entirely since the
	// current output table started.
	overlap uint64
	// prevUserKey is a copy of the user key last passed to ShouldCut.
	prevUserKey []byte
	hasPrev     bool
}

// NewOutputSplitter returns a splitter for c's outputs, cutting at
// targetFileSize, which must be positive.
func NewOutputSplitter(c *Compaction, targetFileSize int64) *OutputSplitter {
	return &OutputSplitter{
		grandparents: c.Grandparents,
		targetSize:   uint64(targetFileSize),
		maxOverlap:   maxGrandparentOverlapFactor * uint64(targetFileSize),
	}
}

// ShouldCut is called before nextKey is added to the output, with the
// current output table's size so far; true means finish that table first
// (then call Reset and add nextKey to a new table). It never cuts before
// the first key, and it returns false whenever nextKey has the same user key as the
// previous key passed in, whatever the size. Keys must come in
// base.CompareInternal order; nextKey is not retained.
func (s *OutputSplitter) ShouldCut(nextKey base.InternalKey, currentOutputSize uint64) bool {
	// Every key passed in joins some table, so once one has been passed a
	// table is open and holds at least that key.
	tableOpen := s.hasPrev
	if tableOpen && bytes.Equal(nextKey.UserKey, s.prevUserKey) {
		return false
	}
	s.prevUserKey = append(s.prevUserKey[:0], nextKey.UserKey...)
	s.hasPrev = true
	// Grandparents wholly before nextKey lie under the open table's range
	// if nextKey joins it. Before the first key no table is open, so
	// leading grandparents are skipped without being counted.
	for s.next < len(s.grandparents) && base.CompareUser(s.grandparents[s.next].Largest.UserKey, nextKey.UserKey) < 0 {
		if tableOpen {
			s.overlap += s.grandparents[s.next].Size
		}
		s.next++
	}
	return tableOpen && (currentOutputSize >= s.targetSize || s.overlap > s.maxOverlap)
}

// Reset starts the accounting of a new output table.
func (s *OutputSplitter) Reset() {
	s.overlap = 0
}
