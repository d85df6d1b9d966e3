package manifest

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// model is the test's picture of a version set: where each file lives and
// the two monotonic numbers.
type model struct {
	files   map[base.FileNum]placedFile
	logNum  base.FileNum
	lastSeq base.SeqNum
}

func newModel() *model { return &model{files: map[base.FileNum]placedFile{}} }

func (m *model) clone() *model {
	return &model{files: maps.Clone(m.files), logNum: m.logNum, lastSeq: m.lastSeq}
}

// apply applies a valid edit the simple way.
func (m *model) apply(e *VersionEdit) {
	for _, d := range e.DeletedFiles {
		delete(m.files, d.FileNum)
	}
	for _, n := range e.NewFiles {
		m.files[n.Meta.FileNum] = placedFile{n.Level, n.Meta}
	}
	m.logNum = max(m.logNum, e.LogNum)
	m.lastSeq = max(m.lastSeq, e.LastSeq)
}

func (m *model) level(l int) []*FileMetadata {
	var out []*FileMetadata
	for _, p := range m.files {
		if p.level == l {
			out = append(out, p.meta)
		}
	}
	return out
}

// describe renders a state so that equal states compare equal: per level,
// the files sorted by number with their bounds.
func describe(levels [NumLevels][]*FileMetadata, logNum base.FileNum, lastSeq base.SeqNum) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log=%d seq=%d\n", logNum, lastSeq)
	for l, files := range levels {
		files = slices.Clone(files)
		sort.Slice(files, func(i, j int) bool { return files[i].FileNum < files[j].FileNum })
		for _, f := range files {
			fmt.Fprintf(&b, "L%d %s\n", l, f)
		}
	}
	return b.String()
}

func (m *model) String() string {
	var levels [NumLevels][]*FileMetadata
	for l := range levels {
		levels[l] = m.level(l)
	}
	return describe(levels, m.logNum, m.lastSeq)
}

func vsState(t testing.TB, vs *VersionSet) string {
	t.Helper()
	v := vs.Current()
	defer v.Unref()
	if err := v.CheckOrdering(); err != nil {
		t.Fatalf("current version out of order: %v\n%s", err, v)
	}
	return describe(v.Files, vs.LogNum(), vs.LastSeq())
}

// editGen makes random edits that look like flushes, compactions and
// moves, keeping L1+ disjoint.
type editGen struct {
	rng *rand.Rand
	seq base.SeqNum
}

func (g *editGen) newFile(vs *VersionSet, lo, hi int, seqLo, seqHi base.SeqNum) *FileMetadata {
	return meta(vs.NewFileNum(), userKey(lo), userKey(hi), seqLo, seqHi)
}

func keyNum(k []byte) int {
	var n int
	fmt.Sscanf(string(k), "k%d", &n)
	return n
}

