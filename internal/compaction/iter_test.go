package compaction

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/iter"
)

// readState is what a reader finds for one user key at one read point.
type readState struct {
	found bool // some version is visible
	tomb  bool // that version is a deletion or an expired value
	value string
}

// modelRead returns what a reader at readSeq sees for userKey in entries
// (sorted by base.CompareInternal), at clock nowMs: the newest visible
// version, where a deletion or an expired value means "absent".
func modelRead(entries []iter.Entry, userKey []byte, readSeq base.SeqNum, nowMs int64) readState {
	for _, e := range entries {
		if !bytes.Equal(e.Key.UserKey, userKey) || !base.Visible(e.Key.Seq(), readSeq) {
			continue
		}
		switch e.Key.Kind() {
		case base.KindDelete:
			return readState{found: true, tomb: true}
		case base.KindSetExpiry:
			if exp, _, _ := base.DecodeExpiryValue(e.Value); exp <= nowMs {
				return readState{found: true, tomb: true}
			}
		}
		return readState{found: true, value: string(e.Value)}
	}
	return readState{}
}

// drain runs an Iter to the end and returns copies of what it emitted.
func drain(it *Iter) []iter.Entry {
	var out []iter.Entry
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, iter.Entry{Key: it.Key().Clone(), Value: slices.Clone(it.Value())})
	}
	return out
}

// checkIter filters entries through an Iter and compares the result with
// the rules, returning a description of the first violation:
//   - every reader (each snapshot and the latest read point) sees the same
//     thing before and after; outside the bottommost case that includes
//     seeing a tombstone (which hides deeper data) rather than nothing;
//   - the output is exactly the newest version of each (user key, stripe),
//     expired values rewritten as deletions, minus trailing deletions when
//     bottommost;
//   - Stats agree.
func checkIter(entries []iter.Entry, snapshots []base.SeqNum, bottommost bool, nowMs int64) (string, error) {
	it := NewIter(iter.NewSliceIter(entries), snapshots, bottommost, nowMs)
	out := drain(it)
	if err := it.Error(); err != nil {
		return "", err
	}
	if it.Next() {
		return "Next returned true after the end", nil
	}
	for i := 1; i < len(out); i++ {
		if base.CompareInternal(out[i-1].Key, out[i].Key) >= 0 {
			return fmt.Sprintf("output out of order at %d: %s then %s", i, out[i-1].Key, out[i].Key), nil
		}
	}

	readPoints := append(slices.Clone(snapshots), base.SeqNumMax)
	var userKeys [][]byte
	for i, e := range entries {
		if i == 0 || !bytes.Equal(e.Key.UserKey, entries[i-1].Key.UserKey) {
			userKeys = append(userKeys, e.Key.UserKey)
		}
	}
	for _, uk := range userKeys {
		for _, rp := range readPoints {
			in, got := modelRead(entries, uk, rp, nowMs), modelRead(out, uk, rp, nowMs)
			if bottommost {
				// Nothing lies below: a tombstone and no entry read alike.
				in.found, got.found = in.found && !in.tomb, got.found && !got.tomb
				in.tomb, got.tomb = false, false
			}
			if got != in {
				return fmt.Sprintf("key %q at read point %d: input reads %+v, output reads %+v", uk, rp, in, got), nil
			}
		}
	}

	stripe := func(seq base.SeqNum) int {
		return sort.Search(len(snapshots), func(j int) bool { return snapshots[j] > seq })
	}
	var want []iter.Entry
	var expiredInKept int64
	for i := 0; i < len(entries); {
		j := i
		var kept []iter.Entry
		for ; j < len(entries) && bytes.Equal(entries[j].Key.UserKey, entries[i].Key.UserKey); j++ {
			e := entries[j]
			if len(kept) > 0 && stripe(kept[len(kept)-1].Key.Seq()) == stripe(e.Key.Seq()) {
				continue
			}
			if e.Key.Kind() == base.KindSetExpiry {
				if exp, _, _ := base.DecodeExpiryValue(e.Value); exp <= nowMs {
					e = iter.Entry{Key: base.MakeInternalKey(e.Key.UserKey, e.Key.Seq(), base.KindDelete)}
					expiredInKept++
				}
			}
			kept = append(kept, e)
		}
		for bottommost && len(kept) > 0 && kept[len(kept)-1].Key.Kind() == base.KindDelete {
			kept = kept[:len(kept)-1]
		}
		want = append(want, kept...)
		i = j
	}
	if !slices.EqualFunc(out, want, func(a, b iter.Entry) bool {
		return base.CompareInternal(a.Key, b.Key) == 0 && a.Key.Trailer == b.Key.Trailer && bytes.Equal(a.Value, b.Value)
	}) {
		return fmt.Sprintf("output %v, want %v", out, want), nil
	}
	dropped, expired := it.Stats()
	if dropped != int64(len(entries)-len(out)) || expired != expiredInKept {
		return fmt.Sprintf("Stats() = %d, %d; want %d, %d", dropped, expired, len(entries)-len(out), expiredInKept), nil
	}
	return "", nil
}

