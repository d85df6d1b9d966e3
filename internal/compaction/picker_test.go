package compaction

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/testutil/datadriven"
)

// parseFile reads a file description "num:smallest-largest[:size][!]"; a
// trailing "!" marks the file Compacting and the size defaults to 100.
func parseFile(t testing.TB, s string, seq base.SeqNum) *manifest.FileMetadata {
	t.Helper()
	f := &manifest.FileMetadata{Size: 100, SmallestSeq: seq, LargestSeq: seq}
	if rest, ok := strings.CutSuffix(s, "!"); ok {
		f.Compacting = true
		s = rest
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		t.Fatalf("bad file %q", s)
	}
	num, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil {
		t.Fatalf("bad file %q: %v", s, err)
	}
	f.FileNum = base.FileNum(num)
	small, large, ok := strings.Cut(parts[1], "-")
	if !ok {
		t.Fatalf("bad file %q", s)
	}
	f.Smallest = base.MakeInternalKey([]byte(small), seq, base.KindSet)
	f.Largest = base.MakeInternalKey([]byte(large), seq, base.KindSet)
	if len(parts) == 3 {
		if f.Size, err = strconv.ParseUint(parts[2], 10, 64); err != nil {
			t.Fatalf("bad file %q: %v", s, err)
		}
	}
	return f
}

// parseVersion reads lines "Ln: file file ...". L0 files are listed newest
// first and get descending sequence numbers to match.
func parseVersion(t testing.TB, input string) *manifest.Version {
	t.Helper()
	v := &manifest.Version{}
	seq := base.SeqNum(1000)
	for _, l := range strings.Split(input, "\n") {
		name, files, ok := strings.Cut(l, ":")
		level, err := strconv.Atoi(strings.TrimPrefix(name, "L"))
		if !ok || err != nil || level < 0 || level >= manifest.NumLevels {
			t.Fatalf("bad level line %q", l)
		}
		for _, fs := range strings.Fields(files) {
			v.Files[level] = append(v.Files[level], parseFile(t, fs, seq))
			seq--
		}
	}
	return v
}

func bytesArg(c *datadriven.Case, name string) []byte {
	if s, ok := c.Arg(name); ok {
		return []byte(s)
	}
	return nil
}

func formatScores(s [manifest.NumLevels]float64) string {
	var b strings.Builder
	b.WriteString("scores:")
	for _, x := range s {
		fmt.Fprintf(&b, " %.2f", x)
	}
	return b.String()
}

func describe(c *Compaction) string {
	if c == nil {
		return "nil"
	}
	s := c.String()
	if c.TrivialMove() {
		s += " trivial-move"
	}
	return s
}

// TestPickerDataDriven runs testdata/picker. Commands:
//
//	define [threshold= lbase= mult= target=]   version from "Ln: files" lines; new Picker
//	pick [mark]                                Picker.Pick; mark sets Compacting on the inputs
//	manual level= [start=] [end=] [mark]       Picker.PickManual
//	compacting FILENUM...                      set Compacting on those files
//	done                                       clear every Compacting flag
func TestPickerDataDriven(t *testing.T) {
	var v *manifest.Version
	var p *Picker
	var cfg Config
	files := func() []*manifest.FileMetadata {
		var all []*manifest.FileMetadata
		for _, l := range v.Files {
			all = append(all, l...)
		}
		return all
	}
	datadriven.RunFile(t, "testdata/picker", func(t testing.TB, c *datadriven.Case) string {
		var picked *Compaction
		switch c.Cmd {
		case "define":
			for _, name := range []string{"threshold", "lbase", "mult", "target"} {
				if !c.HasArg(name) {
					// Config has no defaults: a script states every knob.
					c.Fatalf(t, "define needs %s=", name)
				}
			}
			cfg = Config{
				L0CompactionThreshold: c.IntArg(t, "threshold", 0),
				LBaseMaxBytes:         int64(c.IntArg(t, "lbase", 0)),
				LevelMultiplier:       c.IntArg(t, "mult", 0),
				TargetFileSize:        int64(c.IntArg(t, "target", 0)),
			}
			v = parseVersion(t, c.Input)
			p = NewPicker(cfg)
			return formatScores(Scores(v, cfg))
		case "pick":
			picked = p.Pick(v)
		case "manual":
			picked = p.PickManual(v, c.IntArg(t, "level", 0), bytesArg(c, "start"), bytesArg(c, "end"))
		case "compacting":
			for _, a := range c.Fields {
				n, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					c.Fatalf(t, "bad file number %q", a)
				}
				for _, f := range files() {
					if f.FileNum == base.FileNum(n) {
						f.Compacting = true
					}
				}
			}
			return ""
		case "done":
			for _, f := range files() {
				f.Compacting = false
			}
			return ""
		default:
			c.Fatalf(t, "unknown command")
		}
		if c.HasArg("mark") && picked != nil {
			for _, f := range picked.AllInputs() {
				f.Compacting = true
			}
		}
		return describe(picked)
	})
}

