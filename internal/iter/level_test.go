package iter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// testFile is a table of a test level: its entries and its bounds, which
// may be looser than the entries (as a table's bounds may be after its
// keys were garbage collected), possibly with no entries at all.
type testFile struct {
	num               int
	entries           []Entry
	smallest, largest []byte
}

func testFileBounds(f *testFile) (smallest, largest []byte) { return f.smallest, f.largest }

// randLevel cuts the key space into disjoint ranges with gaps between
// some, and fills each range with random entries. It returns the files
// and, for the model, the concatenated entries and the file of each.
func randLevel(r *rand.Rand, keySpace int, source string) (files []*testFile, all []Entry, fileOf []int) {
	es := randEntries(r, r.IntN(4*keySpace), keySpace, 4, source)
	for lo := r.IntN(3); lo < keySpace; {
		hi := lo + r.IntN(keySpace/4+1)
		f := &testFile{num: len(files), smallest: userKey(lo), largest: userKey(hi)}
		for _, e := range es {
			if bytes.Compare(e.Key.UserKey, f.smallest) >= 0 && bytes.Compare(e.Key.UserKey, f.largest) <= 0 {
				f.entries = append(f.entries, e)
				all = append(all, e)
				fileOf = append(fileOf, f.num)
			}
		}
		// Tighten the bounds of non-empty files half of the time.
		if len(f.entries) > 0 && r.IntN(2) == 0 {
			f.smallest, f.largest = f.entries[0].Key.UserKey, f.entries[len(f.entries)-1].Key.UserKey
		}
		files = append(files, f)
		lo = hi + 1 + r.IntN(2)
	}
	return files, all, fileOf
}

// opener opens test files as slice iterators, counting opens and closes so
// tests can prove laziness and that no iterator leaks.
type opener struct {
	opens, closes []int
	wrap          func(f *testFile, it *failIter) (base.InternalIterator, error)
}

func newOpener(n int) *opener { return &opener{opens: make([]int, n), closes: make([]int, n)} }

func (o *opener) open(f *testFile) (base.InternalIterator, error) {
	o.opens[f.num]++
	it := &failIter{InternalIterator: NewSliceIter(f.entries), budget: 1 << 30, closed: &o.closes[f.num]}
	if o.wrap != nil {
		return o.wrap(f, it)
	}
	return it, nil
}

// openNow returns the files whose iterators are open.
func (o *opener) openNow() []int {
	var open []int
	for i := range o.opens {
		if o.opens[i] != o.closes[i] {
			open = append(open, i)
		}
	}
	return open
}

// allowedOpens returns the range of files an op may open: those between
// where the level starts looking (from the bounds, or the file it was on)
// and where it ends up.
func allowedOpens(files []*testFile, o op, before int, m *model, fileOf []int) (lo, hi int) {
	n := len(files)
	forward := o.name == "Next" || o.name == "SeekGE" || o.name == "First"
	var start int
	switch o.name {
	case "Next", "Prev":
		if before < 0 {
			return 1, 0
		}
		start = fileOf[before]
	case "First":
		start = 0
	case "Last":
		start = n - 1
	case "SeekGE":
		for start = 0; start < n && bytes.Compare(files[start].largest, o.key) < 0; start++ {
		}
	case "SeekLT":
		for start = n - 1; start >= 0 && bytes.Compare(files[start].smallest, o.key) >= 0; start-- {
		}
	}
	end := n - 1
	if !forward {
		end = 0
	}
	if m.pos >= 0 {
		end = fileOf[m.pos]
	}
	if !forward {
		start, end = end, start
	}
	return start, end
}

func TestLevelIterModel(t *testing.T) {
	r := newRand(t)
	for range 200 {
		keySpace := 1 + r.IntN(60)
		files, want, fileOf := randLevel(r, keySpace, "L")
		op := newOpener(len(files))
		it := NewLevelIter(files, testFileBounds, op.open)
		checkScans(t, it, want)
		for i, n := range op.opens {
			// One pass each way, and the file where the forward scan
			// ended is reused by Last.
			if n < 1 || n > 2 {
				t.Fatalf("file %d opened %d times by two scans", i, n)
			}
		}
		walkLevel(t, r, it, files, want, fileOf, op, keySpace, 300)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if open := op.openNow(); len(open) != 0 {
			t.Fatalf("files %v left open after Close", open)
		}
	}
}

// walkLevel runs a random walk comparing with the model and checking after
// every op that only the files the op had to visit were opened, that at
// most one is open, and that the open one holds the current entry.
func walkLevel(t *testing.T, r *rand.Rand, it base.InternalIterator, files []*testFile, want []Entry, fileOf []int, op *opener, keySpace, n int) {
	t.Helper()
	m := &model{es: want, pos: -1}
	for step := range n {
		o := randOp(r, keySpace)
		before := m.pos
		opensBefore := append([]int(nil), op.opens...)
		got, exp := o.apply(it, m)
		checkPos(t, step, o, it, m, got, exp)
		lo, hi := allowedOpens(files, o, before, m, fileOf)
		for i := range files {
			if op.opens[i] != opensBefore[i] && (i < lo || i > hi) {
				t.Fatalf("step %d %v: opened file %d, allowed [%d,%d]", step, o, i, lo, hi)
			}
		}
		open := op.openNow()
		if len(open) > 1 || exp && (len(open) != 1 || open[0] != fileOf[m.pos]) {
			t.Fatalf("step %d %v: open files %v", step, o, open)
		}
	}
}

