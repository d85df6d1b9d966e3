package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
)

// seedTables returns small valid tables, one per compression, for fuzz
// corpora.
func seedTables(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		entries := randomEntries(rng, 12)
		for i := range entries {
			if len(entries[i].value) > 20 {
				entries[i].value = entries[i].value[:20]
			}
		}
		data, _ := buildTable(t, entries, WriterOptions{BlockSize: 128, BlockRestartInterval: 2, BloomBitsPerKey: 10, Compression: c})
		out = append(out, data)
	}
	return out
}

// probeTable drives every read path of a table that opened; anything may
// fail, nothing may panic, and every error must be corruption (the bytes
// are all in memory, so there is no I/O to fail).
func probeTable(t *testing.T, r *Reader, keys [][]byte) {
	check := func(err error) {
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("non-corruption error %v", err)
		}
	}
	ci := r.NewCompactionIter()
	n := 0
	for ok := ci.First(); ok && n < 10000; ok = ci.Next() {
		n++
	}
	check(ci.Close())
	it := r.NewIter(nil, nil)
	n = 0
	for ok := it.First(); ok && n < 10000; ok = it.Next() {
		keys = append(keys, it.Key().UserKey)
		n++
	}
	for ok := it.Last(); ok && n < 20000; ok = it.Prev() {
		n++
	}
	check(it.Error())
	for _, k := range keys {
		it.SeekGE(k)
		it.Prev()
		it.SeekLT(k)
		it.Next()
		_, _, _, err := r.Get(k, base.SeqNumMax)
		check(err)
	}
	check(it.Close())
	check(r.VerifyChecksums())
}

// FuzzReader opens arbitrary bytes as a table and reads it every way.
func FuzzReader(f *testing.F) {
	for _, data := range seedTables(f) {
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(data[len(data)/3:])
	}
	f.Add([]byte(tableMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := openTable(data, ReaderOptions{FileName: "fuzz.sst"})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("NewReader: non-corruption error %v", err)
			}
			return
		}
		defer r.Close()
		probeTable(t, r, [][]byte{nil, []byte("a"), []byte("key000001")})
		compareCached(t, r, data)
	})
}

// compareCached reads every key of r again through a second reader with a
// block cache too small for the table, twice, so blocks are cached, hit,
// evicted and their buffers recycled (poisoned in tests) while the answers
// must stay those of the uncached reader. The second reader reads the
// table through its mapping (ReaderOptions.Map), the first with ReadAt.
func compareCached(t *testing.T, r *Reader, data []byte) {
	c, err := openTable(data, ReaderOptions{FileName: "fuzz.sst", Cache: cache.New(4 << 10), FileNum: 1, Map: true})
	if err != nil {
		t.Fatalf("a table that opened once fails to open again: %v", err)
	}
	defer c.Close()
	it := r.NewIter(nil, nil)
	var keys [][]byte
	for ok := it.First(); ok && len(keys) < 1000; ok = it.Next() {
		keys = append(keys, it.Key().UserKey)
	}
	it.Close()
	for range 2 {
		for _, k := range keys {
			v1, k1, f1, e1 := r.Get(k, base.SeqNumMax)
			v2, k2, f2, e2 := c.Get(k, base.SeqNumMax)
			if !bytes.Equal(v1, v2) || k1 != k2 || f1 != f2 || (e1 == nil) != (e2 == nil) {
				t.Fatalf("Get(%q): uncached %q %v %v %v, cached %q %v %v %v", k, v1, k1, f1, e1, v2, k2, f2, e2)
			}
		}
	}
}

// FuzzBlock drives the block decoder over arbitrary bytes, as it would
// see them after a checksum collision.
func FuzzBlock(f *testing.F) {
	w := blockWriter{restartInterval: 2}
	for i, k := range []string{"a", "ab", "abc", "b", "bcd"} {
		w.add(base.MakeInternalKey([]byte(k), base.SeqNum(i), base.KindSet).Append(nil), []byte(k))
	}
	f.Add(w.finish())
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 1, 1, 'a', 'b', 0, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if validateBlock(b) != "" {
			// Random bytes rarely end in a valid restart array; treat
			// them as the entries of a block with one restart point so
			// the entry decoder still sees them.
			b = binary.LittleEndian.AppendUint32(append(b[:len(b):len(b)], 0, 0, 0, 0), 1)
			if validateBlock(b) != "" {
				return
			}
		}
		var it blockIter
		it.init(b, "fuzz", 0)
		n := 0
		for ok := it.first(); ok && n < 1000; ok = it.nextEntry() {
			n++
		}
		for ok := it.last(); ok && n < 2000; ok = it.prevEntry() {
			n++
		}
		for _, target := range [][]byte{make([]byte, 8), []byte("abc\xff\xff\xff\xff\xff\xff\xff\xff"), []byte("zzzzzzzzz")} {
			it.init(b, "fuzz", 0)
			it.seekGE(target)
			it.prevEntry()
			it.init(b, "fuzz", 0)
			it.seekLT(target)
			it.nextEntry()
		}
		if it.err != nil && !errors.Is(it.err, base.ErrCorruption) {
			t.Fatalf("non-corruption error %v", it.err)
		}
	})
}

