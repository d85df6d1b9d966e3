package testutil

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// naive is the simplest possible reference for the model itself: a map
// sorted on every read.
type naive map[string]Entry

func (n naive) live(lower, upper []byte, nowMs int64) []Entry {
	var out []Entry
	for _, e := range n {
		if e.Live(nowMs) && (lower == nil || bytes.Compare(e.Key, lower) >= 0) && (upper == nil || bytes.Compare(e.Key, upper) < 0) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

func sameEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && x.ExpireAtMs == y.ExpireAtMs
	})
}

func TestModelAgainstMap(t *testing.T) {
	const seed = 1
	rng := rand.New(rand.NewPCG(seed, seed))
	ks := KeySpace{N: 50}
	m, ref := NewModel(), naive{}
	type snap struct {
		m   *Model
		ref naive
	}
	var snaps []snap
	// Every operation compares whole ranges and snapshots against the
	// naive map, sorted afresh; -short (CI, under -race) runs a quarter.
	ops := 20000
	if testing.Short() {
		ops = 5000
	}
	for i := range ops {
		now := int64(i)
		k := ks.Random(rng)
		switch rng.IntN(6) {
		case 0, 1:
			v := Value(rng, k, uint64(i))
			m.Set(k, v)
			ref[string(k)] = Entry{Key: k, Value: v}
		case 2:
			v := Value(rng, k, uint64(i))
			exp := now + int64(rng.IntN(20))
			m.SetWithExpiry(k, v, exp)
			ref[string(k)] = Entry{Key: k, Value: v, ExpireAtMs: exp}
		case 3:
			m.Delete(k)
			delete(ref, string(k))
		case 4:
			snaps = append(snaps, snap{m.Snapshot(), maps.Clone(ref)})
			if len(snaps) > 4 {
				snaps = snaps[1:]
			}
		case 5:
			e, ok := m.Get(k, now)
			want, wantOK := ref[string(k)]
			wantOK = wantOK && want.Live(now)
			if ok != wantOK || ok && !sameEntries([]Entry{e}, []Entry{want}) {
				t.Fatalf("op %d: Get(%q) = %v %v, want %v %v", i, k, e, ok, want, wantOK)
			}
		}
		lower, upper := ks.Bound(rng, 30), ks.Bound(rng, 30)
		if got, want := m.Range(lower, upper, now), ref.live(lower, upper, now); !sameEntries(got, want) {
			t.Fatalf("op %d: Range(%q, %q) = %d entries, want %d", i, lower, upper, len(got), len(want))
		}
		for j, s := range snaps {
			if got, want := s.m.Range(nil, nil, now), s.ref.live(nil, nil, now); !sameEntries(got, want) {
				t.Fatalf("op %d: snapshot %d changed: %d entries, want %d", i, j, len(got), len(want))
			}
		}
	}
}

func TestIterPositioning(t *testing.T) {
	m := NewModel()
	for _, k := range []string{"b", "d", "f"} {
		m.Set([]byte(k), []byte(k))
	}
	m.SetWithExpiry([]byte("e"), []byte("e"), 10)
	it := m.NewIter([]byte("c"), []byte("f"), 10)
	key := func() string {
		if !it.Valid() {
			return "-"
		}
		return string(it.Entry().Key)
	}
	steps := []struct {
		name string
		move func() bool
		want string
	}{
		{"First", it.First, "d"},
		{"Prev", it.Prev, "-"},
		{"Next after exhaustion", it.Next, "-"},
		{"Last", it.Last, "d"},
		{"Next", it.Next, "-"},
		{"SeekGE(a)", func() bool { return it.SeekGE([]byte("a")) }, "d"},
		{"SeekGE(e)", func() bool { return it.SeekGE([]byte("e")) }, "-"},
		{"SeekLT(z)", func() bool { return it.SeekLT([]byte("z")) }, "d"},
		{"SeekLT(d)", func() bool { return it.SeekLT([]byte("d")) }, "-"},
	}
	for _, s := range steps {
		if ok := s.move(); key() != s.want || ok != (s.want != "-") {
			t.Fatalf("%s: at %s (%v), want %s", s.name, key(), ok, s.want)
		}
	}
}

func TestKeySpaceDistinct(t *testing.T) {
	ks := KeySpace{N: 2000}
	seen := map[string]int{}
	for i := range ks.N {
		k := string(ks.Key(i))
		if j, dup := seen[k]; dup {
			t.Fatalf("keys %d and %d are both %q", j, i, k)
		}
		seen[k] = i
	}
}
