package sstable

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// Properties describe a table as a whole. They are written by the Writer
// into the properties block and decoded by NewReader.
type Properties struct {
	// NumEntries counts every entry, tombstones included.
	NumEntries uint64
	// NumDeletions counts KindDelete entries.
	NumDeletions uint64
	// NumDataBlocks counts data blocks.
	NumDataBlocks uint64
	// RawKeySize and RawValueSize sum the encoded internal keys and the
	// values as added, before prefix compression and block compression.
	RawKeySize, RawValueSize uint64
	// DataSize is the bytes of all data blocks with their trailers.
	DataSize uint64
	// IndexSize and FilterSize are the stored sizes of those blocks.
	IndexSize, FilterSize uint64
	// FilterBitsPerKey is the bloom setting the filter was built with; 0
	// when the table has no filter.
	FilterBitsPerKey uint64
	// SmallestSeq and LargestSeq bound the entries' sequence numbers (both
	// 0 for an empty table).
	SmallestSeq, LargestSeq base.SeqNum
	// Compression is the compression the writer was configured with;
	// individual blocks may still be stored uncompressed.
	Compression Compression
	// CreationTime is when the writer finished the table, in Unix seconds.
	CreationTime int64
}

// Property names in the properties block. The block is sorted by name, as
// every block is; the reader ignores names it does not know so that later
// versions may add properties without a format change.
const (
	propCompression      = "lsmgo.compression"
	propCreationTime     = "lsmgo.creation-time"
	propDataSize         = "lsmgo.data-size"
	propFilterBitsPerKey = "lsmgo.filter-bits-per-key"
	propFilterSize       = "lsmgo.filter-size"
	propIndexSize        = "lsmgo.index-size"
	propNumDataBlocks    = "lsmgo.num-data-blocks"
	propNumDeletions     = "lsmgo.num-deletions"
	propNumEntries       = "lsmgo.num-entries"
	propRawKeySize       = "lsmgo.raw-key-size"
	propRawValueSize     = "lsmgo.raw-value-size"
	propSeqLargest       = "lsmgo.seq-largest"
	propSeqSmallest      = "lsmgo.seq-smallest"
)

// propField ties a property name to its field.
type propField struct {
	name string
	get  func(*Properties) uint64
	set  func(*Properties, uint64) bool
}

// uintProp is the common case: a field stored as its own value.
func uintProp(name string, field func(*Properties) *uint64) propField {
	return propField{
		name: name,
		get:  func(p *Properties) uint64 { return *field(p) },
		set:  func(p *Properties, x uint64) bool { *field(p) = x; return true },
	}
}

// propFields lists every property in name order. The one table drives both
// encoding and decoding so the two cannot drift apart.
var propFields = []propField{
	{
		name: propCompression,
		get:  func(p *Properties) uint64 { return uint64(p.Compression) },
		set: func(p *Properties, x uint64) bool {
			p.Compression = Compression(x)
			return x <= 0xff
		},
	},
	{
		// Stored as the two's-complement bits of the int64.
		name: propCreationTime,
		get:  func(p *Properties) uint64 { return uint64(p.CreationTime) },
		set:  func(p *Properties, x uint64) bool { p.CreationTime = int64(x); return true },
	},
	uintProp(propDataSize, func(p *Properties) *uint64 { return &p.DataSize }),
	uintProp(propFilterBitsPerKey, func(p *Properties) *uint64 { return &p.FilterBitsPerKey }),
	uintProp(propFilterSize, func(p *Properties) *uint64 { return &p.FilterSize }),
	uintProp(propIndexSize, func(p *Properties) *uint64 { return &p.IndexSize }),
	uintProp(propNumDataBlocks, func(p *Properties) *uint64 { return &p.NumDataBlocks }),
	uintProp(propNumDeletions, func(p *Properties) *uint64 { return &p.NumDeletions }),
	uintProp(propNumEntries, func(p *Properties) *uint64 { return &p.NumEntries }),
	uintProp(propRawKeySize, func(p *Properties) *uint64 { return &p.RawKeySize }),
	uintProp(propRawValueSize, func(p *Properties) *uint64 { return &p.RawValueSize }),
	uintProp(propSeqLargest, func(p *Properties) *uint64 { return (*uint64)(&p.LargestSeq) }),
	uintProp(propSeqSmallest, func(p *Properties) *uint64 { return (*uint64)(&p.SmallestSeq) }),
}

// encode builds the properties block: one entry per property, the value a
// uvarint.
func (p *Properties) encode() []byte {
	w := blockWriter{restartInterval: 1}
	var v []byte
	for _, f := range propFields {
		v = binary.AppendUvarint(v[:0], f.get(p))
		w.add([]byte(f.name), v)
	}
	return w.finish()
}

// decodeProperties parses a validated properties block.
func decodeProperties(b []byte, file string, off uint64) (Properties, error) {
	var p Properties
	var it blockIter
	it.init(b, file, off)
	for ok := it.first(); ok; ok = it.nextEntry() {
		x, n := binary.Uvarint(it.val)
		if n <= 0 || n != len(it.val) {
			return Properties{}, base.Corruptf(file, int64(off), "bad value for property %q", it.key)
		}
		for _, f := range propFields {
			if f.name == string(it.key) && !f.set(&p, x) {
				return Properties{}, base.Corruptf(file, int64(off), "bad value %d for property %q", x, it.key)
			}
		}
	}
	if it.err != nil {
		return Properties{}, it.err
	}
	return p, nil
}

// String formats the properties one per line, for dumps.
func (p Properties) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "entries: %d (deletions %d)\n", p.NumEntries, p.NumDeletions)
	fmt.Fprintf(&b, "data blocks: %d, %d bytes\n", p.NumDataBlocks, p.DataSize)
	fmt.Fprintf(&b, "raw key bytes: %d, raw value bytes: %d\n", p.RawKeySize, p.RawValueSize)
	fmt.Fprintf(&b, "index bytes: %d\n", p.IndexSize)
	fmt.Fprintf(&b, "filter bytes: %d (%d bits/key)\n", p.FilterSize, p.FilterBitsPerKey)
	fmt.Fprintf(&b, "seqnums: [%d, %d]\n", p.SmallestSeq, p.LargestSeq)
	fmt.Fprintf(&b, "compression: %s\n", p.Compression)
	fmt.Fprintf(&b, "created: %s\n", time.Unix(p.CreationTime, 0).UTC().Format(time.RFC3339))
	return b.String()
}
