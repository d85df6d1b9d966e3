package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// shortened divides a randomized check's iteration count by three under
// -short, which CI runs under -race. The slowest case, the table that is one
// block too large for the cache, rereads that block on every seek, so its
// cost grows with both its entries and its seeks: TestRandomTables took
// 409 s under -race -short on a loaded 2-core machine, 370 s of it there.
func shortened(n int) int {
	if testing.Short() {
		return n / 3
	}
	return n
}

func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return seed
}

// TestRandomTables builds random tables under several option sets and
// checks every read path against the model.
func TestRandomTables(t *testing.T) {
	seed := testSeed(t)
	configs := []WriterOptions{
		{BlockSize: 4096},
		{BlockSize: 64, BlockRestartInterval: 1, BloomBitsPerKey: 10, Compression: SnappyCompression},
		{BlockSize: 512, BlockRestartInterval: 4, Compression: ZstdCompression},
		{BlockSize: 4096, BloomBitsPerKey: 10, Compression: ZstdCompression},
		{BlockSize: 2048, BlockRestartInterval: 16, BloomBitsPerKey: 5, Compression: SnappyCompression},
		{BlockSize: 1 << 20, BlockRestartInterval: 128, BloomBitsPerKey: 10},
	}
	for ci, opts := range configs {
		t.Run(fmt.Sprintf("%d-%s-bs%d-ri%d-bloom%d", ci, opts.Compression, opts.BlockSize, opts.BlockRestartInterval, opts.BloomBitsPerKey), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(ci)))
			entries := randomEntries(rng, shortened(3000))
			data, md := buildTable(t, entries, opts)
			c := cache.New(1 << 20)
			r, err := openTable(data, ReaderOptions{Cache: c, FileNum: 7, FileName: "t.sst"})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			checkMetadata(t, md, r.Properties(), entries, uint64(len(data)))
			if err := r.VerifyChecksums(); err != nil {
				t.Fatal(err)
			}
			m := model(entries)
			checkGets(t, rng, r, m)
			for _, b := range randomBounds(rng, m) {
				checkIterator(t, rng, r, m, b[0], b[1])
			}
		})
	}
}

func checkMetadata(t *testing.T, md WriterMetadata, p Properties, entries []entry, size uint64) {
	t.Helper()
	if md.Size != size || md.NumEntries != uint64(len(entries)) || p.NumEntries != uint64(len(entries)) {
		t.Fatalf("metadata %+v / properties %+v for %d entries, %d bytes", md, p, len(entries), size)
	}
	if base.CompareInternal(md.Smallest, entries[0].key) != 0 || base.CompareInternal(md.Largest, entries[len(entries)-1].key) != 0 {
		t.Fatalf("bounds %s..%s, want %s..%s", md.Smallest, md.Largest, entries[0].key, entries[len(entries)-1].key)
	}
	var dels, rawK, rawV uint64
	minSeq, maxSeq := base.SeqNumMax, base.SeqNum(0)
	for _, e := range entries {
		if e.key.Kind() == base.KindDelete {
			dels++
		}
		rawK += uint64(e.key.Size())
		rawV += uint64(len(e.value))
		minSeq, maxSeq = min(minSeq, e.key.Seq()), max(maxSeq, e.key.Seq())
	}
	if p.NumDeletions != dels || p.RawKeySize != rawK || p.RawValueSize != rawV ||
		p.SmallestSeq != minSeq || p.LargestSeq != maxSeq || md.SmallestSeq != minSeq || md.LargestSeq != maxSeq {
		t.Fatalf("properties %+v, want dels %d rawK %d rawV %d seqs [%d,%d]", p, dels, rawK, rawV, minSeq, maxSeq)
	}
	if time.Since(time.Unix(p.CreationTime, 0)) > time.Hour || p.NumDataBlocks == 0 || p.IndexSize == 0 || p.DataSize == 0 {
		t.Fatalf("properties %+v", p)
	}
	if !strings.Contains(p.String(), fmt.Sprintf("entries: %d", len(entries))) {
		t.Fatalf("String() = %q", p.String())
	}
}