// randIterCase returns sorted entries over a few user keys with many
// versions each, unique sequence numbers, deletions and expiring values
// around nowMs, plus random ascending snapshots.
func randIterCase(r *rand.Rand) (entries []iter.Entry, snapshots []base.SeqNum, nowMs int64) {
	nowMs = 1_000_000 + r.Int64N(1000)
	nKeys := 1 + r.IntN(5)
	maxSeq := 10 + r.IntN(150)
	for _, seq := range r.Perm(maxSeq)[:r.IntN(min(maxSeq, 60))] {
		k := fmt.Appendf(nil, "k%d", r.IntN(nKeys))
		var e iter.Entry
		switch r.IntN(4) {
		case 0:
			e.Key = base.MakeInternalKey(k, base.SeqNum(seq+1), base.KindDelete)
		case 1:
			e.Key = base.MakeInternalKey(k, base.SeqNum(seq+1), base.KindSet)
			e.Value = fmt.Appendf(nil, "v%d", seq)
		default:
			e.Key = base.MakeInternalKey(k, base.SeqNum(seq+1), base.KindSetExpiry)
			e.Value = base.EncodeExpiryValue(nil, nowMs+r.Int64N(11)-5, fmt.Appendf(nil, "x%d", seq))
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b iter.Entry) int { return base.CompareInternal(a.Key, b.Key) })
	for s := range maxSeq + 3 {
		if r.IntN(6) == 0 {
			snapshots = append(snapshots, base.SeqNum(s))
		}
	}
	return entries, snapshots, nowMs
}

// forRandIterCases calls f with seeded random cases (randIterCase), 5000
// of them, 1000 under -short; r is the generator, for f's own choices.
func forRandIterCases(t *testing.T, seed uint64, f func(i int, r *rand.Rand, entries []iter.Entry, snapshots []base.SeqNum, nowMs int64, bottommost bool)) {
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	cases := 5000
	if testing.Short() {
		cases = 1000
	}
	for i := range cases {
		entries, snapshots, nowMs := randIterCase(r)
		f(i, r, entries, snapshots, nowMs, r.IntN(2) == 0)
	}
}

func TestIterModel(t *testing.T) {
	forRandIterCases(t, 4242, func(i int, _ *rand.Rand, entries []iter.Entry, snapshots []base.SeqNum, nowMs int64, bottommost bool) {
		msg, err := checkIter(entries, snapshots, bottommost, nowMs)
		if err != nil || msg != "" {
			t.Fatalf("case %d (bottommost=%v now=%d snapshots=%v entries=%v): %s %v",
				i, bottommost, nowMs, snapshots, entries, msg, err)
		}
	})
}

// TestIterExamples pins the rules on small hand-written cases.
func TestIterExamples(t *testing.T) {
	set := func(k string, seq base.SeqNum, v string) iter.Entry {
		return iter.Entry{Key: base.MakeInternalKey([]byte(k), seq, base.KindSet), Value: []byte(v)}
	}
	del := func(k string, seq base.SeqNum) iter.Entry {
		return iter.Entry{Key: base.MakeInternalKey([]byte(k), seq, base.KindDelete)}
	}
	setex := func(k string, seq base.SeqNum, exp int64) iter.Entry {
		return iter.Entry{Key: base.MakeInternalKey([]byte(k), seq, base.KindSetExpiry), Value: base.EncodeExpiryValue(nil, exp, []byte("x"))}
	}
	for _, tc := range []struct {
		name       string
		in         []iter.Entry
		snapshots  []base.SeqNum
		bottommost bool
		want       []string
	}{
		{"newest wins", []iter.Entry{set("a", 3, "3"), set("a", 2, "2"), set("a", 1, "1")}, nil, false,
			[]string{`"a"#3,SET=3`}},
		// A snapshot at 3 sees seq 2 but not 3: it keeps 2 alive, and 1 is
		// shadowed for every reader.
		{"snapshot keeps a version", []iter.Entry{set("a", 3, "3"), set("a", 2, "2"), set("a", 1, "1")}, []base.SeqNum{3}, false,
			[]string{`"a"#3,SET=3`, `"a"#2,SET=2`}},
		{"tombstone kept above deeper data", []iter.Entry{del("a", 2), set("a", 1, "1")}, nil, false,
			[]string{`"a"#2,DEL=`}},
		{"tombstone vanishes at the bottom", []iter.Entry{del("a", 2), set("a", 1, "1"), set("b", 1, "b")}, nil, true,
			[]string{`"b"#1,SET=b`}},
		// The snapshot at 2 still reads "1", so the deletion must stay to
		// hide it from newer readers, even at the bottom.
		{"snapshot protects under a tombstone", []iter.Entry{del("a", 2), set("a", 1, "1")}, []base.SeqNum{2}, true,
			[]string{`"a"#2,DEL=`, `"a"#1,SET=1`}},
		{"expired becomes a tombstone", []iter.Entry{setex("a", 2, 100), set("a", 1, "1"), setex("b", 1, 101)}, nil, false,
			[]string{`"a"#2,DEL=`, `"b"#1,SETEX=` + string(base.EncodeExpiryValue(nil, 101, []byte("x")))}},
		{"expired vanishes at the bottom", []iter.Entry{setex("a", 2, 100)}, nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := NewIter(iter.NewSliceIter(tc.in), tc.snapshots, tc.bottommost, 100)
			var got []string
			for _, e := range drain(it) {
				got = append(got, fmt.Sprintf("%s=%s", e.Key, e.Value))
			}
			if it.Error() != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q (err %v), want %q", got, it.Error(), tc.want)
			}
		})
	}
}

