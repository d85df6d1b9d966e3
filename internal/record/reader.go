package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// Reader reads records written by Writer. It is not safe for concurrent use.
type Reader struct {
	r    io.Reader
	name string

	block [BlockSize]byte
	// buf is the part of block holding file data; it is shorter than
	// BlockSize only for the last block of the file.
	buf []byte
	// blockStart is the file offset of buf[0].
	blockStart int64
	// pos is the offset in buf where the next fragment header starts.
	pos int
	// loaded is false until the first block has been read.
	loaded bool

	// rec accumulates a record that spans several fragments.
	rec       []byte
	recOffset int64

	// err is sticky: io.EOF at the end, or the corruption or I/O error
	// that ended reading.
	err      error
	tornOff  int64
	tornTail bool
	// damageOff is where the record holding the damage begins, once Next
	// has returned a corruption error (damage set).
	damageOff int64
	damage    bool
	// intactOff is where the intact record start that made the damage
	// corruption lies (intact set); see IntactAfter.
	intactOff int64
	intact    bool
	// firstPos is where in the first block reading starts (NewReaderFrom).
	firstPos int
}

// NewReader returns a Reader over r. fileName is used in error messages
// only.
func NewReader(r io.Reader, fileName string) *Reader {
	return &Reader{r: r, name: fileName}
}

// NewReaderFrom returns a Reader over the log in r that starts at offset
// off, which must be where a record starts (as IntactAfter reports), as if
// the bytes before it were not there. Offsets it reports are r's.
func NewReaderFrom(r io.ReaderAt, fileName string, off int64) *Reader {
	start := off - off%BlockSize
	return &Reader{r: io.NewSectionReader(r, start, math.MaxInt64-start), name: fileName, blockStart: start, firstPos: int(off - start)}
}

// Next returns the next whole record. The slice is valid only until the
// next call to Next. At the end of the log it returns io.EOF, also when the
// log ends in a torn tail (see TornTail). Damage that is followed by an
// intact fragment beginning a record yields a *base.CorruptionError (see
// Damage). Once Next has returned an error it returns the same error
// forever.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.loaded {
		if err := r.loadBlock(); err != nil {
			return nil, r.fail(err)
		}
		r.loaded = true
		r.pos = min(r.firstPos, len(r.buf))
	}
	inRecord := false
	var start int64
	for {
		if r.pos+HeaderSize > len(r.buf) {
			if len(r.buf) == BlockSize {
				// A tail shorter than a header is padding; the next
				// fragment starts the next block.
				if err := r.loadBlock(); err != nil {
					return nil, r.fail(err)
				}
				continue
			}
			// End of file. Leftover bytes too short for a header are an
			// interrupted write unless they are zero padding.
			switch {
			case inRecord:
				return nil, r.endTorn(start)
			case !allZero(r.buf[r.pos:]):
				return nil, r.endTorn(r.offset())
			}
			return nil, r.fail(io.EOF)
		}

		off := r.offset()
		h := r.buf[r.pos:]
		sum := binary.LittleEndian.Uint32(h[0:4])
		length := int(binary.LittleEndian.Uint16(h[4:6]))
		t := h[6]
		end := r.pos + HeaderSize + length
		switch {
		case t == typeZero && length == 0 && sum == 0:
			return nil, r.damaged(off, inRecord, start, "zeroed fragment header")
		case end > len(r.buf) && len(r.buf) < BlockSize:
			return nil, r.damaged(off, inRecord, start, "fragment length runs past end of file")
		case end > len(r.buf):
			return nil, r.damaged(off, inRecord, start, "fragment length runs past end of block")
		case maskCRC(fragmentCRC(t, h[HeaderSize:HeaderSize+length])) != sum:
			return nil, r.damaged(off, inRecord, start, "fragment checksum mismatch")
		}

		payload := r.buf[r.pos+HeaderSize : end]
		switch t {
		case typeFull:
			if inRecord {
				return nil, r.corrupt(start, off, "FULL fragment inside the record that starts at offset %d", start)
			}
			r.pos = end
			r.recOffset = off
			return payload, nil
		case typeFirst:
			if inRecord {
				return nil, r.corrupt(start, off, "FIRST fragment inside the record that starts at offset %d", start)
			}
			inRecord = true
			start = off
			r.rec = append(r.rec[:0], payload...)
		case typeMiddle, typeLast:
			if !inRecord {
				return nil, r.corrupt(off, off, "%s fragment without a FIRST fragment", typeName(t))
			}
			r.rec = append(r.rec, payload...)
			if t == typeLast {
				r.pos = end
				r.recOffset = start
				return r.rec, nil
			}
		default:
			if !inRecord {
				start = off
			}
			return nil, r.corrupt(start, off, "unknown fragment type %d", t)
		}
		r.pos = end
	}
}