// probeKeys returns user keys to look up or seek to: every key in the
// model, plus neighbours that are absent.
func probeKey(rng *rand.Rand, m model) []byte {
	k := m[rng.IntN(len(m))].key.UserKey
	switch rng.IntN(4) {
	case 0:
		return append(append([]byte{}, k...), 0)
	case 1:
		if len(k) > 0 {
			return k[:len(k)-1]
		}
	case 2:
		return fmt.Appendf(nil, "key%06d", rng.IntN(40000))
	}
	return k
}

func checkGets(t *testing.T, rng *rand.Rand, r *Reader, m model) {
	t.Helper()
	maxSeq := r.Properties().LargestSeq
	for n := 0; n < shortened(3000); n++ {
		k := probeKey(rng, m)
		readSeq := base.SeqNum(rng.IntN(int(maxSeq) + 3))
		switch rng.IntN(10) {
		case 0:
			readSeq = base.SeqNumMax
		case 1:
			readSeq = base.SeqNumMax + 100
		}
		v, kind, found, err := r.Get(k, readSeq)
		if err != nil {
			t.Fatal(err)
		}
		want, wantFound := m.get(k, readSeq)
		if found != wantFound {
			t.Fatalf("Get(%q, %d): found=%v, want %v (%s)", k, readSeq, found, wantFound, want.key)
		}
		if !found {
			continue
		}
		if kind != want.key.Kind() {
			t.Fatalf("Get(%q, %d): kind %s, want %s", k, readSeq, kind, want.key.Kind())
		}
		if kind == base.KindDelete {
			if v != nil {
				t.Fatalf("Get(%q, %d): tombstone with value %q", k, readSeq, v)
			}
		} else if !bytes.Equal(v, want.value) {
			t.Fatalf("Get(%q, %d): value %q, want %q", k, readSeq, v, want.value)
		}
	}
}

func randomBounds(rng *rand.Rand, m model) [][2][]byte {
	bounds := [][2][]byte{{nil, nil}}
	for i := 0; i < 5; i++ {
		a, b := probeKey(rng, m), probeKey(rng, m)
		if bytes.Compare(a, b) > 0 {
			a, b = b, a
		}
		switch i {
		case 0:
			bounds = append(bounds, [2][]byte{a, nil})
		case 1:
			bounds = append(bounds, [2][]byte{nil, b})
		case 2:
			bounds = append(bounds, [2][]byte{b, a}) // empty or inverted range
		default:
			bounds = append(bounds, [2][]byte{a, b})
		}
	}
	return bounds
}