// valid returns an edit that LogAndApply must accept.
func (g *editGen) valid(vs *VersionSet, m *model) *VersionEdit {
	rng := g.rng
	for {
		switch r := rng.IntN(20); {
		case r < 7: // flush
			a, b := rng.IntN(1000), rng.IntN(1000)
			n := base.SeqNum(1 + rng.IntN(50))
			f := g.newFile(vs, min(a, b), max(a, b), g.seq+1, g.seq+n)
			g.seq += n
			e := &VersionEdit{LastSeq: g.seq, NewFiles: []NewFile{{Level: 0, Meta: f}}}
			if rng.IntN(2) == 0 {
				e.LogNum = vs.NewFileNum()
			}
			return e
		case r < 15: // compaction of level L into L+1
			l := rng.IntN(NumLevels - 1)
			inputs := m.level(l)
			if len(inputs) == 0 {
				continue
			}
			if l > 0 {
				inputs = inputs[rng.IntN(len(inputs)):][:1]
			}
			lo, hi := 1<<30, -1
			for _, f := range inputs {
				lo, hi = min(lo, keyNum(f.Smallest.UserKey)), max(hi, keyNum(f.Largest.UserKey))
			}
			for _, f := range m.level(l + 1) {
				if keyNum(f.Largest.UserKey) >= lo && keyNum(f.Smallest.UserKey) <= hi {
					inputs = append(inputs, f)
				}
			}
			e := &VersionEdit{}
			seqLo, seqHi := base.SeqNumMax, base.SeqNum(0)
			for _, f := range inputs {
				lo, hi = min(lo, keyNum(f.Smallest.UserKey)), max(hi, keyNum(f.Largest.UserKey))
				seqLo, seqHi = min(seqLo, f.SmallestSeq), max(seqHi, f.LargestSeq)
				e.DeletedFiles = append(e.DeletedFiles, DeletedFile{Level: m.files[f.FileNum].level, FileNum: f.FileNum})
			}
			// Cut [lo, hi] into up to three disjoint outputs.
			for start := lo; start <= hi; {
				end := min(hi, start+rng.IntN(hi-lo+1))
				if len(e.NewFiles) == 2 {
					end = hi
				}
				e.NewFiles = append(e.NewFiles, NewFile{Level: l + 1, Meta: g.newFile(vs, start, end, seqLo, seqHi)})
				start = end + 1
			}
			return e
		case r < 18: // move a file down when nothing below overlaps it
			l := 1 + rng.IntN(NumLevels-2)
			files := m.level(l)
			if len(files) == 0 {
				continue
			}
			f := files[rng.IntN(len(files))]
			if overlapsAny(f, m.level(l+1)) {
				continue
			}
			moved := f
			if rng.IntN(2) == 0 {
				// A fresh pointer must be folded into the old one. Copy
				// field by field: readers update f's reference count
				// concurrently.
				moved = &FileMetadata{
					FileNum: f.FileNum, Size: f.Size,
					Smallest: f.Smallest, Largest: f.Largest,
					SmallestSeq: f.SmallestSeq, LargestSeq: f.LargestSeq,
				}
			}
			return &VersionEdit{
				DeletedFiles: []DeletedFile{{Level: l, FileNum: f.FileNum}},
				NewFiles:     []NewFile{{Level: l + 1, Meta: moved}},
			}
		default: // numbers only, sometimes stale ones that must be ignored
			return &VersionEdit{LogNum: base.FileNum(rng.IntN(int(m.logNum) + 2)), LastSeq: base.SeqNum(rng.IntN(int(g.seq) + 2))}
		}
	}
}

func overlapsAny(f *FileMetadata, files []*FileMetadata) bool {
	for _, g := range files {
		if keyNum(g.Largest.UserKey) >= keyNum(f.Smallest.UserKey) && keyNum(g.Smallest.UserKey) <= keyNum(f.Largest.UserKey) {
			return true
		}
	}
	return false
}

// invalid returns an edit LogAndApply must reject, or nil when the state
// offers no way to build one.
func (g *editGen) invalid(vs *VersionSet, m *model) *VersionEdit {
	rng := g.rng
	switch rng.IntN(4) {
	case 0:
		return &VersionEdit{DeletedFiles: []DeletedFile{{Level: 3, FileNum: vs.NewFileNum()}}}
	case 1:
		for _, p := range m.files {
			return &VersionEdit{NewFiles: []NewFile{{Level: 6, Meta: p.meta}}}
		}
	case 2:
		for n, p := range m.files {
			return &VersionEdit{DeletedFiles: []DeletedFile{{Level: (p.level + 1) % NumLevels, FileNum: n}}}
		}
	default:
		for _, p := range m.files {
			if p.level > 0 {
				f := g.newFile(vs, keyNum(p.meta.Smallest.UserKey), keyNum(p.meta.Largest.UserKey), 1, 1)
				return &VersionEdit{NewFiles: []NewFile{{Level: p.level, Meta: f}}}
			}
		}
	}
	return nil
}

// obsoleteLog records OnObsoleteFile calls.
type obsoleteLog struct {
	t    testing.TB
	mu   sync.Mutex
	seen map[base.FileNum]int
}

func newObsoleteLog(t testing.TB) *obsoleteLog {
	return &obsoleteLog{t: t, seen: map[base.FileNum]int{}}
}

func (o *obsoleteLog) add(n base.FileNum) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[n]++
	if o.seen[n] > 1 {
		o.t.Errorf("file %d reported obsolete %d times", n, o.seen[n])
	}
}

func (o *obsoleteLog) has(n base.FileNum) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[n] > 0
}

