package record

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"slices"
)

// Writer appends records to a log. It buffers everything in memory until
// Flush, so that a group-commit leader can queue many records and hand them
// to the file in one Write call followed by one Sync. A Writer is not safe
// for concurrent use.
//
// The Writer assumes it starts writing at offset 0 of an empty file: block
// boundaries are computed from the bytes it has produced itself.
type Writer struct {
	w   io.Writer
	buf []byte
	// flushed counts bytes already handed to w; flushed+len(buf) is the
	// logical file size, and its remainder modulo BlockSize is where the
	// next fragment starts inside its block.
	flushed int64
	// err is sticky: after a failed Write an unknown prefix of the buffer
	// may be on disk, so any later bytes would land at the wrong offset.
	err error
	// slack counts the flushes in a row that used less than a quarter of
	// a buffer grown past maxRetainedBuffer (Flush).
	slack int
}

// NewWriter returns a Writer that appends to w. Nothing reaches w until
// Flush.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// maxRetainedBuffer is the buffer capacity always kept across flushes. A
// larger buffer is kept while the groups written keep needing it, and
// dropped after shrinkAfter flushes in a row that used less than a
// quarter of it, so that one huge record does not pin its memory for the
// life of the log. Dropping it after every such flush, as before, made
// each commit group of the image host's uploads (50 clients' 100 KB
// images, several MiB) regrow it by doubling and copy every image two or
// three times: 15% of an upload's CPU in the profile of issue 22.
const (
	maxRetainedBuffer = 1 << 20
	shrinkAfter       = 16
)

// recordOverhead bounds the bytes WriteRecord adds to a payload of n
// bytes: a header per fragment and at most a header's worth of zeroed
// block tail before each.
func recordOverhead(n int) int {
	return (n/(BlockSize-HeaderSize) + 2) * 2 * HeaderSize
}

// WriteRecord appends one record to the buffer. p may have any length,
// including zero; it is copied, so the caller may reuse it at once.
func (w *Writer) WriteRecord(p []byte) error {
	if w.err != nil {
		return w.err
	}
	// One growth for the whole record, not one per doubling.
	w.buf = slices.Grow(w.buf, len(p)+recordOverhead(len(p)))
	first := true
	for {
		blockOff := int((w.flushed + int64(len(w.buf))) % BlockSize)
		if left := BlockSize - blockOff; left < HeaderSize {
			// A header never straddles a block boundary; the reader skips
			// tails this short, so zero them and start the next block.
			w.buf = append(w.buf, make([]byte, left)...)
			blockOff = 0
		}
		avail := BlockSize - blockOff - HeaderSize
		n := min(len(p), avail)
		last := n == len(p)
		var t byte
		switch {
		case first && last:
			t = typeFull
		case first:
			t = typeFirst
		case last:
			t = typeLast
		default:
			t = typeMiddle
		}
		w.appendFragment(t, p[:n])
		p = p[n:]
		first = false
		if last {
			return nil
		}
	}
}

func (w *Writer) appendFragment(t byte, payload []byte) {
	var hdr [HeaderSize]byte
	binary.LittleEndian.PutUint32(hdr[0:4], maskCRC(fragmentCRC(t, payload)))
	binary.LittleEndian.PutUint16(hdr[4:6], uint16(len(payload)))
	hdr[6] = t
	w.buf = append(w.buf, hdr[:]...)
	w.buf = append(w.buf, payload...)
}

// Flush hands every buffered byte to the underlying writer in exactly one
// Write call. It does not sync; the caller syncs the file afterwards. After
// a failed Flush the Writer is unusable and keeps returning the error.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = err
		return err
	}
	w.flushed += int64(n)
	w.buf = w.buf[:0]
	if cap(w.buf) > maxRetainedBuffer {
		if w.slack++; n >= cap(w.buf)/4 {
			w.slack = 0
		}
		if w.slack >= shrinkAfter {
			w.buf, w.slack = nil, 0
		}
	}
	return nil
}

// Size returns the logical number of bytes written so far, buffered bytes
// included: the size the file will have after the next successful Flush.
func (w *Writer) Size() int64 { return w.flushed + int64(len(w.buf)) }

// Buffered returns the number of bytes not yet flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// typeCRC holds the CRC-32C of each possible type byte, so that checksumming
// a fragment needs no one-byte slice (which would escape to the heap on
// every fragment written or probed).
var typeCRC = func() (c [256]uint32) {
	for i := range c {
		c[i] = crc32.Checksum([]byte{byte(i)}, castagnoli)
	}
	return c
}()

// fragmentCRC is the unmasked CRC-32C of the type byte followed by the
// payload; covering the type means a flipped type byte is caught too.
func fragmentCRC(t byte, payload []byte) uint32 {
	return crc32.Update(typeCRC[t], castagnoli, payload)
}

// maskCRC disguises a stored CRC so that a checksum computed over data that
// itself contains checksums (for example a log stored inside a record) does
// not degenerate.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + crcMaskDelta }

const crcMaskDelta = 0xa282ead8