// FuzzTableBlock stores arbitrary bytes under an arbitrary compression
// type, with a valid checksum, as one block of an otherwise well-formed
// table (which: the data, index, properties or meta-index block), so that
// the fuzzer reaches the decompressors and the decoders behind checksums.
func FuzzTableBlock(f *testing.F) {
	_, good := assembleTable(goodBlocks(), [4]byte{})
	for which := range good {
		for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
			payload, ok, err := compress(c, nil, good[which])
			if err != nil {
				f.Fatal(err)
			}
			if !ok {
				payload = good[which]
			}
			f.Add(payload, byte(c), uint8(which))
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte, typ byte, which uint8) {
		blocks := goodBlocks()
		types := [4]byte{}
		blocks[which%4], types[which%4] = payload, typ
		data, _ := assembleTable(blocks, types)
		r, err := openTable(data, ReaderOptions{FileName: "fuzz.sst"})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("NewReader: non-corruption error %v", err)
			}
			return
		}
		defer r.Close()
		probeTable(t, r, [][]byte{nil, {'a', 3}, {'b'}})
	})
}

// Block positions for assembleTable.
const (
	fuzzData = iota
	fuzzIndex
	fuzzProps
	fuzzMeta
)

// goodBlocks returns the data and properties blocks of a small valid
// table; assembleTable generates the index and meta-index.
func goodBlocks() [4][]byte {
	w := blockWriter{restartInterval: 3}
	for i := 0; i < 20; i++ {
		w.add(base.MakeInternalKey([]byte{'a', byte(i)}, base.SeqNum(i), base.KindSet).Append(nil), []byte("value"))
	}
	var props Properties
	return [4][]byte{fuzzData: w.finish(), fuzzProps: props.encode()}
}

// assembleTable lays out data, properties, meta-index and index blocks
// and a footer. A nil index or meta-index block is generated to point at
// the blocks actually written. It returns the file and the blocks in it.
func assembleTable(blocks [4][]byte, types [4]byte) ([]byte, [4][]byte) {
	var file []byte
	add := func(b []byte, typ byte) blockHandle {
		h := blockHandle{uint64(len(file)), uint64(len(b))}
		file = append(file, b...)
		file = append(file, typ)
		file = binary.LittleEndian.AppendUint32(file, blockChecksum(b, typ))
		return h
	}
	dh := add(blocks[fuzzData], types[fuzzData])
	ph := add(blocks[fuzzProps], types[fuzzProps])
	if blocks[fuzzMeta] == nil {
		meta := blockWriter{restartInterval: 1}
		meta.add([]byte(metaPropertiesName), ph.append(nil))
		blocks[fuzzMeta] = meta.finish()
	}
	mh := add(blocks[fuzzMeta], types[fuzzMeta])
	if blocks[fuzzIndex] == nil {
		index := blockWriter{restartInterval: 1}
		index.add(base.MakeInternalKey([]byte{0xff, 0xff}, 0, base.KindSet).Append(nil), dh.append(nil))
		blocks[fuzzIndex] = index.finish()
	}
	ih := add(blocks[fuzzIndex], types[fuzzIndex])
	return append(file, footer{metaindex: mh, index: ih}.encode()...), blocks
}

// TestAssembledTable checks that the fuzz harness's table is valid as
// built, so that fuzzing starts from the reader's success paths.
func TestAssembledTable(t *testing.T) {
	data, _ := assembleTable(goodBlocks(), [4]byte{})
	r, err := openTable(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
	if v, _, found, err := r.Get([]byte{'a', 3}, base.SeqNumMax); !found || err != nil || string(v) != "value" {
		t.Fatalf("Get = %q %v %v", v, found, err)
	}
}