func listDir(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// checkDir verifies that the directory holds CURRENT, exactly the manifest
// it names, and no temp file.
func checkDir(t testing.TB, fs vfs.FS, dir string, vs *VersionSet) {
	t.Helper()
	want := []string{"CURRENT", base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())}
	if got := listDir(t, fs, dir); !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
	f, err := fs.Open(fs.PathJoin(dir, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	if string(data) != want[1]+"\n" {
		t.Fatalf("CURRENT holds %q", data)
	}
}

func TestRandomEditsAgainstModel(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			var fs vfs.FS
			var mem *vfs.MemFS
			dir := "/db"
			if fsName == "os" {
				fs, dir = vfs.Default, t.TempDir()
			} else {
				mem = newMemDir(t, dir)
				fs = mem
			}
			randomEdits(t, seed, fs, mem, dir)
		})
	}
}

func randomEdits(t *testing.T, seed uint64, fs vfs.FS, mem *vfs.MemFS, dir string) {
	rng := rand.New(rand.NewPCG(seed, 1))
	obs := newObsoleteLog(t)
	opts := Options{FS: fs, Dir: dir, MaxManifestSize: 2 << 10, OnObsoleteFile: obs.add}
	vs, err := Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	g := &editGen{rng: rng}
	added := map[base.FileNum]bool{}
	var held []*Version
	manifests := map[base.FileNum]bool{}
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for step := range steps {
		var bad *VersionEdit
		if rng.IntN(10) == 0 {
			bad = g.invalid(vs, m)
		}
		if bad != nil {
			if err := vs.LogAndApply(bad); err == nil {
				t.Fatalf("seed %d step %d: invalid edit accepted: %+v", seed, step, bad)
			}
		} else {
			e := g.valid(vs, m)
			if err := vs.LogAndApply(e); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			m.apply(e)
			for _, n := range e.NewFiles {
				added[n.Meta.FileNum] = true
			}
		}
		if got, want := vsState(t, vs), m.String(); got != want {
			t.Fatalf("seed %d step %d: state\n%s\nwant\n%s", seed, step, got, want)
		}
		manifests[vs.ManifestFileNum()] = true

		// Readers come and go; an obsolete file must be in none of them.
		if rng.IntN(3) == 0 {
			held = append(held, vs.Current())
		}
		for len(held) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(held))
			held[i].Unref()
			held = slices.Delete(held, i, i+1)
		}
		live := vs.LiveFiles()
		for n := range added {
			_, inModel := m.files[n]
			if obs.has(n) && (live[n] || inModel) {
				t.Fatalf("seed %d step %d: file %d reported obsolete while live", seed, step, n)
			}
			if inModel && !live[n] {
				t.Fatalf("seed %d step %d: current file %d missing from LiveFiles", seed, step, n)
			}
		}
		for _, v := range held {
			for _, files := range v.Files {
				for _, f := range files {
					if !live[f.FileNum] {
						t.Fatalf("seed %d step %d: held file %d missing from LiveFiles", seed, step, f.FileNum)
					}
				}
			}
		}

		// A crash right after an acknowledged edit must keep it.
		if mem != nil && rng.IntN(10) == 0 {
			crashed, err := Load(Options{FS: mem.CrashClone(), Dir: dir})
			if err != nil {
				t.Fatalf("seed %d step %d: load after crash: %v", seed, step, err)
			}
			if got, want := vsState(t, crashed), m.String(); got != want {
				t.Fatalf("seed %d step %d: after crash\n%s\nwant\n%s", seed, step, got, want)
			}
			crashed.Close()
		}

		if rng.IntN(40) == 0 || step == steps-1 {
			for _, v := range held {
				v.Unref()
			}
			held = nil
			checkDir(t, fs, dir, vs)
			if err := vs.Close(); err != nil {
				t.Fatal(err)
			}
			if vs, err = Load(opts); err != nil {
				t.Fatalf("seed %d step %d: Load: %v", seed, step, err)
			}
			if got, want := vsState(t, vs), m.String(); got != want {
				t.Fatalf("seed %d step %d: after reopen\n%s\nwant\n%s", seed, step, got, want)
			}
			if n := vs.NewFileNum(); n <= maxFileNum(m) || n <= m.logNum {
				t.Fatalf("seed %d step %d: NewFileNum after reopen = %d, files go up to %d", seed, step, n, maxFileNum(m))
			}
		}
	}
	if len(manifests) < 3 {
		t.Fatalf("seed %d: only %d manifests used; rotation not exercised", seed, len(manifests))
	}
	// Every file ever added is now either current or was reported.
	for n := range added {
		if _, cur := m.files[n]; cur == obs.has(n) {
			t.Fatalf("seed %d: file %d current=%v reported=%v", seed, n, cur, obs.has(n))
		}
	}
	vs.Close()
}