// randVersion builds a random but well-formed Version: overlapping L0 files
// and non-overlapping sorted files in deeper levels, some Compacting.
func randVersion(r *rand.Rand) *manifest.Version {
	v := &manifest.Version{}
	num := base.FileNum(1)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }
	newFile := func(lo, hi int) *manifest.FileMetadata {
		f := &manifest.FileMetadata{
			FileNum:    num,
			Size:       uint64(1 + r.IntN(400)),
			Smallest:   base.MakeInternalKey(key(lo), 1, base.KindSet),
			Largest:    base.MakeInternalKey(key(hi), 1, base.KindSet),
			Compacting: r.IntN(8) == 0,
		}
		num++
		return f
	}
	for range r.IntN(7) {
		lo := r.IntN(100)
		v.Files[0] = append(v.Files[0], newFile(lo, lo+r.IntN(30)))
	}
	for level := 1; level < manifest.NumLevels; level++ {
		if r.IntN(4) == 0 {
			continue
		}
		for k := r.IntN(10); k < 120; {
			hi := k + r.IntN(12)
			v.Files[level] = append(v.Files[level], newFile(k, hi))
			k = hi + 1 + r.IntN(15)
		}
	}
	return v
}

// eligible reports whether an automatic compaction could start from level
// in v: brute force over every candidate.
func eligible(v *manifest.Version, level int) bool {
	overlapsCompacting := func(files []*manifest.FileMetadata) bool {
		s, l := userKeyRange(files)
		return anyCompacting(v.Overlaps(level+1, s, l))
	}
	if level == 0 {
		return len(v.Files[0]) > 0 && !anyCompacting(v.Files[0]) && !overlapsCompacting(v.Files[0])
	}
	for _, f := range v.Files[level] {
		if !f.Compacting && !overlapsCompacting([]*manifest.FileMetadata{f}) {
			return true
		}
	}
	return false
}

// checkCompaction verifies a compaction's fields against v by brute force.
func checkCompaction(t *testing.T, v *manifest.Version, c *Compaction) {
	t.Helper()
	wantOutput := c.StartLevel + 1
	if c.Manual {
		wantOutput = manualOutputLevel(v, c.StartLevel, c.Inputs[0])
	}
	if c.OutputLevel != wantOutput {
		t.Fatalf("%s: bad levels, want output L%d", c, wantOutput)
	}
	if anyCompacting(c.AllInputs()) {
		t.Fatalf("%s: picked a compacting file", c)
	}
	if c.StartLevel == 0 && len(c.Inputs[0]) != len(v.Files[0]) {
		t.Fatalf("%s: L0 compaction must take all %d L0 files", c, len(v.Files[0]))
	}
	s, l := userKeyRange(c.Inputs[0])
	if want := v.Overlaps(c.OutputLevel, s, l); !slices.Equal(c.Inputs[1], want) {
		t.Fatalf("%s: output-level inputs differ from overlaps %d", c, len(want))
	}
	s, l = userKeyRange(c.AllInputs())
	if string(s) != string(c.Smallest) || string(l) != string(c.Largest) {
		t.Fatalf("%s: range want [%s,%s]", c, s, l)
	}
	var wantGP []*manifest.FileMetadata
	bottom := true
	for level := c.OutputLevel + 1; level < manifest.NumLevels; level++ {
		for _, f := range v.Files[level] {
			if string(f.Largest.UserKey) >= string(s) && string(f.Smallest.UserKey) <= string(l) {
				bottom = false
				if level == c.OutputLevel+1 {
					wantGP = append(wantGP, f)
				}
			}
		}
	}
	if !slices.Equal(c.Grandparents, wantGP) || c.Bottommost != bottom {
		t.Fatalf("%s: want %d grandparents, bottommost=%v", c, len(wantGP), bottom)
	}
}

// manualOutputLevel is where a manual compaction of inputs from level must
// go, by brute force: the first deeper level with a file overlapping their
// user-key range, or the last level.
func manualOutputLevel(v *manifest.Version, level int, inputs []*manifest.FileMetadata) int {
	s, l := userKeyRange(inputs)
	for out := level + 1; out < manifest.NumLevels; out++ {
		for _, f := range v.Files[out] {
			if string(f.Largest.UserKey) >= string(s) && string(f.Smallest.UserKey) <= string(l) {
				return out
			}
		}
	}
	return manifest.NumLevels - 1
}

