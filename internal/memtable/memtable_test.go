package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

type entry struct {
	key   base.InternalKey
	value []byte
}

// model is the reference: a sorted slice of entries.
type model []entry

func (md model) search(userKey []byte, trailer uint64) int {
	i, _ := slices.BinarySearchFunc(md, base.InternalKey{UserKey: userKey, Trailer: trailer},
		func(e entry, k base.InternalKey) int { return base.CompareInternal(e.key, k) })
	return i
}

func (md *model) add(e entry) {
	i := md.search(e.key.UserKey, e.key.Trailer)
	*md = slices.Insert(*md, i, e)
}

func (md model) get(userKey []byte, readSeq base.SeqNum) (entry, bool) {
	for _, e := range md {
		if bytes.Equal(e.key.UserKey, userKey) && e.key.Seq() < readSeq {
			return e, true // entries are newest first within a user key
		}
	}
	return entry{}, false
}

func seedRNG(t testing.TB) (*rand.Rand, uint64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0)), seed
}

func userKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

// edgeKey maps i to a key that probes the abbreviated-key comparison:
// lengths 0 to 12 (so some are shorter than the 8-byte abbreviation and
// some extend another key by zero bytes), bytes from {0x00, 0x01, 0x7f,
// 0xff}, and for half of them a shared first 8 bytes, so that they
// differ only after the abbreviation. Different i may give the same key,
// which makes more versions of it.
func edgeKey(i int) []byte {
	alphabet := [4]byte{0x00, 0x01, 0x7f, 0xff}
	h := uint64(i) * 0x9E3779B97F4A7C15
	k := make([]byte, i%13)
	for j := range k {
		if j < 8 && h>>63 == 0 {
			k[j] = 'p'
			continue
		}
		k[j] = alphabet[(h>>(2*j))&3]
	}
	return k
}

// TestAbbreviate checks the property compare relies on: a < b implies
// abbreviate(a) <= abbreviate(b).
func TestAbbreviate(t *testing.T) {
	for i := range 400 {
		for j := range 400 {
			a, b := edgeKey(i), edgeKey(j)
			if bytes.Compare(a, b) < 0 && abbreviate(a) > abbreviate(b) {
				t.Fatalf("%x < %x but abbreviations %x > %x", a, b, abbreviate(a), abbreviate(b))
			}
		}
	}
}

// checkIter compares a full scan in both directions with the model.
func checkIter(t *testing.T, m *Memtable, md model, seed uint64) {
	t.Helper()
	it := m.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(md) || base.CompareInternal(it.Key(), md[i].key) != 0 || !bytes.Equal(it.Value(), md[i].value) {
			t.Fatalf("seed %d: forward entry %d is %s", seed, i, it.Key())
		}
		i++
	}
	if i != len(md) {
		t.Fatalf("seed %d: forward scan saw %d of %d entries", seed, i, len(md))
	}
	i = len(md) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || base.CompareInternal(it.Key(), md[i].key) != 0 {
			t.Fatalf("seed %d: backward entry %d is %s", seed, i, it.Key())
		}
		i--
	}
	if i != -1 {
		t.Fatalf("seed %d: backward scan stopped at %d", seed, i)
	}
}

func TestRandomAgainstModel(t *testing.T) {
	t.Run("heap", func(t *testing.T) { testRandomAgainstModel(t, New(1<<20), userKey) })
	t.Run("mapped", func(t *testing.T) {
		m := NewMapped(1 << 20)
		defer m.Free()
		testRandomAgainstModel(t, m, userKey)
	})
	t.Run("edgekeys", func(t *testing.T) { testRandomAgainstModel(t, New(1<<20), edgeKey) })
}

