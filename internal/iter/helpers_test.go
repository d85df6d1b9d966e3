package iter

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

var seedFlag = flag.Uint64("seed", 1, "seed for the randomized iterator tests")

// newRand returns a generator for one test, logging the seed so a failure
// can be replayed with -seed.
func newRand(t testing.TB) *rand.Rand {
	t.Logf("seed %d (rerun with -seed=%d)", *seedFlag, *seedFlag)
	return rand.New(rand.NewPCG(*seedFlag, uint64(len(t.Name()))))
}

// userKey maps a small integer to a user key; a small key space makes user
// keys repeat across and within children.
func userKey(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }

// randSeekKey returns a seek target: usually an existing key, sometimes one
// that sorts between existing keys or outside every key.
func randSeekKey(r *rand.Rand, keySpace int) []byte {
	switch r.IntN(6) {
	case 0:
		return []byte("")
	case 1:
		return append(userKey(r.IntN(keySpace)), 'x')
	case 2:
		return []byte("z")
	}
	return userKey(r.IntN(keySpace + 1))
}

// randEntries returns n sorted entries with repeated user keys. Values name
// the source and position so the model check also proves which child an
// entry came from.
func randEntries(r *rand.Rand, n, keySpace, maxSeq int, source string) []Entry {
	n = min(n, keySpace*maxSeq)
	seen := map[string]bool{}
	var es []Entry
	for len(es) < n {
		k := base.MakeInternalKey(userKey(r.IntN(keySpace)), base.SeqNum(r.IntN(maxSeq)), base.Kind(r.IntN(int(base.KindMax)+1)))
		id := string(k.Append(nil))
		if seen[id] {
			continue
		}
		seen[id] = true
		es = append(es, Entry{Key: k})
	}
	slices.SortFunc(es, func(a, b Entry) int { return base.CompareInternal(a.Key, b.Key) })
	for i := range es {
		es[i].Value = fmt.Appendf(nil, "%s/%d", source, i)
	}
	return es
}

// mergeModel is the expected merged stream: the union of the children,
// stable-sorted so identical internal keys keep child order.
func mergeModel(children [][]Entry) []Entry {
	var all []Entry
	for _, c := range children {
		all = append(all, c...)
	}
	slices.SortStableFunc(all, func(a, b Entry) int { return base.CompareInternal(a.Key, b.Key) })
	return all
}

// model is the reference iterator: a position in a sorted slice, -1 when
// invalid.
type model struct {
	es  []Entry
	pos int
}

func (m *model) set(p int) bool {
	if p < 0 || p >= len(m.es) {
		m.pos = -1
		return false
	}
	m.pos = p
	return true
}

func (m *model) seekGE(k []byte) bool {
	i, _ := slices.BinarySearchFunc(m.es, k, func(e Entry, k []byte) int {
		if bytes.Compare(e.Key.UserKey, k) < 0 {
			return -1
		}
		return 1
	})
	return m.set(i)
}

func (m *model) seekLT(k []byte) bool {
	m.seekGE(k)
	if m.pos < 0 {
		return m.set(len(m.es) - 1)
	}
	return m.set(m.pos - 1)
}

func (m *model) step(d int) bool {
	if m.pos < 0 {
		return false
	}
	return m.set(m.pos + d)
}

// op is one random positioning call, applied to both the iterator under
// test and the model.
type op struct {
	name string
	key  []byte
}

func (o op) String() string {
	if o.key != nil {
		return fmt.Sprintf("%s(%q)", o.name, o.key)
	}
	return o.name
}

func randOp(r *rand.Rand, keySpace int) op {
	switch n := r.IntN(20); {
	case n < 7:
		return op{name: "Next"}
	case n < 14:
		return op{name: "Prev"}
	case n < 16:
		return op{name: "SeekGE", key: randSeekKey(r, keySpace)}
	case n < 18:
		return op{name: "SeekLT", key: randSeekKey(r, keySpace)}
	case n < 19:
		return op{name: "First"}
	}
	return op{name: "Last"}
}

func (o op) apply(it base.InternalIterator, m *model) (got, want bool) {
	switch o.name {
	case "Next":
		return it.Next(), m.step(1)
	case "Prev":
		return it.Prev(), m.step(-1)
	case "SeekGE":
		return it.SeekGE(o.key), m.seekGE(o.key)
	case "SeekLT":
		return it.SeekLT(o.key), m.seekLT(o.key)
	case "First":
		return it.First(), m.set(0)
	case "Last":
		return it.Last(), m.set(len(m.es) - 1)
	}
	panic("unknown op " + o.name)
}