func TestIterCorruption(t *testing.T) {
	for _, bad := range []iter.Entry{
		{Key: base.MakeInternalKey([]byte("b"), 5, base.KindSetExpiry), Value: []byte("short")},
		{Key: base.MakeInternalKey([]byte("b"), 5, base.Kind(7)), Value: []byte("v")},
	} {
		in := []iter.Entry{
			{Key: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Value: []byte("a")},
			bad,
			{Key: base.MakeInternalKey([]byte("c"), 1, base.KindSet), Value: []byte("c")},
		}
		it := NewIter(iter.NewSliceIter(in), nil, false, 0)
		out := drain(it)
		var ce *base.CorruptionError
		if err := it.Error(); !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%s: error %v, want a *base.CorruptionError", bad.Key, err)
		}
		if len(out) != 1 || it.First() || it.Next() {
			t.Fatalf("%s: emitted %d entries or moved after the error", bad.Key, len(out))
		}
	}
}

// failingIter is a slice iterator whose Next fails after a set number of
// calls, like a table reader hitting a bad block.
type failingIter struct {
	base.InternalIterator
	nexts int
	err   error
}

var errInjected = errors.New("injected read error")

func (f *failingIter) Next() bool {
	if f.nexts == 0 {
		f.err = errInjected
		return false
	}
	f.nexts--
	return f.InternalIterator.Next()
}

func (f *failingIter) Valid() bool  { return f.err == nil && f.InternalIterator.Valid() }
func (f *failingIter) Error() error { return f.err }

// TestIterInputError checks that an input error stops the output before
// any part of the failing user key's versions, and sticks.
func TestIterInputError(t *testing.T) {
	in := []iter.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Value: []byte("a")},
		{Key: base.MakeInternalKey([]byte("b"), 3, base.KindSet), Value: []byte("b3")},
		{Key: base.MakeInternalKey([]byte("b"), 2, base.KindDelete)},
		{Key: base.MakeInternalKey([]byte("c"), 1, base.KindSet), Value: []byte("c")},
	}
	for nexts := range len(in) {
		it := NewIter(&failingIter{InternalIterator: iter.NewSliceIter(in), nexts: nexts}, []base.SeqNum{3}, true, 0)
		out := drain(it)
		if !errors.Is(it.Error(), errInjected) || it.First() {
			t.Fatalf("nexts=%d: error %v", nexts, it.Error())
		}
		// Only user keys whose every version was read may come out.
		if want := map[int]int{0: 0, 1: 1, 2: 1, 3: 2}[nexts]; len(out) != want {
			t.Fatalf("nexts=%d: emitted %v, want %d entries", nexts, out, want)
		}
	}
}