// newMemDir returns a MemFS holding dir durably, as the DB arranges before
// it creates a version set there.
func newMemDir(t testing.TB, dir string) *vfs.MemFS {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := mem.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	return mem
}

func maxFileNum(m *model) base.FileNum {
	var n base.FileNum
	for k := range m.files {
		n = max(n, k)
	}
	return n
}

func TestObsoleteFilesWaitForReaders(t *testing.T) {
	obs := newObsoleteLog(t)
	vs, err := Create(Options{Dir: t.TempDir(), OnObsoleteFile: obs.add})
	if err != nil {
		t.Fatal(err)
	}
	a, b := meta(vs.NewFileNum(), "a", "c", 1, 5), meta(vs.NewFileNum(), "b", "d", 6, 9)
	if err := vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, a}, {0, b}}}); err != nil {
		t.Fatal(err)
	}
	reader := vs.Current()
	if got := reader.Files[0]; len(got) != 2 || got[0] != b || got[1] != a {
		t.Fatalf("L0 not newest first: %v", got)
	}
	// Compact a into L1 and move b down by a fresh pointer.
	out := meta(vs.NewFileNum(), "a", "c", 1, 5)
	bCopy := *b
	bCopy.refs = 0
	err = vs.LogAndApply(&VersionEdit{
		DeletedFiles: []DeletedFile{{0, a.FileNum}, {0, b.FileNum}},
		NewFiles:     []NewFile{{1, out}, {2, &bCopy}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if obs.has(a.FileNum) {
		t.Fatal("file reported obsolete while a reader holds it")
	}
	if !vs.LiveFiles()[a.FileNum] {
		t.Fatal("LiveFiles lacks a file a reader holds")
	}
	cur := vs.Current()
	if cur.Files[2][0] != b {
		t.Fatal("a moved file must keep its installed FileMetadata")
	}
	cur.Unref()
	reader.Unref()
	if !obs.has(a.FileNum) || obs.has(b.FileNum) || obs.has(out.FileNum) {
		t.Fatalf("after release: reported %v", obs.seen)
	}
	if vs.LiveFiles()[a.FileNum] {
		t.Fatal("LiveFiles still has a released file")
	}

	// After Close, releases are not reported.
	reader = vs.Current()
	if err := vs.LogAndApply(&VersionEdit{DeletedFiles: []DeletedFile{{1, out.FileNum}}}); err != nil {
		t.Fatal(err)
	}
	vs.Close()
	reader.Unref()
	if obs.has(out.FileNum) {
		t.Fatal("obsolete file reported after Close")
	}
	if err := vs.LogAndApply(&VersionEdit{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("LogAndApply after Close: %v", err)
	}
}

func TestFileNumbers(t *testing.T) {
	dir := t.TempDir()
	vs, err := Create(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if vs.ManifestFileNum() != 1 {
		t.Fatalf("first manifest is %d", vs.ManifestFileNum())
	}
	if n := vs.NewFileNum(); n != 2 {
		t.Fatalf("first NewFileNum = %d", n)
	}
	vs.MarkFileNumUsed(50)
	vs.MarkFileNumUsed(10)
	if n := vs.NewFileNum(); n != 51 {
		t.Fatalf("NewFileNum after MarkFileNumUsed(50) = %d", n)
	}
	// A file number the caller chose above the counter is reserved too.
	e := &VersionEdit{LogNum: 70, NewFiles: []NewFile{{1, meta(90, "a", "b", 1, 1)}}}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if e.NextFileNum != 91 {
		t.Fatalf("edit NextFileNum = %d", e.NextFileNum)
	}
	if err := vs.LogAndApply(&VersionEdit{LogNum: 60, LastSeq: 5}); err != nil {
		t.Fatal(err)
	}
	if vs.LogNum() != 70 || vs.LastSeq() != 5 {
		t.Fatalf("LogNum %d LastSeq %d", vs.LogNum(), vs.LastSeq())
	}
	vs.Close()
	vs, err = Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	if n := vs.NewFileNum(); n != 91 {
		t.Fatalf("NewFileNum after Load = %d", n)
	}
	if vs.LogNum() != 70 || vs.LastSeq() != 5 {
		t.Fatalf("after Load: LogNum %d LastSeq %d", vs.LogNum(), vs.LastSeq())
	}
}

func TestConcurrentReaders(t *testing.T) {
	vs, err := Create(Options{FS: vfs.NewMem(), Dir: "/", MaxManifestSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var numMu sync.Mutex
	nums := map[base.FileNum]bool{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := vs.Current()
				if err := v.CheckOrdering(); err != nil {
					t.Error(err)
				}
				for l := range NumLevels {
					v.Overlaps(l, []byte("k0100"), []byte("k0500"))
					v.LevelSize(l)
				}
				vs.LiveFiles()
				n := vs.NewFileNum()
				numMu.Lock()
				if nums[n] {
					t.Errorf("file number %d handed out twice", n)
				}
				nums[n] = true
				numMu.Unlock()
				v.Unref()
			}
		}()
	}
	g := &editGen{rng: rand.New(rand.NewPCG(11, 12))}
	m := newModel()
	for range 200 {
		e := g.valid(vs, m)
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
		m.apply(e)
	}
	close(stop)
	wg.Wait()
	if got, want := vsState(t, vs), m.String(); got != want {
		t.Fatalf("state\n%s\nwant\n%s", got, want)
	}
}

// TestCrashDuringLogAndApply stops the filesystem at a random operation
// (every later operation fails, as if the machine died there), then
// recovers from what a power loss would leave. Load must return the last
// acknowledged state or, when the interrupted edit reached the disk, the
// state after it.
func TestCrashDuringLogAndApply(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	trials := 300
	if testing.Short() {
		trials = 60
	}
	var outcomes [3]int // no failure, recovered acknowledged, recovered pending
	for trial := range trials {
		mem := newMemDir(t, "/db")
		toggle := errorfs.NewToggle(errorfs.EIO(), nil, "")
		toggle.SetTornWrites(true, seed+uint64(trial))
		opts := Options{FS: errorfs.Wrap(mem, toggle), Dir: "/db", MaxManifestSize: 1 << 10}
		vs, err := Create(opts)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel()
		g := &editGen{rng: rng}
		// Some trials reopen first, so the crash can hit the first
		// rotation after Load.
		if rng.IntN(3) == 0 {
			for range rng.IntN(20) {
				e := g.valid(vs, m)
				if err := vs.LogAndApply(e); err != nil {
					t.Fatal(err)
				}
				m.apply(e)
			}
			vs.Close()
			if vs, err = Load(opts); err != nil {
				t.Fatal(err)
			}
		}
		toggle.AfterN(int64(rng.IntN(120)))
		acked, pending := m.String(), ""
		for range 60 {
			e := g.valid(vs, m)
			next := m.clone()
			next.apply(e)
			if err := vs.LogAndApply(e); err != nil {
				if got := vsState(t, vs); got != acked {
					t.Fatalf("seed %d trial %d: failed edit was installed", seed, trial)
				}
				if err2 := vs.LogAndApply(g.valid(vs, m)); err2 == nil {
					t.Fatalf("seed %d trial %d: write error is not sticky", seed, trial)
				}
				pending = next.String()
				break
			}
			m = next
			acked = m.String()
		}
		recovered, err := Load(Options{FS: mem.CrashClone(), Dir: "/db"})
		if err != nil {
			t.Fatalf("seed %d trial %d: Load after crash: %v\n%s", seed, trial, err, mem)
		}
		switch got := vsState(t, recovered); {
		case pending == "":
			outcomes[0]++
		case got == acked:
			outcomes[1]++
		case got == pending:
			outcomes[2]++
		default:
			t.Fatalf("seed %d trial %d: recovered\n%s\nwant\n%s\nor\n%s", seed, trial, got, acked, pending)
		}
		recovered.Close()
		vs.Close()
	}
	t.Logf("trials without a failure %d, recovering the acknowledged state %d, recovering the failed edit %d",
		outcomes[0], outcomes[1], outcomes[2])
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, fs vfs.FS, name string, data []byte) {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		f.Close()
	}
	// setup makes a DB whose manifest holds a snapshot and three edits.
	setup := func(t *testing.T) (*vfs.MemFS, string) {
		fs := newMemDir(t, "/db")
		vs, err := Create(Options{FS: fs, Dir: "/db"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := vs.LogAndApply(&VersionEdit{LastSeq: base.SeqNum(10 * (i + 1))}); err != nil {
				t.Fatal(err)
			}
		}
		vs.Close()
		return fs, "/db/" + base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())
	}
	readFile := func(fs vfs.FS, name string) []byte {
		f, _ := fs.Open(name)
		defer f.Close()
		b, _ := io.ReadAll(f)
		return b
	}
	isCorrupt := func(t *testing.T, err error, file string) {
		t.Helper()
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != file || errors.Is(err, os.ErrNotExist) {
			t.Fatalf("want corruption in %s, got %v", file, err)
		}
	}

	t.Run("missing CURRENT", func(t *testing.T) {
		_, err := Load(Options{FS: vfs.NewMem(), Dir: "/"})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("CURRENT names no manifest", func(t *testing.T) {
		fs, _ := setup(t)
		write(t, fs, "/db/CURRENT", []byte("000005.sst\n"))
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, "/db/CURRENT")
	})
	t.Run("CURRENT without newline", func(t *testing.T) {
		fs, _ := setup(t)
		write(t, fs, "/db/CURRENT", []byte("MANIFEST-000001"))
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, "/db/CURRENT")
	})
	t.Run("missing manifest", func(t *testing.T) {
		fs, name := setup(t)
		fs.Remove(name)
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, name)
	})
	t.Run("empty manifest", func(t *testing.T) {
		fs, name := setup(t)
		write(t, fs, name, nil)
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, name)
	})
	t.Run("damaged early record", func(t *testing.T) {
		fs, name := setup(t)
		data := readFile(fs, name)
		data[record.HeaderSize+1] ^= 0x10 // inside the snapshot record
		write(t, fs, name, data)
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, name)
	})
	t.Run("torn last record", func(t *testing.T) {
		fs, name := setup(t)
		data := readFile(fs, name)
		write(t, fs, name, data[:len(data)-2])
		vs, err := Load(Options{FS: fs, Dir: "/db"})
		if err != nil {
			t.Fatal(err)
		}
		if vs.LastSeq() != 20 {
			t.Fatalf("LastSeq after torn tail = %d, want 20", vs.LastSeq())
		}
		// The next edit goes to a new manifest, so the torn tail never
		// ends up before intact records.
		if err := vs.LogAndApply(&VersionEdit{LastSeq: 99}); err != nil {
			t.Fatal(err)
		}
		checkDir(t, fs, "/db", vs)
		vs.Close()
		if vs, err = Load(Options{FS: fs, Dir: "/db"}); err != nil {
			t.Fatal(err)
		}
		if vs.LastSeq() != 99 {
			t.Fatalf("LastSeq after reload = %d, want 99", vs.LastSeq())
		}
	})
	t.Run("undecodable edit", func(t *testing.T) {
		fs, name := setup(t)
		f, _ := fs.Create(name)
		w := record.NewWriter(f)
		w.WriteRecord((&VersionEdit{NextFileNum: 5}).Encode())
		w.WriteRecord([]byte{editVersion, 77})
		w.Flush()
		f.Close()
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, name)
		if ce := err.(*base.CorruptionError); ce.Offset != 10 {
			t.Fatalf("offset %d, want 10 (the second record)", ce.Offset)
		}
	})
	t.Run("edit deletes a missing file", func(t *testing.T) {
		fs, name := setup(t)
		f, _ := fs.Create(name)
		w := record.NewWriter(f)
		w.WriteRecord((&VersionEdit{NextFileNum: 5}).Encode())
		w.WriteRecord((&VersionEdit{DeletedFiles: []DeletedFile{{1, 3}}}).Encode())
		w.Flush()
		f.Close()
		_, err := Load(Options{FS: fs, Dir: "/db"})
		isCorrupt(t, err, name)
	})
	t.Run("Create refuses an existing DB", func(t *testing.T) {
		fs, _ := setup(t)
		if _, err := Create(Options{FS: fs, Dir: "/db"}); !errors.Is(err, os.ErrExist) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestWriteFailureIsSticky(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, "MANIFEST")
	vs, err := Create(Options{FS: errorfs.Wrap(mem, toggle), Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	f := meta(vs.NewFileNum(), "a", "b", 1, 1)
	if err := vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, f}}}); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	g := meta(vs.NewFileNum(), "c", "d", 2, 2)
	err = vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, g}}})
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("got %v", err)
	}
	if v := vs.Current(); len(v.Files[0]) != 1 {
		t.Fatal("edit installed although its sync failed")
	} else {
		v.Unref()
	}
	toggle.Disable()
	if err2 := vs.LogAndApply(&VersionEdit{LastSeq: 9}); !errors.Is(err2, errorfs.ErrInjected) {
		t.Fatalf("later LogAndApply: %v", err2)
	}
	// A rejected edit, by contrast, leaves the set usable.
	vs2, err := Create(Options{FS: vfs.NewMem(), Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := vs2.LogAndApply(&VersionEdit{DeletedFiles: []DeletedFile{{0, 99}}}); err == nil {
		t.Fatal("edit deleting a missing file accepted")
	}
	if err := vs2.LogAndApply(&VersionEdit{LastSeq: 9}); err != nil {
		t.Fatal(err)
	}
}

// TestNotLoggedFailureHeals: an edit whose write failed (a full disk,
// leaving a torn record) is certainly not logged: the error says so, the
// set stays usable, and the next edit starts a new manifest, so a Load
// never sees a record after the torn one.
func TestNotLoggedFailureHeals(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.ENOSPC(), []errorfs.Op{errorfs.OpWrite}, "MANIFEST")
	toggle.SetTornWrites(true, 1)
	vs, err := Create(Options{FS: errorfs.Wrap(mem, toggle), Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	before := vs.ManifestFileNum()
	toggle.Enable()
	lost := meta(vs.NewFileNum(), "a", "b", 1, 1)
	err = vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, lost}}})
	if !errors.Is(err, ErrNotLogged) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("failed write: %v; want ErrNotLogged", err)
	}
	toggle.Disable()
	kept := meta(vs.NewFileNum(), "c", "d", 2, 2)
	if err := vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, kept}}}); err != nil {
		t.Fatalf("edit after a not-logged failure: %v", err)
	}
	if vs.ManifestFileNum() == before {
		t.Fatal("kept appending to the manifest with a torn tail")
	}
	for _, fs := range []vfs.FS{mem, mem.CrashClone()} {
		got, err := Load(Options{FS: fs, Dir: "/"})
		if err != nil {
			t.Fatal(err)
		}
		v := got.Current()
		if len(v.Files[0]) != 1 || v.Files[0][0].FileNum != kept.FileNum {
			t.Fatalf("Load: L0 %v, want only file %d", v.Files[0], kept.FileNum)
		}
		v.Unref()
		got.Close()
	}
}

