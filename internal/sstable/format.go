package sstable

import (
	"encoding/binary"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// FormatVersion is the table format version written in every footer. A
// reader refuses any other value.
const FormatVersion = 1

// tableMagic ends every table file. It is checked before anything else so
// that a file that is not a table at all is reported as such.
const tableMagic = "lsmgoSST"

// Footer layout: metaindex handle and index handle as fixed 64-bit
// offset/length pairs, the format version, a masked CRC32C of the
// preceding 36 bytes, then the magic. Fixed-width fields keep the footer a
// constant size so a reader finds it from the file size alone.
const (
	footerLen          = 8 + 8 + 8 + 8 + 4 + 4 + len(tableMagic)
	footerVersionOff   = 32
	footerChecksumOff  = 36
	footerMagicOff     = 40
	blockTrailerLen    = 5
	maxRestartInterval = 1 << 16
)

// maxBlockLen bounds the decoded size of any block. The writer never makes
// a bigger one (see MaxEntrySize), so a larger claim in a compressed block
// is corruption; the bound keeps a damaged length from allocating
// unbounded memory.
const maxBlockLen = 1 << 30

// MaxEntrySize is the largest key plus value the writer accepts. Together
// with the block size cap it keeps every block under maxBlockLen and every
// in-block offset within 32 bits.
const MaxEntrySize = 1 << 29

// maxBlockSize caps WriterOptions.BlockSize for the same reason.
const maxBlockSize = 1 << 28

// Meta-index entry names. The writer names its filter
// metaBlockedFilterName; metaLegacyFilterName is the filter of tables
// written before the blocked layout, which readers still use. Readers that
// predate the blocked layout ignore its name and read such tables
// correctly, without a filter.
const (
	metaBlockedFilterName = "lsmgo.filter.blocked"
	metaLegacyFilterName  = "lsmgo.filter"
	metaPropertiesName    = "lsmgo.properties"
)

// blockChecksum is the masked CRC32C of a stored block's bytes followed by
// its compression type byte.
func blockChecksum(payload []byte, typ byte) uint32 {
	c := base.CRC32C(payload)
	// A slice of a fixed array: a one-byte slice literal would escape
	// through crc32.Update and cost an allocation per block.
	c = base.UpdateCRC32C(c, byteValues[int(typ):int(typ)+1])
	return base.MaskCRC(c)
}

// byteValues holds every byte value at its own index.
var byteValues = func() (b [256]byte) {
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// blockHandle locates a stored block: its offset in the file and the
// length of its stored (possibly compressed) bytes, trailer excluded.
type blockHandle struct {
	offset, length uint64
}

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeBlockHandle parses a handle that must fill b exactly.
func decodeBlockHandle(b []byte) (blockHandle, bool) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return blockHandle{}, false
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) {
		return blockHandle{}, false
	}
	return blockHandle{off, length}, true
}

// within reports whether the block and its trailer lie before limit.
func (h blockHandle) within(limit uint64) bool {
	return h.length <= limit && h.offset <= limit-h.length && limit-h.length-h.offset >= blockTrailerLen
}

type footer struct {
	metaindex, index blockHandle
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	binary.LittleEndian.PutUint64(b[0:], f.metaindex.offset)
	binary.LittleEndian.PutUint64(b[8:], f.metaindex.length)
	binary.LittleEndian.PutUint64(b[16:], f.index.offset)
	binary.LittleEndian.PutUint64(b[24:], f.index.length)
	binary.LittleEndian.PutUint32(b[footerVersionOff:], FormatVersion)
	binary.LittleEndian.PutUint32(b[footerChecksumOff:], base.MaskCRC(base.CRC32C(b[:footerChecksumOff])))
	copy(b[footerMagicOff:], tableMagic)
	return b
}

// decodeFooter parses and verifies the footer b read at offset off of
// file.
func decodeFooter(b []byte, file string, off int64) (footer, error) {
	if string(b[footerMagicOff:]) != tableMagic {
		return footer{}, base.Corruptf(file, off, "bad magic number: not an lsmgo table")
	}
	if got, want := binary.LittleEndian.Uint32(b[footerChecksumOff:]), base.MaskCRC(base.CRC32C(b[:footerChecksumOff])); got != want {
		return footer{}, base.Corruptf(file, off, "footer checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[footerVersionOff:]); v != FormatVersion {
		return footer{}, base.Corruptf(file, off, "unsupported table format version %d", v)
	}
	return footer{
		metaindex: blockHandle{binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])},
		index:     blockHandle{binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])},
	}, nil
}
