package blob

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// FormatVersion is the blob file format version written in every header.
// A reader refuses any other value.
const FormatVersion = 1

// magic begins every blob file.
const magic = "lsmgoBLB"

// HeaderLen is the size of the file header: the 8-byte magic, the version
// and a masked CRC32C of the two.
const HeaderLen = 8 + 4 + 4

// RecordHeaderLen is the size of a record's fixed header: header, key and
// value checksums, key length (32 bits) and value length (64 bits).
const RecordHeaderLen = 4 + 4 + 4 + 4 + 8

// Offsets of the record header's fields.
const (
	recHeaderCRC = 0
	recKeyCRC    = 4
	recValueCRC  = 8
	recKeyLen    = 12
	recValueLen  = 16
)

// MaxKeyLen is the longest key a record holds: its length is 32 bits.
const MaxKeyLen = math.MaxUint32

// appendFileHeader appends the file header.
func appendFileHeader(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, FormatVersion)
	return binary.LittleEndian.AppendUint32(dst, base.MaskCRC(base.CRC32C(dst[start:])))
}

// checkFileHeader verifies a file header; the error is the reason for a
// corruption report.
func checkFileHeader(b []byte) error {
	switch {
	case len(b) < HeaderLen:
		return fmt.Errorf("file of %d bytes is shorter than the %d-byte header", len(b), HeaderLen)
	case string(b[:len(magic)]) != magic:
		return fmt.Errorf("bad magic %q: not a blob file", b[:len(magic)])
	case binary.LittleEndian.Uint32(b[HeaderLen-4:]) != base.MaskCRC(base.CRC32C(b[:HeaderLen-4])):
		return errors.New("header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[len(magic):]); v != FormatVersion {
		return fmt.Errorf("format version %d, this reader knows %d", v, FormatVersion)
	}
	return nil
}

// checksum is how the format stores the CRC of a key or value.
func checksum(b []byte) uint32 { return base.MaskCRC(base.CRC32C(b)) }

// recordHeader is a record's fixed header, decoded.
type recordHeader struct {
	keyCRC, valueCRC uint32
	keyLen           uint32
	valueLen         uint64
}

func (h recordHeader) encode(b *[RecordHeaderLen]byte) {
	binary.LittleEndian.PutUint32(b[recKeyCRC:], h.keyCRC)
	binary.LittleEndian.PutUint32(b[recValueCRC:], h.valueCRC)
	binary.LittleEndian.PutUint32(b[recKeyLen:], h.keyLen)
	binary.LittleEndian.PutUint64(b[recValueLen:], h.valueLen)
	binary.LittleEndian.PutUint32(b[recHeaderCRC:], checksum(b[recKeyCRC:]))
}

// decodeRecordHeader decodes b and reports whether its checksum passes.
func decodeRecordHeader(b []byte) (recordHeader, bool) {
	if binary.LittleEndian.Uint32(b[recHeaderCRC:]) != checksum(b[recKeyCRC:RecordHeaderLen]) {
		return recordHeader{}, false
	}
	return recordHeader{
		keyCRC:   binary.LittleEndian.Uint32(b[recKeyCRC:]),
		valueCRC: binary.LittleEndian.Uint32(b[recValueCRC:]),
		keyLen:   binary.LittleEndian.Uint32(b[recKeyLen:]),
		valueLen: binary.LittleEndian.Uint64(b[recValueLen:]),
	}, true
}

// Pointer locates a value in a blob file and carries its checksum, so one
// positioned read of Length bytes at Offset both fetches and verifies it.
type Pointer struct {
	FileNum base.FileNum
	// Offset is where the value's first byte lies in the file (after its
	// record's header and key), and Length its size in bytes.
	Offset, Length uint64
	// Checksum is the value's masked CRC32C, as its record stores it.
	Checksum uint32
}

// MaxPointerLen is the longest encoding of a Pointer.
const MaxPointerLen = 3*binary.MaxVarintLen64 + 4

// Append appends the pointer's encoding: the file number, offset and
// length as uvarints, then the checksum as 4 bytes little-endian.
func (p Pointer) Append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.FileNum))
	dst = binary.AppendUvarint(dst, p.Offset)
	dst = binary.AppendUvarint(dst, p.Length)
	return binary.LittleEndian.AppendUint32(dst, p.Checksum)
}

// String formats the pointer for dumps and errors.
// RecordLen is the size of the record p's value lies in, whose key is
// keyLen bytes long: header, key and value. What tables count of a blob
// file is the records they point to, so that a file every record of which
// is live counts as its whole size but for the file header.
func (p Pointer) RecordLen(keyLen int) uint64 {
	return RecordHeaderLen + uint64(keyLen) + p.Length
}

func (p Pointer) String() string {
	return fmt.Sprintf("blob %s at offset %d, %d bytes", base.MakeFilename(base.FileTypeBlob, p.FileNum), p.Offset, p.Length)
}

// errBadPointer is wrapped by every DecodePointer error.
var errBadPointer = errors.New("bad blob pointer")

// DecodePointer decodes a pointer that fills b exactly. It checks what a
// pointer alone can show: a nonzero file number, an offset past the file
// and record headers, and an end that fits in an int64; the file itself
// is checked when the value is read. Errors are plain (the caller knows
// which file the encoding came from and wraps them as corruption).
func DecodePointer(b []byte) (Pointer, error) {
	var p Pointer
	var fields [3]uint64
	rest := b
	for i := range fields {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return Pointer{}, fmt.Errorf("%w: malformed varint in %d bytes", errBadPointer, len(b))
		}
		fields[i], rest = v, rest[n:]
	}
	if len(rest) != 4 {
		return Pointer{}, fmt.Errorf("%w: %d bytes after the varints, want 4", errBadPointer, len(rest))
	}
	p.FileNum, p.Offset, p.Length = base.FileNum(fields[0]), fields[1], fields[2]
	p.Checksum = binary.LittleEndian.Uint32(rest)
	switch {
	case p.FileNum == 0:
		return Pointer{}, fmt.Errorf("%w: file number 0", errBadPointer)
	case p.Offset < uint64(HeaderLen+RecordHeaderLen):
		return Pointer{}, fmt.Errorf("%w: offset %d is inside the headers", errBadPointer, p.Offset)
	case p.Offset > math.MaxInt64 || p.Length > math.MaxInt64-p.Offset:
		return Pointer{}, fmt.Errorf("%w: offset %d + length %d overflows", errBadPointer, p.Offset, p.Length)
	}
	return p, nil
}
