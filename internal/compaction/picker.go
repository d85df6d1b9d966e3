package compaction

import (
	"cmp"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// lastLevel is the deepest level; it has no score and nothing below it to
// compact into.
const lastLevel = manifest.NumLevels - 1

// Scores returns how urgently each level needs compaction; a level whose
// score is >= 1 is over its budget. L0 scores its file count against
// L0CompactionThreshold, because every L0 file is one more table a read
// must consult. L1 through L5 score their byte size against a target that
// starts at LBaseMaxBytes and grows by LevelMultiplier per level. The last
// level always scores 0.
func Scores(v *manifest.Version, cfg Config) [manifest.NumLevels]float64 {
	var s [manifest.NumLevels]float64
	s[0] = float64(len(v.Files[0])) / float64(cfg.L0CompactionThreshold)
	target := float64(cfg.LBaseMaxBytes)
	for level := 1; level < lastLevel; level++ {
		s[level] = float64(v.LevelSize(level)) / target
		target *= float64(cfg.LevelMultiplier)
	}
	return s
}

// Picker chooses compactions. It remembers, per level, the largest user key
// of the last file compacted out of that level, and the next automatic
// compaction of the level starts after it, wrapping around: every key range
// is rewritten in turn, so old tombstones and expired entries everywhere
// eventually reach a compaction. A Picker is not safe for concurrent use;
// the DB calls it under its mutex.
type Picker struct {
	cfg Config
	// cursor[n] is the largest user key of the file last picked from Ln;
	// nil means start from the level's first file.
	cursor [manifest.NumLevels][]byte
}

// NewPicker returns a picker for cfg with every cursor at the start of its
// level.
func NewPicker(cfg Config) *Picker {
	return &Picker{cfg: cfg}
}

// Pick returns the most urgent compaction none of whose files is
// Compacting, or nil when no level scores >= 1 or every such level is busy.
// L0 comes first whenever its score is >= 1, because L0 files slow every
// read and, past the stall threshold, every write; after it the levels go
// in descending score order. Pick marks nothing: the caller sets Compacting
// on AllInputs() under the same mutex before releasing it.
func (p *Picker) Pick(v *manifest.Version) *Compaction {
	scores := Scores(v, p.cfg)
	if scores[0] >= 1 {
		if c := p.pickL0(v); c != nil {
			c.Score = scores[0]
			return c
		}
	}
	levels := make([]int, 0, lastLevel-1)
	for level := 1; level < lastLevel; level++ {
		if scores[level] >= 1 {
			levels = append(levels, level)
		}
	}
	// Stable, so that equal scores favour the shallower level, whose
	// data is newer and more often rewritten.
	slices.SortStableFunc(levels, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	for _, level := range levels {
		if c := p.pickRoundRobin(v, level); c != nil {
			c.Score = scores[level]
			return c
		}
	}
	return nil
}

// PickManual returns a compaction of the files of level overlapping the
// user-key range [start, end] (nil bounds are unbounded) into the first
// deeper level that holds keys of their range, or the last level; or nil
// when nothing overlaps, when a needed file is Compacting, or when level
// is the last level. For L0 it takes every L0 file as soon as one overlaps:
// an L0 file left behind could be older than a chosen one for some key,
// and would then sit above the newer version that moved down.
func (p *Picker) PickManual(v *manifest.Version, level int, start, end []byte) *Compaction {
	if level < 0 || level >= lastLevel {
		return nil
	}
	var inputs []*manifest.FileMetadata
	if level == 0 {
		inputs = v.Files[0]
		if (start != nil || end != nil) && len(v.Overlaps(0, start, end)) == 0 {
			return nil
		}
	} else {
		inputs = v.Overlaps(level, start, end)
	}
	if len(inputs) == 0 || anyCompacting(inputs) {
		return nil
	}
	inputs = slices.Clone(inputs)
	// The output goes to the first level below that holds keys of the
	// inputs' range, or to the last level: levels in between have nothing
	// the output could wrongly shadow or be shadowed by, and rewriting the
	// data once per empty level would only multiply the work.
	smallest, largest := userKeyRange(inputs)
	output := level + 1
	for output < lastLevel && len(v.Overlaps(output, smallest, largest)) == 0 {
		output++
	}
	c := p.newCompaction(v, level, output, inputs)
	if c == nil {
		return nil
	}
	c.Manual = true
	c.Score = Scores(v, p.cfg)[level]
	return c
}

// pickL0 builds an L0 -> L1 compaction of all L0 files, unless one is
// Compacting.
func (p *Picker) pickL0(v *manifest.Version) *Compaction {
	files := v.Files[0]
	if len(files) == 0 || anyCompacting(files) {
		return nil
	}
	return p.newCompaction(v, 0, 1, slices.Clone(files))
}

// pickRoundRobin builds an Ln -> Ln+1 compaction of one file of level: the
// first file after the level's cursor (wrapping around) that is not
// Compacting and whose overlapping files in level+1 are not Compacting
// either.
func (p *Picker) pickRoundRobin(v *manifest.Version, level int) *Compaction {
	files := v.Files[level]
	if len(files) == 0 {
		return nil
	}
	first := 0
	if cur := p.cursor[level]; cur != nil {
		first, _ = slices.BinarySearchFunc(files, cur, func(f *manifest.FileMetadata, k []byte) int {
			// Files at or before the cursor sort as "less": the search
			// lands on the first file entirely after it.
			if base.CompareUser(f.Smallest.UserKey, k) <= 0 {
				return -1
			}
			return 1
		})
	}
	for i := range files {
		f := files[(first+i)%len(files)]
		if f.Compacting {
			continue
		}
		if c := p.newCompaction(v, level, level+1, []*manifest.FileMetadata{f}); c != nil {
			p.cursor[level] = append(p.cursor[level][:0], f.Largest.UserKey...)
			return c
		}
	}
	return nil
}

// newCompaction completes a compaction of start-level inputs: it adds the
// overlapping output-level files and the grandparents, and decides
// whether the output is bottommost. It returns nil when an output-level
// file it needs is Compacting.
func (p *Picker) newCompaction(v *manifest.Version, level, output int, inputs []*manifest.FileMetadata) *Compaction {
	smallest, largest := userKeyRange(inputs)
	outputs := slices.Clone(v.Overlaps(output, smallest, largest))
	if anyCompacting(outputs) {
		return nil
	}
	// The output files may reach beyond the inputs' range. No further
	// start-level file needs to join: for L0 all files are in, and a deeper
	// level's files do not overlap each other, so leaving one out only
	// leaves newer data above older data, which is the level order anyway.
	smallest, largest = userKeyRange(inputs, outputs)
	c := &Compaction{
		StartLevel:            level,
		OutputLevel:           output,
		Inputs:                [2][]*manifest.FileMetadata{inputs, outputs},
		Bottommost:            true,
		Smallest:              smallest,
		Largest:               largest,
		maxGrandparentOverlap: maxGrandparentOverlapFactor * uint64(p.cfg.TargetFileSize),
	}
	if output+1 < manifest.NumLevels {
		c.Grandparents = slices.Clone(v.Overlaps(output+1, smallest, largest))
	}
	for deeper := output + 1; deeper < manifest.NumLevels; deeper++ {
		if len(v.Overlaps(deeper, smallest, largest)) > 0 {
			c.Bottommost = false
			break
		}
	}
	return c
}