// TestPickerRandom checks Pick on random versions against brute force: it
// picks exactly when some level over budget has an eligible candidate, L0
// first, otherwise the highest-scoring eligible level; and the compaction's
// fields agree with the version.
func TestPickerRandom(t *testing.T) {
	seed := uint64(20240611)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	cfg := Config{L0CompactionThreshold: 3, LBaseMaxBytes: 1000, LevelMultiplier: 2, TargetFileSize: 50}
	const iterations = 3000
	var picks, l0Picks, manualPicks int
	defer func() {
		t.Logf("%d automatic picks (%d from L0), %d manual picks", picks, l0Picks, manualPicks)
		// The generator must exercise both outcomes of every question.
		if picks < iterations/10 || picks > iterations*9/10 || l0Picks < picks/10 || manualPicks < iterations/10 {
			t.Errorf("random versions exercise the picker too little")
		}
	}()
	for iter := range iterations {
		v := randVersion(r)
		scores := Scores(v, cfg)
		c := NewPicker(cfg).Pick(v)
		want := -1
		if scores[0] >= 1 && eligible(v, 0) {
			want = 0
		} else {
			for level := 1; level < manifest.NumLevels-1; level++ {
				if scores[level] >= 1 && eligible(v, level) && (want < 0 || scores[level] > scores[want]) {
					want = level
				}
			}
		}
		switch {
		case want < 0 && c != nil:
			t.Fatalf("iteration %d: picked %s, want nil", iter, c)
		case want >= 0 && c == nil:
			t.Fatalf("iteration %d: picked nil, want L%d", iter, want)
		case want >= 0 && c.StartLevel != want:
			t.Fatalf("iteration %d: picked %s, want L%d", iter, c, want)
		case c != nil:
			picks++
			if c.StartLevel == 0 {
				l0Picks++
			}
			checkCompaction(t, v, c)
			if c.Score != scores[want] || c.Manual {
				t.Fatalf("iteration %d: %s: want score %.2f, not manual", iter, c, scores[want])
			}
		}

		level := r.IntN(manifest.NumLevels)
		var start, end []byte
		if r.IntN(2) == 0 {
			start = fmt.Appendf(nil, "k%03d", r.IntN(130))
		}
		if r.IntN(2) == 0 {
			end = fmt.Appendf(nil, "k%03d", r.IntN(130))
		}
		m := NewPicker(cfg).PickManual(v, level, start, end)
		overlapping := level < manifest.NumLevels-1 && len(v.Overlaps(level, start, end)) > 0
		if m == nil {
			if overlapping && !(level == 0 && anyCompacting(v.Files[0])) && !anyCompacting(v.Overlaps(level, start, end)) {
				inputs := v.Overlaps(level, start, end)
				if level == 0 {
					inputs = v.Files[0]
				}
				s, l := userKeyRange(inputs)
				if !anyCompacting(v.Overlaps(manualOutputLevel(v, level, inputs), s, l)) {
					t.Fatalf("iteration %d: manual L%d [%s,%s] picked nil", iter, level, start, end)
				}
			}
			continue
		}
		if !overlapping || !m.Manual || m.StartLevel != level || m.TrivialMove() {
			t.Fatalf("iteration %d: manual L%d [%s,%s] picked %s", iter, level, start, end, m)
		}
		if level > 0 && !slices.Equal(m.Inputs[0], v.Overlaps(level, start, end)) {
			t.Fatalf("iteration %d: manual %s: start inputs differ", iter, m)
		}
		checkCompaction(t, v, m)
		manualPicks++
	}
}

// TestPickerRoundRobin checks that successive picks from one level, with
// nothing marked, visit every file once per cycle in key order, starting
// over after the last.
func TestPickerRoundRobin(t *testing.T) {
	seed := uint64(7)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for iter := range 200 {
		v := randVersion(r)
		level := 1 + r.IntN(manifest.NumLevels-2)
		v.Files[0] = nil
		for l := 1; l < manifest.NumLevels-1; l++ {
			if l != level {
				v.Files[l] = nil
			}
		}
		for _, files := range v.Files {
			for _, f := range files {
				f.Compacting = false
			}
		}
		n := len(v.Files[level])
		if n == 0 {
			continue
		}
		// Size the level exactly at its target so it is the only one due.
		cfg := Config{L0CompactionThreshold: 4, LBaseMaxBytes: int64(v.LevelSize(level)), LevelMultiplier: 1, TargetFileSize: 2 << 20}
		p := NewPicker(cfg)
		for i := range 3 * n {
			c := p.Pick(v)
			if c == nil || c.StartLevel != level || len(c.Inputs[0]) != 1 {
				t.Fatalf("iteration %d pick %d: got %s", iter, i, describe(c))
			}
			if want := v.Files[level][i%n]; c.Inputs[0][0] != want {
				t.Fatalf("iteration %d pick %d: picked %s, want file %06d", iter, i, c, want.FileNum)
			}
		}
	}
}