// checkPos compares the iterator with the model after an op.
func checkPos(t testing.TB, step int, o op, it base.InternalIterator, m *model, got, want bool) {
	t.Helper()
	if got != want || it.Valid() != want {
		t.Fatalf("step %d %v: valid %v (Valid() %v), model %v (err %v)", step, o, got, it.Valid(), want, it.Error())
	}
	if !want {
		return
	}
	e := m.es[m.pos]
	if base.CompareInternal(it.Key(), e.Key) != 0 || it.Key().Trailer != e.Key.Trailer || !bytes.Equal(it.Value(), e.Value) {
		t.Fatalf("step %d %v: at %v=%q, model %v=%q", step, o, it.Key(), it.Value(), e.Key, e.Value)
	}
}

// checkScans compares full forward and backward scans with the model.
func checkScans(t testing.TB, it base.InternalIterator, want []Entry) {
	t.Helper()
	m := &model{es: want, pos: -1}
	got, exp := it.First(), m.set(0)
	for i := 0; ; i++ {
		checkPos(t, i, op{name: "First/Next"}, it, m, got, exp)
		if !exp {
			break
		}
		got, exp = it.Next(), m.step(1)
	}
	got, exp = it.Last(), m.set(len(want)-1)
	for i := 0; ; i++ {
		checkPos(t, i, op{name: "Last/Prev"}, it, m, got, exp)
		if !exp {
			break
		}
		got, exp = it.Prev(), m.step(-1)
	}
	if err := it.Error(); err != nil {
		t.Fatalf("scan error: %v", err)
	}
}

// randomWalk applies n random ops to it and the model, comparing after
// each.
func randomWalk(t testing.TB, r *rand.Rand, it base.InternalIterator, want []Entry, keySpace, n int) {
	t.Helper()
	m := &model{es: want, pos: -1}
	for i := range n {
		o := randOp(r, keySpace)
		got, exp := o.apply(it, m)
		checkPos(t, i, o, it, m, got, exp)
	}
	if err := it.Error(); err != nil {
		t.Fatalf("walk error: %v", err)
	}
}

// errInjected is the error failIter reports.
var errInjected = errors.New("injected iterator failure")

// failIter wraps an iterator and, from its budget-th positioning call on,
// fails: the call returns false and Error reports errInjected, the way a
// table iterator reports a bad block. closeErr, if set, is returned by
// Close. closed counts Close calls.
type failIter struct {
	base.InternalIterator
	budget   int
	failed   bool
	closeErr error
	closed   *int
}

func (f *failIter) pos(valid func() bool) bool {
	if f.failed {
		return false
	}
	if f.budget--; f.budget < 0 {
		f.failed = true
		return false
	}
	return valid()
}

func (f *failIter) SeekGE(k []byte) bool {
	return f.pos(func() bool { return f.InternalIterator.SeekGE(k) })
}
func (f *failIter) SeekLT(k []byte) bool {
	return f.pos(func() bool { return f.InternalIterator.SeekLT(k) })
}
func (f *failIter) First() bool { return f.pos(f.InternalIterator.First) }
func (f *failIter) Last() bool  { return f.pos(f.InternalIterator.Last) }
func (f *failIter) Next() bool  { return f.pos(f.InternalIterator.Next) }
func (f *failIter) Prev() bool  { return f.pos(f.InternalIterator.Prev) }
func (f *failIter) Valid() bool { return !f.failed && f.InternalIterator.Valid() }

func (f *failIter) Error() error {
	if f.failed {
		return errInjected
	}
	return nil
}

func (f *failIter) Close() error {
	if f.closed != nil {
		*f.closed++
	}
	return f.closeErr
}

// checkSticky asserts that it has failed with want and stays failed.
func checkSticky(t testing.TB, r *rand.Rand, it base.InternalIterator, want error, keySpace int) {
	t.Helper()
	for range 20 {
		o := randOp(r, keySpace)
		if got, _ := o.apply(it, &model{pos: -1}); got || it.Valid() {
			t.Fatalf("%v after failure: valid", o)
		}
		if err := it.Error(); !errors.Is(err, want) {
			t.Fatalf("%v after failure: Error() = %v, want %v", o, err, want)
		}
	}
}