// TestResetWriteError: after a failed sync the set refuses edits until
// ResetWriteError, which makes the next edit rewrite the state into a new
// manifest.
func TestResetWriteError(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, "MANIFEST")
	vs, err := Create(Options{FS: errorfs.Wrap(mem, toggle), Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	toggle.Enable()
	if err := vs.LogAndApply(&VersionEdit{LastSeq: 5}); err == nil || errors.Is(err, ErrNotLogged) {
		t.Fatalf("failed sync: %v; want a sticky error", err)
	}
	toggle.Disable()
	if err := vs.LogAndApply(&VersionEdit{LastSeq: 6}); err == nil {
		t.Fatal("edit accepted after a failed sync")
	}
	before := vs.ManifestFileNum()
	vs.ResetWriteError()
	f := meta(vs.NewFileNum(), "a", "b", 1, 1)
	if err := vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{0, f}}, LastSeq: 7}); err != nil {
		t.Fatalf("edit after ResetWriteError: %v", err)
	}
	if vs.ManifestFileNum() == before {
		t.Fatal("ResetWriteError did not start a new manifest")
	}
	got, err := Load(Options{FS: mem.CrashClone(), Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.LastSeq() != 7 {
		t.Fatalf("LastSeq after Load: %d, want 7", got.LastSeq())
	}
}
