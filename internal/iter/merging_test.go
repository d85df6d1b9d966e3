package iter

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// randChildren builds 0..maxChildren random sorted children. A small
// sequence space makes the same internal key appear in two children now and
// then, which exercises the child-index tie break.
func randChildren(r *rand.Rand, maxChildren, keySpace int) [][]Entry {
	children := make([][]Entry, r.IntN(maxChildren+1))
	for i := range children {
		children[i] = randEntries(r, r.IntN(30), keySpace, 1+r.IntN(10), fmt.Sprintf("c%d", i))
	}
	return children
}

func sliceIters(children [][]Entry) []base.InternalIterator {
	its := make([]base.InternalIterator, len(children))
	for i, c := range children {
		its[i] = NewSliceIter(c)
	}
	return its
}

func TestMergingIterModel(t *testing.T) {
	r := newRand(t)
	for range 300 {
		keySpace := 1 + r.IntN(40)
		children := randChildren(r, 8, keySpace)
		want := mergeModel(children)
		it := NewMergingIter(sliceIters(children)...)
		checkScans(t, it, want)
		randomWalk(t, r, it, want, keySpace, 300)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergingIterDirectionSwitch alternates Next and Prev at every
// position, the pattern where a wrong direction switch skips or repeats an
// entry.
func TestMergingIterDirectionSwitch(t *testing.T) {
	r := newRand(t)
	for range 100 {
		keySpace := 1 + r.IntN(10)
		children := randChildren(r, 6, keySpace)
		want := mergeModel(children)
		it := NewMergingIter(sliceIters(children)...)
		m := &model{es: want, pos: -1}
		step := 0
		check := func(o op, got, exp bool) {
			checkPos(t, step, o, it, m, got, exp)
			step++
		}
		got, exp := it.First(), m.set(0)
		check(op{name: "First"}, got, exp)
		for exp {
			got, exp = it.Next(), m.step(1)
			check(op{name: "Next"}, got, exp)
			if !exp {
				break
			}
			got, exp = it.Prev(), m.step(-1)
			check(op{name: "Prev"}, got, exp)
			got, exp = it.Next(), m.step(1)
			check(op{name: "Next"}, got, exp)
		}
	}
}

func TestMergingIterIdenticalKeys(t *testing.T) {
	k := base.MakeInternalKey([]byte("a"), 5, base.KindSet)
	older := base.MakeInternalKey([]byte("a"), 3, base.KindSet)
	children := [][]Entry{
		{{Key: older, Value: []byte("0-old")}},
		{{Key: k, Value: []byte("1")}},
		{{Key: k, Value: []byte("2")}, {Key: older, Value: []byte("2-old")}},
	}
	it := NewMergingIter(sliceIters(children)...)
	var fwd, rev []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Value()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		rev = append(rev, string(it.Value()))
	}
	if fmt.Sprint(fwd) != "[1 2 0-old 2-old]" || fmt.Sprint(rev) != "[2-old 0-old 2 1]" {
		t.Fatalf("forward %v, backward %v", fwd, rev)
	}
}

func TestMergingIterErrors(t *testing.T) {
	r := newRand(t)
	for range 200 {
		keySpace := 1 + r.IntN(20)
		children := randChildren(r, 5, keySpace)
		children = append(children, randEntries(r, 1+r.IntN(20), keySpace, 5, "bad"))
		its := sliceIters(children)
		closed := 0
		bad := &failIter{InternalIterator: its[len(its)-1], budget: r.IntN(30), closed: &closed}
		its[len(its)-1] = bad
		it := NewMergingIter(its...)
		want := mergeModel(children)
		m := &model{es: want, pos: -1}
		for i := 0; ; i++ {
			if i > 1000 {
				t.Fatal("injected failure never surfaced")
			}
			o := randOp(r, keySpace)
			got, exp := o.apply(it, m)
			if bad.failed {
				// The failing call may have been on any child move; from
				// then on the merge must be invalid and report it.
				if got || it.Valid() || !errors.Is(it.Error(), errInjected) {
					t.Fatalf("step %d %v: valid %v err %v after child failure", i, o, got, it.Error())
				}
				break
			}
			checkPos(t, i, o, it, m, got, exp)
		}
		checkSticky(t, r, it, errInjected, keySpace)
		if err := it.Close(); !errors.Is(err, errInjected) {
			t.Fatalf("Close() = %v, want injected error", err)
		}
		if closed != 1 {
			t.Fatalf("failing child closed %d times", closed)
		}
	}
}

func TestMergingIterCloseError(t *testing.T) {
	errClose := errors.New("close failed")
	closed := [3]int{}
	var its []base.InternalIterator
	for i := range closed {
		f := &failIter{InternalIterator: NewSliceIter(nil), budget: 1 << 30, closed: &closed[i]}
		if i > 0 {
			f.closeErr = fmt.Errorf("child %d: %w", i, errClose)
		}
		its = append(its, f)
	}
	err := NewMergingIter(its...).Close()
	if !errors.Is(err, errClose) || err.Error() != "child 1: close failed" {
		t.Fatalf("Close() = %v, want child 1's error", err)
	}
	if closed != [3]int{1, 1, 1} {
		t.Fatalf("children closed %v times", closed)
	}
}

// benchChildren builds n children that share one key space, each holding
// every n-th key, so the merge must switch children on every Next.
func benchChildren(n, perChild int) []base.InternalIterator {
	its := make([]base.InternalIterator, n)
	for c := range its {
		es := make([]Entry, perChild)
		for i := range es {
			es[i] = Entry{
				Key:   base.MakeInternalKey(fmt.Appendf(nil, "user-key-%012d", i*n+c), base.SeqNum(i), base.KindSet),
				Value: []byte("value"),
			}
		}
		its[c] = NewSliceIter(es)
	}
	return its
}

func TestMergingIterNextAllocs(t *testing.T) {
	it := NewMergingIter(benchChildren(8, 100)...)
	it.First()
	allocs := testing.AllocsPerRun(1000, func() {
		if !it.Next() {
			it.First()
			it.Next()
		}
		if !it.Prev() || !it.Next() {
			t.Fatal("lost position")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Next/Prev", allocs)
	}
}

func BenchmarkMergingIterNext(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			it := NewMergingIter(benchChildren(n, 80000/n)...)
			it.First()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !it.Next() {
					it.First()
				}
			}
		})
	}
}