// testRandomAgainstModel runs random operations on m and the model, with
// user keys key(0) to key(299) added and key(300) to key(309) only looked
// up.
func testRandomAgainstModel(t *testing.T, m *Memtable, key func(int) []byte) {
	rng, seed := seedRNG(t)
	var md model
	nextSeq := base.SeqNum(1)
	for op := 0; op < 4000; op++ {
		switch r := rng.IntN(100); {
		case r < 60:
			k := base.MakeInternalKey(key(rng.IntN(300)), nextSeq, base.Kind(rng.IntN(int(base.KindMax)+1)))
			nextSeq++
			var v []byte
			if k.Kind() != base.KindDelete {
				v = []byte(fmt.Sprintf("v%d-%s", k.Seq(), bytes.Repeat([]byte{'x'}, rng.IntN(40))))
			}
			if err := m.Add(k, v); err != nil {
				t.Fatalf("seed %d: add %s: %v", seed, k, err)
			}
			md.add(entry{k, v})
		case r < 65 && len(md) > 0:
			e := md[rng.IntN(len(md))]
			if err := m.Add(e.key, []byte("other")); !errors.Is(err, ErrDuplicate) {
				t.Fatalf("seed %d: re-adding %s: %v, want ErrDuplicate", seed, e.key, err)
			}
		case r < 80:
			uk := key(rng.IntN(310))
			readSeq := base.SeqNum(rng.Uint64N(uint64(nextSeq) + 2))
			want, wantOK := md.get(uk, readSeq)
			v, kind, ok := m.Get(uk, readSeq)
			if ok != wantOK || (ok && (kind != want.key.Kind() || !bytes.Equal(v, want.value))) {
				t.Fatalf("seed %d: Get(%s, %d) = %q %s %v, want %q %s %v", seed, uk, readSeq, v, kind, ok, want.value, want.key.Kind(), wantOK)
			}
		case r < 90:
			// Seek to a user key (sometimes one that is absent), then
			// step a few times in a random direction.
			uk := key(rng.IntN(310))
			if rng.IntN(2) == 0 {
				uk = append(uk, 0)
			}
			it := m.NewIter()
			var pos int
			if rng.IntN(2) == 0 {
				it.SeekGE(uk)
				pos = md.search(uk, ^uint64(0))
			} else {
				it.SeekLT(uk)
				pos = md.search(uk, ^uint64(0)) - 1
			}
			for step := 0; ; step++ {
				valid := pos >= 0 && pos < len(md)
				if it.Valid() != valid || (valid && base.CompareInternal(it.Key(), md[pos].key) != 0) {
					t.Fatalf("seed %d: after seek %q and %d steps: valid %v key %s, want position %d", seed, uk, step, it.Valid(), it.Key(), pos)
				}
				if !valid || step == 5 {
					break
				}
				if rng.IntN(2) == 0 {
					it.Next()
					pos++
				} else {
					it.Prev()
					pos--
				}
			}
			it.Close()
		case r < 91:
			// A reset arena still holds the old nodes' bytes: nothing of
			// them may show through the refilled list or the filter.
			checkIter(t, m, md, seed)
			m.Reset()
			md = nil
		default:
			checkIter(t, m, md, seed)
		}
	}
	checkIter(t, m, md, seed)
	if m.Len() != len(md) || m.Empty() != (len(md) == 0) {
		t.Fatalf("seed %d: Len %d Empty %v, model has %d", seed, m.Len(), m.Empty(), len(md))
	}
}