func TestLevelIterSeekOutsideOpensNothing(t *testing.T) {
	files := []*testFile{
		{num: 0, smallest: []byte("b"), largest: []byte("d"), entries: []Entry{{Key: base.MakeInternalKey([]byte("c"), 1, base.KindSet)}}},
		{num: 1, smallest: []byte("f"), largest: []byte("h"), entries: []Entry{{Key: base.MakeInternalKey([]byte("g"), 1, base.KindSet)}}},
	}
	op := newOpener(len(files))
	it := NewLevelIter(files, testFileBounds, op.open)
	if it.SeekGE([]byte("i")) || it.SeekLT([]byte("b")) || it.SeekLT([]byte("a")) {
		t.Fatal("seek outside the level found an entry")
	}
	if fmt.Sprint(op.opens) != "[0 0]" {
		t.Fatalf("opens %v", op.opens)
	}
	if !it.SeekGE([]byte("e")) || string(it.Key().UserKey) != "g" || fmt.Sprint(op.opens) != "[0 1]" {
		t.Fatalf("SeekGE(e): valid %v opens %v", it.Valid(), op.opens)
	}
	if !it.SeekLT([]byte("h")) || string(it.Key().UserKey) != "g" || fmt.Sprint(op.opens) != "[0 1]" {
		t.Fatalf("SeekLT(h) reopened: opens %v", op.opens)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLevelIterErrors injects, into one random file, an open error, an
// iterator error after a random number of moves, or a Close error, and
// checks that the level matches the model until the failure, fails only
// on an op that had to visit that file, stays failed, and closes
// everything.
func TestLevelIterErrors(t *testing.T) {
	errOpen := errors.New("open failed")
	errClose := errors.New("close failed")
	r := newRand(t)
	for round := range 300 {
		keySpace := 1 + r.IntN(40)
		files, want, fileOf := randLevel(r, keySpace, "L")
		if len(files) == 0 {
			continue
		}
		bad := r.IntN(len(files))
		op := newOpener(len(files))
		var wantErr error
		// A full scan makes 1+len(entries) calls on the bad file, so it is
		// sure to hit an iterator failure.
		budget := r.IntN(len(files[bad].entries) + 1)
		switch round % 3 {
		case 0:
			wantErr = errOpen
			op.wrap = func(f *testFile, it *failIter) (base.InternalIterator, error) {
				if f.num == bad {
					*it.closed++ // never handed out, so never closed
					return nil, errOpen
				}
				return it, nil
			}
		case 1:
			wantErr = errInjected
			op.wrap = func(f *testFile, it *failIter) (base.InternalIterator, error) {
				if f.num == bad {
					it.budget = budget
				}
				return it, nil
			}
		case 2:
			wantErr = errClose
			op.wrap = func(f *testFile, it *failIter) (base.InternalIterator, error) {
				if f.num == bad {
					it.closeErr = errClose
				}
				return it, nil
			}
		}
		it := NewLevelIter(files, testFileBounds, op.open)
		m := &model{es: want, pos: -1}
		failed := false
		for step := 0; step < 200 && !failed; step++ {
			o := randOp(r, keySpace)
			before := m.pos
			onBad := op.opens[bad] != op.closes[bad]
			got, exp := o.apply(it, m)
			if err := it.Error(); err != nil {
				lo, hi := allowedOpens(files, o, before, m, fileOf)
				if !errors.Is(err, wantErr) || got || it.Valid() || !onBad && (bad < lo || bad > hi) {
					t.Fatalf("round %d step %d %v: valid %v, err %v, bad file %d outside [%d,%d]", round, step, o, got, err, bad, lo, hi)
				}
				failed = true
				break
			}
			checkPos(t, step, o, it, m, got, exp)
		}
		if !failed {
			// A scan over the whole level must reach the bad file (or leave
			// it, for a Close error).
			for ok := it.First(); ok; ok = it.Next() {
			}
			failed = it.Error() != nil
		}
		err := it.Close()
		if failed {
			checkSticky(t, r, it, wantErr, keySpace)
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("round %d: Close() = %v, want %v (failed %v)", round, err, wantErr, failed)
		}
		if round%3 != 2 && !failed {
			t.Fatalf("round %d: failure in file %d never surfaced", round, bad)
		}
		if open := op.openNow(); len(open) != 0 {
			t.Fatalf("round %d: files %v left open after Close", round, open)
		}
	}
}

// TestLevelUnderMerge stacks level iterators and slice iterators under a
// merging iterator, the shape of a real read path, and walks it.
func TestLevelUnderMerge(t *testing.T) {
	r := newRand(t)
	for range 50 {
		keySpace := 1 + r.IntN(50)
		var children []base.InternalIterator
		var sources [][]Entry
		for c := range 1 + r.IntN(5) {
			if r.IntN(2) == 0 {
				es := randEntries(r, r.IntN(30), keySpace, 6, fmt.Sprintf("m%d", c))
				children = append(children, NewSliceIter(es))
				sources = append(sources, es)
				continue
			}
			files, es, _ := randLevel(r, keySpace, fmt.Sprintf("L%d", c))
			children = append(children, NewLevelIter(files, testFileBounds, newOpener(len(files)).open))
			sources = append(sources, es)
		}
		want := mergeModel(sources)
		it := NewMergingIter(children...)
		checkScans(t, it, want)
		randomWalk(t, r, it, want, keySpace, 300)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