// Offset returns the file offset at which the record last returned by Next
// starts.
func (r *Reader) Offset() int64 { return r.recOffset }

// TornTail reports, once Next has returned io.EOF, whether the log ended in
// damaged or partial data that was treated as an interrupted write, and the
// offset where that data begins (the first byte after the last record
// returned, padding aside). A log that ends cleanly, or in zeroed space
// after a complete record, reports torn == false.
func (r *Reader) TornTail() (offset int64, torn bool) { return r.tornOff, r.tornTail }

// Damage reports, once Next has returned a *base.CorruptionError, the
// offset where the record that holds the damage begins: Next returned every
// record before it, whole, and none from it on. The error's own offset is
// that of the bad fragment, which may lie further in. ok is false unless
// Next ended in corruption.
func (r *Reader) Damage() (offset int64, ok bool) { return r.damageOff, r.damage }

// IntactAfter reports, once Next has returned a *base.CorruptionError
// because an intact record start follows damaged bytes, the offset of that
// record start: reading on from there (NewReaderFrom) finds the records
// that the damage cut off from the log.
func (r *Reader) IntactAfter() (offset int64, ok bool) { return r.intactOff, r.intact }

func (r *Reader) offset() int64 { return r.blockStart + int64(r.pos) }

// loadBlock reads the next block into buf. At the end of the file buf comes
// back shorter than BlockSize, possibly empty.
func (r *Reader) loadBlock() error {
	if r.loaded {
		r.blockStart += int64(len(r.buf))
	}
	n, err := io.ReadFull(r.r, r.block[:])
	r.buf = r.block[:n]
	r.pos = 0
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("wal: reading %s at offset %d: %w", r.name, r.blockStart, err)
	}
	return nil
}

// damaged decides what a bad fragment at off means: corruption when an
// intact fragment that begins a record follows it anywhere in the file,
// otherwise a torn tail (or the clean end, when everything from off on is
// zero and no record is unfinished).
//
// Only a record's beginning proves that the writer went on after the
// damaged bytes. An intact MIDDLE or LAST fragment after them can belong to
// the very record that was being written when the power failed, since the
// kernel writes a record's pages back in any order: the last edit of a
// MANIFEST straddling a block boundary can lose its FIRST fragment's page
// and keep its LAST one.
func (r *Reader) damaged(off int64, inRecord bool, start int64, reason string) error {
	zero := allZero(r.buf[r.pos:])
	from := r.pos + 1
	recStart := off
	if inRecord {
		recStart = start
	}
	for {
		if i := findRecordStart(r.buf, from); i >= 0 {
			r.intactOff, r.intact = r.blockStart+int64(i), true
			return r.corrupt(recStart, off, "%s, but an intact record follows at offset %d", reason, r.blockStart+int64(i))
		}
		if len(r.buf) < BlockSize {
			break
		}
		if err := r.loadBlock(); err != nil {
			return r.fail(err)
		}
		zero = zero && allZero(r.buf)
		from = 0
	}
	switch {
	case inRecord:
		return r.endTorn(start)
	case !zero:
		return r.endTorn(off)
	}
	return r.fail(io.EOF)
}

// findRecordStart returns the offset in buf of the first position at or
// after from where a complete FULL or FIRST fragment with a good checksum
// lies, or -1. It tries every byte offset because the damage may have
// destroyed the length that would lead to the next header.
func findRecordStart(buf []byte, from int) int {
	for i := from; i+HeaderSize <= len(buf); i++ {
		t := buf[i+6]
		if t != typeFull && t != typeFirst {
			continue
		}
		end := i + HeaderSize + int(binary.LittleEndian.Uint16(buf[i+4:i+6]))
		if end > len(buf) {
			continue
		}
		if maskCRC(fragmentCRC(t, buf[i+HeaderSize:end])) == binary.LittleEndian.Uint32(buf[i:i+4]) {
			return i
		}
	}
	return -1
}

// corrupt ends reading in a *base.CorruptionError about the fragment at
// off, which belongs to the record that begins at recStart.
func (r *Reader) corrupt(recStart, off int64, format string, args ...any) error {
	r.damageOff, r.damage = recStart, true
	return r.fail(base.Corruptf(r.name, off, format, args...))
}

func (r *Reader) endTorn(off int64) error {
	r.tornOff, r.tornTail = off, true
	return r.fail(io.EOF)
}

func (r *Reader) fail(err error) error {
	r.err = err
	return err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func typeName(t byte) string {
	switch t {
	case typeFull:
		return "FULL"
	case typeFirst:
		return "FIRST"
	case typeMiddle:
		return "MIDDLE"
	case typeLast:
		return "LAST"
	}
	return fmt.Sprintf("type-%d", t)
}