func checkIterator(t *testing.T, rng *rand.Rand, r *Reader, m model, lower, upper []byte) {
	t.Helper()
	it := r.NewIter(lower, upper)
	defer func() {
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	c := &cursor{m: m.bounded(lower, upper)}
	what := fmt.Sprintf("bounds [%q,%q)", lower, upper)

	// Full scans both ways.
	c.first()
	ok := it.First()
	for n := 0; ; n++ {
		checkPos(t, what+" forward scan", it, ok, c)
		if !ok {
			break
		}
		c.next()
		ok = it.Next()
	}
	c.last()
	ok = it.Last()
	for {
		checkPos(t, what+" backward scan", it, ok, c)
		if !ok {
			break
		}
		c.prev()
		ok = it.Prev()
	}

	// Random seeks followed by random walks that switch direction.
	for n := 0; n < shortened(300); n++ {
		k := probeKey(rng, m)
		var op string
		switch rng.IntN(4) {
		case 0:
			op = fmt.Sprintf("SeekGE(%q)", k)
			c.seekGE(k)
			ok = it.SeekGE(k)
		case 1:
			op = fmt.Sprintf("SeekLT(%q)", k)
			c.seekLT(k)
			ok = it.SeekLT(k)
		case 2:
			op = "First"
			c.first()
			ok = it.First()
		default:
			op = "Last"
			c.last()
			ok = it.Last()
		}
		checkPos(t, what+" "+op, it, ok, c)
		for s := rng.IntN(40); s > 0; s-- {
			if rng.IntN(2) == 0 {
				op += " Next"
				c.next()
				ok = it.Next()
			} else {
				op += " Prev"
				c.prev()
				ok = it.Prev()
			}
			checkPos(t, what+" "+op, it, ok, c)
		}
	}
}

func TestGetBloomStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	entries := randomEntries(rng, 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 4096, BloomBitsPerKey: 10})
	var stats Stats
	r, err := openTable(data, ReaderOptions{Stats: &stats, FileName: "t.sst"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const misses = 10000
	for i := 0; i < misses; i++ {
		if _, _, found, err := r.Get(fmt.Appendf(nil, "absent-%d", i), base.SeqNumMax); found || err != nil {
			t.Fatalf("found absent key: %v", err)
		}
	}
	neg, pos := stats.BloomNegatives.Load(), stats.BloomPositives.Load()
	if neg+pos != misses || pos > misses/50 {
		t.Fatalf("bloom negatives %d positives %d for %d absent keys", neg, pos, misses)
	}
	reads := stats.BlockReads.Load()
	for _, e := range entries {
		if _, _, found, err := r.Get(e.key.UserKey, base.SeqNumMax); !found || err != nil {
			t.Fatalf("Get(%q): found=%v err=%v", e.key.UserKey, found, err)
		}
	}
	if stats.BloomNegatives.Load() != neg || stats.BlockReads.Load() == reads {
		t.Fatalf("present keys: negatives %d -> %d, block reads %d -> %d", neg, stats.BloomNegatives.Load(), reads, stats.BlockReads.Load())
	}
}

func TestCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	entries := randomEntries(rng, 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 4096, Compression: SnappyCompression})
	c := cache.New(64 << 20)
	var stats Stats
	r, err := openTable(data, ReaderOptions{Cache: c, FileNum: 3, Stats: &stats})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Opening reads the meta-index, index and properties blocks.
	if n := stats.BlockReads.Load(); n != 3 {
		t.Fatalf("open read %d blocks", n)
	}
	stats.BlockReads.Store(0)
	scan := func() int {
		it := r.NewIter(nil, nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := scan(); n != len(entries) {
		t.Fatalf("scanned %d of %d", n, len(entries))
	}
	reads := stats.BlockReads.Load()
	if reads != int64(r.Properties().NumDataBlocks) {
		t.Fatalf("first scan read %d blocks of %d", reads, r.Properties().NumDataBlocks)
	}
	scan()
	if stats.BlockReads.Load() != reads {
		t.Fatalf("second scan read %d more blocks despite the cache", stats.BlockReads.Load()-reads)
	}
	c.EvictFile(3)
	scan()
	if stats.BlockReads.Load() != 2*reads {
		t.Fatalf("after eviction: %d block reads, want %d", stats.BlockReads.Load(), 2*reads)
	}
}

// TestMappedCachesRepeats checks that a mapped table's blocks are
// decoded from the mapping and enter the cache only when read twice in a
// row (readDataBlock): scans and alternating reads of two blocks cache
// nothing, a block read again is served from the cache from its third
// read on, and Gets and scans return every entry throughout, from many
// goroutines too (recycled blocks are poisoned in tests, so a cached
// block released too early would show as a wrong value).
func TestMappedCachesRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 12))
	entries := randomEntries(rng, 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 2048, Compression: SnappyCompression})
	c := cache.New(64 << 20)
	var stats Stats
	r, err := openTable(data, ReaderOptions{Cache: c, FileNum: 4, Stats: &stats, Map: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Mapped() {
		t.Fatal("the table was not mapped")
	}
	cached := func() int64 { _, _, _, n := c.Metrics(); return n }
	stats.BlockReads.Store(0)
	for pass := int64(1); pass <= 2; pass++ {
		cur := &cursor{m: entries}
		cur.first()
		it := r.NewIter(nil, nil)
		checkPos(t, "first", it, it.First(), cur)
		for cur.valid() {
			cur.next()
			checkPos(t, "next", it, it.Next(), cur)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := stats.BlockReads.Load(), pass*int64(r.Properties().NumDataBlocks); got != want {
			t.Fatalf("scan %d: %d block reads in all, want %d", pass, got, want)
		}
	}
	if n := cached(); n != 0 {
		t.Fatalf("scans left %d blocks in the cache", n)
	}
	get := func(k []byte) {
		t.Helper()
		want, _ := model(entries).get(k, base.SeqNumMax)
		v, kind, found, err := r.Get(k, base.SeqNumMax)
		if err != nil || !found || kind != want.key.Kind() || (kind != base.KindDelete && !bytes.Equal(v, want.value)) {
			t.Fatalf("Get(%q) = %q, %v, found=%v, err=%v; want %q, %v", k, v, kind, found, err, want.value, want.key.Kind())
		}
	}
	// reads runs fn and returns how many blocks it read from the mapping.
	reads := func(fn func()) int64 {
		n := stats.BlockReads.Load()
		fn()
		return stats.BlockReads.Load() - n
	}
	first, last := entries[0].key.UserKey, entries[len(entries)-1].key.UserKey
	if n := reads(func() {
		for range 10 {
			get(first)
			get(last)
		}
	}); n != 20 || cached() != 0 {
		t.Fatalf("alternating reads of two blocks: %d block reads, %d blocks cached; want 20, 0", n, cached())
	}
	if n := reads(func() { get(first); get(first) }); n != 2 || cached() != 1 {
		t.Fatalf("a block read twice in a row: %d block reads, %d blocks cached; want 2, 1", n, cached())
	}
	if n := reads(func() {
		for range 10 {
			get(first)
		}
	}); n != 0 {
		t.Fatalf("a cached block read 10 times more: %d block reads, want 0", n)
	}
	// Another block read in between: the next read of the cached one
	// decodes it again, the one after finds it in the cache.
	if n := reads(func() { get(last); get(first); get(first) }); n != 2 || cached() != 1 {
		t.Fatalf("reads of blocks last, first, first: %d block reads, %d blocks cached; want 2, 1", n, cached())
	}
	for i, e := range entries {
		if i > 0 && bytes.Equal(entries[i-1].key.UserKey, e.key.UserKey) {
			continue // an older version
		}
		get(e.key.UserKey)
		get(e.key.UserKey)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 13))
			for range 2000 {
				k := first // a hot block, cached and read by all
				if rng.IntN(2) == 0 {
					k = entries[rng.IntN(len(entries))].key.UserKey
				}
				want, _ := model(entries).get(k, base.SeqNumMax)
				v, kind, found, err := r.Get(k, base.SeqNumMax)
				if err != nil || !found || kind != want.key.Kind() || (kind != base.KindDelete && !bytes.Equal(v, want.value)) {
					t.Errorf("Get(%q) = %q, %v, found=%v, err=%v; want %q, %v", k, v, kind, found, err, want.value, want.key.Kind())
					return
				}
			}
		})
	}
	wg.Wait()
	c.EvictFile(4)
	if n := cached(); n != 0 {
		t.Fatalf("EvictFile left %d blocks of the mapped table in the cache", n)
	}
}

