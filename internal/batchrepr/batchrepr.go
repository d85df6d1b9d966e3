// Package batchrepr owns the byte encoding of a write batch. The same bytes
// are the payload of a WAL record and the input of memtable apply, so a
// batch is encoded once and never re-serialized on the write path.
//
// Layout: a 12-byte header (starting sequence number, uint64 little-endian;
// record count, uint32 little-endian) followed by Count records, each a kind
// byte, a uvarint key length and the key, and, for every kind except
// base.KindDelete, a uvarint value length and the value. The i-th record
// (from 0) is written at sequence number Seq+i.
//
// Invariant: a repr built with New and Append always decodes; a repr read
// from disk is validated record by record by Reader, which never panics and
// never returns slices outside the repr.
package batchrepr

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// HeaderLen is the size of the fixed header: 8 bytes of sequence number and
// 4 bytes of record count.
const HeaderLen = 12

const countOffset = 8

// New returns a header-only repr with sequence number 0 and no records.
func New() []byte { return make([]byte, HeaderLen) }

// Append encodes one record at the end of repr and increments the count.
// repr must be at least HeaderLen bytes long. value is ignored for
// base.KindDelete.
func Append(repr []byte, kind base.Kind, key, value []byte) []byte {
	repr = append(repr, byte(kind))
	repr = binary.AppendUvarint(repr, uint64(len(key)))
	repr = append(repr, key...)
	if kind != base.KindDelete {
		repr = binary.AppendUvarint(repr, uint64(len(value)))
		repr = append(repr, value...)
	}
	binary.LittleEndian.PutUint32(repr[countOffset:], Count(repr)+1)
	return repr
}

// RecordLen is the number of bytes Append adds for a record of kind with a
// key and value of the given lengths, so a caller can refuse a record
// before copying it.
func RecordLen(kind base.Kind, keyLen, valueLen int) int {
	n := 1 + uvarintLen(uint64(keyLen)) + keyLen
	if kind != base.KindDelete {
		n += uvarintLen(uint64(valueLen)) + valueLen
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// Seq returns the sequence number of the first record. repr must be at
// least HeaderLen bytes long.
func Seq(repr []byte) base.SeqNum { return base.SeqNum(binary.LittleEndian.Uint64(repr)) }

// SetSeq stores the sequence number of the first record; the commit
// pipeline calls it once the batch's place in the log is known.
func SetSeq(repr []byte, seq base.SeqNum) { binary.LittleEndian.PutUint64(repr, uint64(seq)) }

// Count returns the number of records the header announces. repr must be
// at least HeaderLen bytes long.
func Count(repr []byte) uint32 { return binary.LittleEndian.Uint32(repr[countOffset:]) }

// Reader decodes the records of a repr in order. The key and value slices
// it returns alias the repr (capacity-capped, so appending to them cannot
// overwrite the repr); they stay valid as long as the repr is unchanged.
type Reader struct {
	rest  []byte
	size  int
	count uint32
	read  uint32
}

// NewReader checks the header and returns a reader positioned before the
// first record.
func NewReader(repr []byte) (Reader, error) {
	if len(repr) < HeaderLen {
		return Reader{}, fmt.Errorf("batch of %d bytes is shorter than its %d-byte header", len(repr), HeaderLen)
	}
	return Reader{rest: repr[HeaderLen:], size: len(repr), count: Count(repr)}, nil
}

// NewReaderAt returns a reader of repr positioned at offset, before its
// record number read, as a reader from NewReader would be after decoding
// the records before offset: a reader of a batch that grows decodes only
// the records added since it last looked.
func NewReaderAt(repr []byte, offset int, read uint32) (Reader, error) {
	r, err := NewReader(repr)
	if err != nil {
		return Reader{}, err
	}
	if offset < HeaderLen || offset > len(repr) || read > r.count {
		return Reader{}, fmt.Errorf("batch of %d bytes and %d records has no record %d at offset %d", len(repr), r.count, read, offset)
	}
	r.rest, r.read = repr[offset:], read
	return r, nil
}

// Offset returns the position in the repr of the next record, so a caller
// wrapping an error from Next as corruption can name where it lies.
func (r *Reader) Offset() int { return r.size - len(r.rest) }

// Next decodes the next record. At the end it returns ok=false and a nil
// error. It returns an error (a plain one; the caller knows the file and
// wraps it as corruption) on a truncated record, a malformed varint, an
// unknown kind, or when the records present do not match the header count.
func (r *Reader) Next() (kind base.Kind, key, value []byte, ok bool, err error) {
	if len(r.rest) == 0 {
		if r.read != r.count {
			return 0, nil, nil, false, fmt.Errorf("batch header counts %d records but holds %d", r.count, r.read)
		}
		return 0, nil, nil, false, nil
	}
	if r.read == r.count {
		return 0, nil, nil, false, fmt.Errorf("batch holds %d bytes after its %d counted records", len(r.rest), r.count)
	}
	kind = base.Kind(r.rest[0])
	if !kind.Valid() {
		return 0, nil, nil, false, fmt.Errorf("batch record %d has unknown kind %d", r.read, r.rest[0])
	}
	rest := r.rest[1:]
	if key, rest, err = splitLengthPrefixed(rest); err != nil {
		return 0, nil, nil, false, fmt.Errorf("batch record %d key: %w", r.read, err)
	}
	if kind != base.KindDelete {
		if value, rest, err = splitLengthPrefixed(rest); err != nil {
			return 0, nil, nil, false, fmt.Errorf("batch record %d value: %w", r.read, err)
		}
	}
	r.rest = rest
	r.read++
	return kind, key, value, true, nil
}

var (
	errBadVarint = errors.New("malformed length varint")
	errTruncated = errors.New("truncated")
)

// splitLengthPrefixed reads a uvarint length and that many bytes.
func splitLengthPrefixed(b []byte) (field, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		if w == 0 {
			return nil, nil, errTruncated
		}
		return nil, nil, errBadVarint
	}
	b = b[w:]
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: length %d exceeds the %d bytes left", errTruncated, n, len(b))
	}
	return b[:n:n], b[n:], nil
}