func TestGetVersions(t *testing.T) {
	m := New(4096)
	adds := []struct {
		seq   base.SeqNum
		kind  base.Kind
		value string
	}{
		{1, base.KindSet, "v1"},
		{3, base.KindSet, "v3"},
		{5, base.KindDelete, ""},
		{7, base.KindSetExpiry, "v7"},
	}
	for _, a := range adds {
		if err := m.Add(base.MakeInternalKey([]byte("b"), a.seq, a.kind), []byte(a.value)); err != nil {
			t.Fatal(err)
		}
	}
	// Neighbours that share a prefix or sort adjacently must not leak.
	for _, k := range []string{"", "a", "b\x00", "ba", "c"} {
		if err := m.Add(base.MakeInternalKey([]byte(k), 4, base.KindSet), []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		readSeq base.SeqNum
		value   string
		kind    base.Kind
		found   bool
	}{
		{0, "", 0, false},
		{1, "", 0, false},
		{2, "v1", base.KindSet, true},
		{3, "v1", base.KindSet, true},
		{4, "v3", base.KindSet, true},
		{5, "v3", base.KindSet, true},
		{6, "", base.KindDelete, true},
		{7, "", base.KindDelete, true},
		{8, "v7", base.KindSetExpiry, true},
		{base.SeqNumMax, "v7", base.KindSetExpiry, true},
		{^base.SeqNum(0), "v7", base.KindSetExpiry, true},
	}
	for _, tc := range tests {
		v, kind, found := m.Get([]byte("b"), tc.readSeq)
		if string(v) != tc.value || kind != tc.kind || found != tc.found {
			t.Errorf("Get(b, %d) = %q %s %v, want %q %s %v", tc.readSeq, v, kind, found, tc.value, tc.kind, tc.found)
		}
	}
	if _, _, found := m.Get([]byte("bb"), base.SeqNumMax); found {
		t.Error("found an absent key")
	}
}

func TestEmptyIterator(t *testing.T) {
	m := New(0)
	if !m.Empty() || m.Len() != 0 {
		t.Fatal("new memtable is not empty")
	}
	it := m.NewIter()
	for name, ok := range map[string]bool{
		"First": it.First(), "Last": it.Last(), "SeekGE": it.SeekGE(nil), "SeekLT": it.SeekLT([]byte("z")),
		"Next": it.Next(), "Prev": it.Prev(), "Valid": it.Valid(),
	} {
		if ok {
			t.Errorf("%s on an empty memtable reported an entry", name)
		}
	}
	if it.Error() != nil || it.Close() != nil {
		t.Fatal("empty iterator reported an error")
	}
}

func TestFull(t *testing.T) {
	m := New(4096)
	var md model
	for i := 0; ; i++ {
		k := base.MakeInternalKey(userKey(i), base.SeqNum(i+1), base.KindSet)
		before := m.Size()
		err := m.Add(k, []byte("value"))
		if errors.Is(err, ErrFull) {
			if m.Size() != before {
				t.Fatalf("failed Add moved size from %d to %d", before, m.Size())
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		md.add(entry{k, []byte("value")})
	}
	if len(md) < 20 || m.Size() > m.Capacity() {
		t.Fatalf("only %d entries fit, size %d of %d", len(md), m.Size(), m.Capacity())
	}
	if err := m.Add(base.MakeInternalKey([]byte("huge"), 1<<40, base.KindSet), make([]byte, 1<<20)); !errors.Is(err, ErrFull) {
		t.Fatalf("oversized entry: %v", err)
	}
	checkIter(t, m, md, 0)
	if m.Len() != len(md) {
		t.Fatalf("Len %d after %d successful adds", m.Len(), len(md))
	}
}

// TestConcurrentFull fills a small table from many goroutines: every Add
// that succeeded must be visible, and no failed one may have left a node.
func TestConcurrentFull(t *testing.T) {
	m := New(64 << 10)
	var seq atomic.Uint64
	var added atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s := seq.Add(1)
				if err := m.Add(base.MakeInternalKey(userKey(int(s%50)), base.SeqNum(s), base.KindSet), []byte("v")); err != nil {
					if !errors.Is(err, ErrFull) {
						t.Error(err)
					}
					return
				}
				added.Add(1)
			}
		}()
	}
	wg.Wait()
	n := 0
	it := m.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if int64(n) != added.Load() || m.Len() != n {
		t.Fatalf("iteration saw %d entries, Len %d, %d Adds succeeded", n, m.Len(), added.Load())
	}
}