// TestMappedKeptBlocksReadAt checks that a mapped table's index, filter,
// meta-index and properties are read with ReadAt, not through the
// mapping, whose pages would then stay resident for blocks the reader
// holds decoded anyway: every byte of the mapping after the data blocks
// is damaged here, so a reader that read them from it would not open.
func TestMappedKeptBlocksReadAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 13))
	entries := randomEntries(rng, 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 2048, Compression: SnappyCompression, BloomBitsPerKey: 10})
	plain, err := openTable(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := plain.index.handles[plain.index.len()-1]
	dataEnd := int(last.offset + last.length + blockTrailerLen)
	if plain.filter == nil || plain.filterH.offset < uint64(dataEnd) {
		t.Fatalf("the table has no filter after its data blocks (filter at %d, data end %d)", plain.filterH.offset, dataEnd)
	}
	plain.Close()
	mapped := bytes.Clone(data)
	for i := dataEnd; i < len(mapped)-footerLen; i++ {
		mapped[i] ^= 0xa5
	}
	f := &otherMapping{memFile: &memFile{data: data}, mapped: mapped}
	r, err := NewReader(f, int64(len(data)), ReaderOptions{Map: true})
	if err != nil {
		t.Fatalf("opening a table whose mapping differs only after its data blocks: %v", err)
	}
	defer r.Close()
	if !r.Mapped() {
		t.Fatal("the table was not mapped")
	}
	checkGets(t, rng, r, model(entries))
}

// otherMapping is a memFile whose mapping holds other bytes than ReadAt
// returns.
type otherMapping struct {
	*memFile
	mapped []byte
}

func (m *otherMapping) mappedBytes() []byte { return m.mapped }