// TestIterAllocs checks that buffers are reused from user key to user key:
// filtering many keys costs a bounded number of allocations.
func TestIterAllocs(t *testing.T) {
	var in []iter.Entry
	for k := range 2000 {
		for seq := 3; seq > 0; seq-- {
			in = append(in, iter.Entry{
				Key:   base.MakeInternalKey(fmt.Appendf(nil, "key%05d", k), base.SeqNum(seq), base.KindSet),
				Value: bytes.Repeat([]byte{byte(seq)}, 10*k%100),
			})
		}
	}
	it := NewIter(iter.NewSliceIter(in), []base.SeqNum{2}, false, 0)
	allocs := testing.AllocsPerRun(5, func() {
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != 2*2000 {
			t.Fatalf("emitted %d entries, want %d", n, 2*2000)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per pass over warm buffers, want 0", allocs)
	}
}

// FuzzIter decodes arbitrary bytes into a compaction input (user key, kind
// and value per entry, including unknown kinds and truncated expiry
// values) and checks the Iter against the model, or that it reports the
// damage as corruption.
func FuzzIter(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x02, 'v', 'x'}, uint64(0), int64(100))
	f.Add([]byte{0x12, 0x02, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x00, 0x00, 0x00}, uint64(0b1010), int64(0))
	f.Add(binary.LittleEndian.AppendUint64([]byte{0x22, 0x02, 0x08}, 50), uint64(3), int64(50))
	f.Add([]byte{0x33, 0x07, 0x00, 0x10, 0x00, 0x00}, uint64(1), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, snapshotBits uint64, nowMs int64) {
		var entries []iter.Entry
		damaged := false
		seq := base.SeqNum(1)
		for len(data) >= 3 && len(entries) < 64 {
			kind := base.Kind(data[1])
			n := min(int(data[2]), len(data)-3)
			e := iter.Entry{
				Key:   base.MakeInternalKey([]byte{'a' + data[0]%4}, seq, kind),
				Value: data[3 : 3+n],
			}
			if !kind.Valid() || (kind == base.KindSetExpiry && n < base.ExpiryLen) {
				damaged = true
			}
			entries = append(entries, e)
			data = data[3+n:]
			seq++
		}
		slices.SortFunc(entries, func(a, b iter.Entry) int { return base.CompareInternal(a.Key, b.Key) })
		var snapshots []base.SeqNum
		for s := range 64 {
			if snapshotBits&(1<<s) != 0 {
				snapshots = append(snapshots, base.SeqNum(s))
			}
		}
		for _, bottommost := range []bool{false, true} {
			msg, err := checkIter(entries, snapshots, bottommost, nowMs)
			switch {
			case err != nil && (!damaged || !errors.Is(err, base.ErrCorruption)):
				t.Fatalf("unexpected error %v", err)
			case err == nil && damaged:
				t.Fatalf("damaged input passed")
			case msg != "":
				t.Fatal(msg)
			}
		}
	})
}

// TestIterFilter runs random cases through an Iter whose filter drops
// some user keys, and checks that every snapshot reads exactly what it
// read before, that the latest read point no longer finds a dropped key's
// value, that every other key reads as before, and that Filtered counts
// the versions the filter turned into deletions.
func TestIterFilter(t *testing.T) {
	forRandIterCases(t, 77, func(i int, r *rand.Rand, entries []iter.Entry, snapshots []base.SeqNum, nowMs int64, bottommost bool) {
		dead := map[string]bool{}
		for k := range 5 {
			dead[fmt.Sprintf("k%d", k)] = r.IntN(2) == 0
		}
		it := NewIter(iter.NewSliceIter(entries), snapshots, bottommost, nowMs)
		var asked int64
		it.SetFilter(func(uk []byte) bool { asked++; return dead[string(uk)] })
		out := drain(it)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d (bottommost=%v now=%d snapshots=%v dead=%v entries=%v out=%v): %s",
				i, bottommost, nowMs, snapshots, dead, entries, out, fmt.Sprintf(format, args...))
		}
		if err := it.Error(); err != nil {
			fail("%v", err)
		}
		var filtered int64
		seen := map[string]bool{}
		for _, e := range entries {
			uk := string(e.Key.UserKey)
			if seen[uk] {
				continue
			}
			seen[uk] = true
			for _, rp := range append(slices.Clone(snapshots), base.SeqNumMax) {
				in, got := modelRead(entries, e.Key.UserKey, rp, nowMs), modelRead(out, e.Key.UserKey, rp, nowMs)
				if bottommost {
					in.found, got.found = in.found && !in.tomb, got.found && !got.tomb
					in.tomb, got.tomb = false, false
				}
				if rp != base.SeqNumMax || !dead[uk] {
					if got != in {
						fail("key %q at read point %d: input reads %+v, output reads %+v", uk, rp, in, got)
					}
					continue
				}
				// The newest version is offered when no snapshot sees it.
				newest := e.Key.Seq()
				offered := len(snapshots) == 0 || snapshots[len(snapshots)-1] <= newest
				if offered && in.found && !in.tomb {
					filtered++
					if got.found && !got.tomb {
						fail("key %q: the filter dropped it, yet the latest read finds %+v", uk, got)
					}
				} else if got != in {
					fail("key %q, not offered: input reads %+v, output reads %+v", uk, in, got)
				}
			}
		}
		if it.Filtered() != filtered || asked < filtered {
			fail("Filtered() = %d after %d questions, want %d", it.Filtered(), asked, filtered)
		}
	})
}