// TestConcurrent runs 8 writers over a shared key space with 2 readers
// scanning and probing at the same time; run it under -race.
func TestConcurrent(t *testing.T) {
	const writers, userKeys = 8, 400
	perWriter := 1500
	if testing.Short() {
		perWriter = 500
	}
	m := New(8 << 20)
	var seq atomic.Uint64
	done := make(chan struct{})
	// published[w] is how many of writer w's entries are known inserted.
	var published [writers]atomic.Int64
	var keys [writers][]base.InternalKey
	var writersWG, readersWG sync.WaitGroup
	for w := range writers {
		keys[w] = make([]base.InternalKey, perWriter)
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < perWriter; i++ {
				s := base.SeqNum(seq.Add(1))
				k := base.MakeInternalKey(userKey(rng.IntN(userKeys)), s, base.KindSet)
				if err := m.Add(k, []byte(k.String())); err != nil {
					t.Error(err)
					return
				}
				keys[w][i] = k
				published[w].Store(int64(i + 1))
			}
		}()
	}
	for r := range 2 {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-done:
					return
				default:
				}
				it := m.NewIter()
				var prev base.InternalKey
				first := true
				if r == 0 {
					for ok := it.First(); ok; ok = it.Next() {
						if !first && base.CompareInternal(prev, it.Key()) >= 0 {
							t.Errorf("forward scan out of order: %s then %s", prev, it.Key())
							return
						}
						if string(it.Value()) != it.Key().String() {
							t.Errorf("entry %s has value %q", it.Key(), it.Value())
							return
						}
						prev, first = it.Key(), false
					}
				} else {
					for ok, steps := it.SeekLT(userKey(rng.IntN(userKeys))), 0; ok && steps < 200; ok, steps = it.Prev(), steps+1 {
						if !first && base.CompareInternal(prev, it.Key()) <= 0 {
							t.Errorf("backward scan out of order: %s then %s", prev, it.Key())
							return
						}
						prev, first = it.Key(), false
					}
				}
				// An entry whose Add has returned must be visible to Get;
				// the atomic published count orders the read of keys[w].
				w := rng.IntN(writers)
				if n := published[w].Load(); n > 0 {
					k := keys[w][rng.Int64N(n)]
					if v, _, ok := m.Get(k.UserKey, k.Seq()+1); !ok || string(v) != k.String() {
						t.Errorf("Get(%s) while writing = %q %v", k, v, ok)
						return
					}
				}
			}
		}()
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	if t.Failed() {
		return
	}
	var md model
	for w := range writers {
		for _, k := range keys[w] {
			md.add(entry{k, []byte(k.String())})
			// The newest version visible just past k's seq is k itself.
			v, _, ok := m.Get(k.UserKey, k.Seq()+1)
			if !ok || string(v) != k.String() {
				t.Fatalf("Get(%s) after concurrent insert = %q %v", k, v, ok)
			}
		}
	}
	checkIter(t, m, md, 0)
}

// TestConcurrentDuplicates races goroutines adding the same internal key:
// exactly one wins each key.
func TestConcurrentDuplicates(t *testing.T) {
	m := New(1 << 20)
	const goroutines, keysN = 8, 300
	var wins [keysN]atomic.Int32
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keysN {
				err := m.Add(base.MakeInternalKey(userKey(i), 1, base.KindSet), nil)
				switch {
				case err == nil:
					wins[i].Add(1)
				case !errors.Is(err, ErrDuplicate):
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range wins {
		if n := wins[i].Load(); n != 1 {
			t.Fatalf("key %d inserted %d times", i, n)
		}
	}
	if m.Len() != keysN {
		t.Fatalf("Len %d, want %d", m.Len(), keysN)
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	m := New(1 << 20)
	k := base.MakeInternalKey([]byte("key"), 0, base.KindSet)
	v := []byte("value")
	seq := base.SeqNum(0)
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		k.Trailer = base.MakeTrailer(seq, base.KindSet)
		if err := m.Add(k, v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Add allocates %.1f times per call", allocs)
	}
}