// TestCompactionIter checks that the compaction iterator returns every
// entry, also over blocks larger than its readahead and after seeks in
// either direction, without touching the cache.
func TestCompactionIter(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 8))
	entries := randomEntries(rng, 3000)
	for _, opts := range []WriterOptions{
		{BlockSize: 4096, Compression: SnappyCompression},
		{BlockSize: 1024, Compression: NoCompression},
		{BlockSize: 2 * scanReadahead, Compression: ZstdCompression},
	} {
		data, _ := buildTable(t, entries, opts)
		c := cache.New(64 << 20)
		var stats Stats
		r, err := openTable(data, ReaderOptions{Cache: c, FileNum: 1, Stats: &stats})
		if err != nil {
			t.Fatal(err)
		}
		stats.BlockReads.Store(0)
		it := r.NewCompactionIter()
		cur := &cursor{m: entries}
		cur.first()
		checkPos(t, "first", it, it.First(), cur)
		for cur.valid() {
			cur.next()
			checkPos(t, "next", it, it.Next(), cur)
		}
		if got, want := stats.BlockReads.Load(), int64(r.Properties().NumDataBlocks); got != want {
			t.Fatalf("%+v: a scan read %d blocks, want %d", opts, got, want)
		}
		for range 50 {
			k := entries[rng.IntN(len(entries))].key.UserKey
			if rng.IntN(2) == 0 {
				cur.seekGE(k)
				checkPos(t, "seekGE", it, it.SeekGE(k), cur)
				for j := 0; j < 40 && cur.valid(); j++ {
					cur.next()
					checkPos(t, "next", it, it.Next(), cur)
				}
			} else {
				cur.seekLT(k)
				checkPos(t, "seekLT", it, it.SeekLT(k), cur)
				for j := 0; j < 40 && cur.valid(); j++ {
					cur.prev()
					checkPos(t, "prev", it, it.Prev(), cur)
				}
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if hits, misses, _, count := c.Metrics(); hits+misses+count != 0 {
			t.Fatalf("%+v: the compaction iterator used the cache: %d hits, %d misses, %d blocks", opts, hits, misses, count)
		}
		r.Close()
	}
}

func TestEmptyTable(t *testing.T) {
	for _, opts := range []WriterOptions{{BlockSize: 4096}, {BlockSize: 4096, BloomBitsPerKey: 10, Compression: ZstdCompression}} {
		data, md := buildTable(t, nil, opts)
		if md.NumEntries != 0 || md.Size != uint64(len(data)) {
			t.Fatalf("metadata %+v", md)
		}
		r, err := openTable(data, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, found, err := r.Get([]byte("a"), base.SeqNumMax); found || err != nil {
			t.Fatalf("Get on empty table: %v %v", found, err)
		}
		it := r.NewIter(nil, nil)
		if it.First() || it.Last() || it.SeekGE([]byte("a")) || it.SeekLT([]byte("a")) || it.Next() || it.Prev() {
			t.Fatal("iterator over an empty table found an entry")
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.VerifyChecksums(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

func TestWriterErrors(t *testing.T) {
	k := func(s string, seq base.SeqNum, kind base.Kind) base.InternalKey {
		return base.MakeInternalKey([]byte(s), seq, kind)
	}
	cases := []struct {
		name string
		keys []base.InternalKey
	}{
		{"user key order", []base.InternalKey{k("b", 1, base.KindSet), k("a", 2, base.KindSet)}},
		{"seq order", []base.InternalKey{k("a", 1, base.KindSet), k("a", 2, base.KindSet)}},
		{"duplicate", []base.InternalKey{k("a", 1, base.KindSet), k("a", 1, base.KindSet)}},
		{"invalid kind", []base.InternalKey{k("a", 1, base.Kind(9))}},
	}
	for _, tc := range cases {
		f := &memFile{}
		w := NewWriter(f, WriterOptions{BlockSize: 4096})
		var err error
		for _, key := range tc.keys {
			if err = w.Add(key, nil); err != nil {
				break
			}
		}
		if err == nil {
			t.Fatalf("%s: Add accepted bad key", tc.name)
		}
		if err2 := w.Add(k("z", 9, base.KindSet), nil); err2 != err {
			t.Fatalf("%s: error not sticky: %v then %v", tc.name, err, err2)
		}
		if _, err2 := w.Close(); err2 != err || !f.closed {
			t.Fatalf("%s: Close returned %v (closed=%v), want %v", tc.name, err2, f.closed, err)
		}
		if _, err := w.Close(); err == nil {
			t.Fatalf("%s: second Close succeeded", tc.name)
		}
	}
	if err := NewWriter(&memFile{}, WriterOptions{BlockSize: 4096, Compression: 7}).Add(k("a", 1, base.KindSet), nil); err == nil {
		t.Fatal("unknown compression accepted")
	}
}

func TestSeparator(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	alphabet := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	randKey := func() base.InternalKey {
		k := make([]byte, rng.IntN(6))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return base.MakeInternalKey(k, base.SeqNum(rng.IntN(4)), base.KindSet)
	}
	shortened := 0
	for n := 0; n < 100000; n++ {
		a, b := randKey(), randKey()
		c := base.CompareInternal(a, b)
		if c == 0 {
			continue
		}
		if c > 0 {
			a, b = b, a
		}
		ea, eb := a.Append(nil), b.Append(nil)
		sep := separator(nil, ea, eb)
		if base.CompareEncoded(ea, sep) > 0 || base.CompareEncoded(sep, eb) >= 0 {
			t.Fatalf("separator(%s, %s) = %x out of range", a, b, sep)
		}
		if k, ok := base.DecodeInternalKey(sep); !ok {
			t.Fatalf("separator(%s, %s) = %x is not a valid key", a, b, sep)
		} else if !bytes.Equal(k.UserKey, a.UserKey) {
			shortened++
		}
	}
	if shortened == 0 {
		t.Fatal("separator never shortened")
	}
}

// TestFileSystems writes and reads a table through the OS and in-memory
// filesystems, which is how the engine uses the package.
func TestFileSystems(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	entries := randomEntries(rng, 500)
	for name, fs := range map[string]vfs.FS{"os": vfs.Default, "mem": vfs.NewMem()} {
		path := fs.PathJoin(t.TempDir(), base.MakeFilename(base.FileTypeTable, 5))
		if name == "mem" {
			path = filepath.Base(path)
		}
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(f, WriterOptions{BlockSize: 4096, Compression: ZstdCompression, BloomBitsPerKey: 10})
		for _, e := range entries {
			if err := w.Add(e.key, e.value); err != nil {
				t.Fatal(err)
			}
		}
		md, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		f, err = fs.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil || uint64(st.Size()) != md.Size {
			t.Fatalf("%s: size %v, metadata %d (%v)", name, st, md.Size, err)
		}
		// Map: the OS file is read through a mapping; the in-memory one,
		// which cannot be mapped, with ReadAt.
		r, err := NewReader(f, st.Size(), ReaderOptions{FileName: path, Map: true})
		if err != nil {
			t.Fatal(err)
		}
		if mapped := r.mapped != nil; mapped != (name == "os") {
			t.Fatalf("%s: mapped %v", name, mapped)
		}
		checkGets(t, rng, r, entries)
		if err := r.VerifyChecksums(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// exercise runs every read path over r and reports the first error; a
// value that differs from the model is a test failure. It is how the
// corruption and fuzz tests probe a damaged table.
func exercise(t testing.TB, r *Reader, m model) error {
	check := func(e entry, k base.InternalKey, v []byte) {
		if base.CompareInternal(k, e.key) != 0 || !bytes.Equal(v, e.value) {
			t.Fatalf("damaged table returned %s=%q, want %s=%q", k, v, e.key, e.value)
		}
	}
	// The compaction iterator first, so that every damaged table meets it
	// before another path reports the damage.
	ci := r.NewCompactionIter()
	n := 0
	for ok := ci.First(); ok; ok = ci.Next() {
		check(m[n], ci.Key(), ci.Value())
		n++
	}
	if err := ci.Close(); err != nil {
		return err
	}
	for _, e := range m {
		v, kind, found, err := r.Get(e.key.UserKey, e.key.Seq()+1)
		if err != nil {
			return err
		}
		if !found || kind != e.key.Kind() || (kind != base.KindDelete && !bytes.Equal(v, e.value)) {
			t.Fatalf("damaged table: Get(%s) = %q %s %v", e.key, v, kind, found)
		}
	}
	it := r.NewIter(nil, nil)
	n = 0
	for ok := it.First(); ok; ok = it.Next() {
		check(m[n], it.Key(), it.Value())
		n++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	n = len(m)
	for ok := it.Last(); ok; ok = it.Prev() {
		n--
		check(m[n], it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		return err
	}
	return r.VerifyChecksums()
}

// TestCorruptionEveryByte flips one bit in every byte of a small table in
// turn: each must be reported as corruption by some read path, and no read
// may return a wrong entry.
func TestCorruptionEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 5))
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		entries := randomEntries(rng, 40)
		for i := range entries {
			if len(entries[i].value) > 50 {
				entries[i].value = entries[i].value[:50]
			}
		}
		data, _ := buildTable(t, entries, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: c})
		t.Logf("%s: %d entries, %d bytes", c, len(entries), len(data))
		for pos := range data {
			damaged := bytes.Clone(data)
			damaged[pos] ^= 1 << (pos % 8)
			// Odd positions read the table through its mapping.
			r, err := openTable(damaged, ReaderOptions{FileName: "t.sst", Map: pos%2 == 1})
			if err == nil {
				err = exercise(t, r, entries)
				r.Close()
			}
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s: flip at %d: got %v, want corruption", c, pos, err)
			}
			if ce.File != "t.sst" || ce.Offset < 0 || ce.Offset > int64(pos) {
				t.Fatalf("%s: flip at %d: error %v names the wrong place", c, pos, err)
			}
		}
		// Every truncation too.
		for n := 0; n < len(data); n++ {
			r, err := openTable(data[:n], ReaderOptions{FileName: "t.sst", Map: n%2 == 1})
			if err == nil {
				err = exercise(t, r, entries)
				r.Close()
			}
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s: truncated to %d: got %v, want corruption", c, n, err)
			}
		}
	}
}

// TestReadError checks that an I/O error is returned as such, not as
// corruption, and invalidates the iterator.
func TestReadError(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 6))
	entries := randomEntries(rng, 500)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 4096})
	f := &failingFile{memFile: memFile{data: data}}
	r, err := NewReader(f, int64(len(data)), ReaderOptions{FileName: "t.sst"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f.fail = true
	it := r.NewIter(nil, nil)
	if it.First() || it.Valid() || !errors.Is(it.Error(), errInjected) || errors.Is(it.Error(), base.ErrCorruption) {
		t.Fatalf("First with failing reads: valid=%v err=%v", it.Valid(), it.Error())
	}
	if it.Next() || it.SeekGE(nil) || it.Close() == nil {
		t.Fatal("iterator recovered from an error")
	}
	if _, _, _, err := r.Get(entries[0].key.UserKey, base.SeqNumMax); !errors.Is(err, errInjected) {
		t.Fatalf("Get with failing reads: %v", err)
	}
}

var errInjected = errors.New("injected read error")

type failingFile struct {
	memFile
	fail bool
}

func (f *failingFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fail {
		return 0, errInjected
	}
	return f.memFile.ReadAt(p, off)
}

// TestConcurrentReads shares one reader and a small cache (so blocks are
// evicted and reread) among goroutines doing Gets and scans; run with
// -race.
func TestConcurrentReads(t *testing.T) {
	seed := testSeed(t)
	entries := randomEntries(rand.New(rand.NewPCG(seed, 7)), 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: ZstdCompression})
	var stats Stats
	r, err := openTable(data, ReaderOptions{Cache: cache.New(64 << 10), FileNum: 1, Stats: &stats})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := model(entries)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+g)))
			for n := 0; n < 200; n++ {
				k := probeKey(rng, m)
				v, kind, found, err := r.Get(k, base.SeqNumMax)
				want, wantFound := m.get(k, base.SeqNumMax)
				if err != nil || found != wantFound || (found && (kind != want.key.Kind() || !bytes.Equal(v, want.value) && kind != base.KindDelete)) {
					t.Errorf("Get(%q) = %q %v %v, %v", k, v, found, kind, err)
					return
				}
				if n%50 == 0 {
					it := r.NewIter(nil, nil)
					i := 0
					for ok := it.First(); ok; ok = it.Next() {
						if base.CompareInternal(it.Key(), m[i].key) != 0 {
							t.Errorf("scan: %s, want %s", it.Key(), m[i].key)
							break
						}
						i++
					}
					if err := it.Close(); err != nil || i != len(m) {
						t.Errorf("scan saw %d of %d: %v", i, len(m), err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestCompressionString(t *testing.T) {
	for c, want := range map[Compression]string{NoCompression: "none", SnappyCompression: "snappy", ZstdCompression: "zstd", 9: "compression(9)"} {
		if c.String() != want {
			t.Errorf("%d.String() = %q, want %q", c, c.String(), want)
		}
	}
}
