package blob

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// ReaderOptions describe the file a Reader reads.
type ReaderOptions struct {
	// FileNum is the file's number: pointers into other files are refused.
	FileNum base.FileNum
	// FileName names the file in errors.
	FileName string
}

// Reader reads values from a blob file by Pointer, and scans its records.
// It is safe for concurrent use when f's ReadAt is.
type Reader struct {
	f    io.ReaderAt
	size int64
	opts ReaderOptions
}

// NewReader verifies the header of the blob file f of size bytes and
// returns a reader for it. The Reader does not own f.
func NewReader(f io.ReaderAt, size int64, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, size: size, opts: opts}
	if size < int64(HeaderLen) {
		return nil, r.corrupt(0, "file of %d bytes is shorter than the %d-byte header", size, HeaderLen)
	}
	var h [HeaderLen]byte
	if err := r.readAt(h[:], 0); err != nil {
		return nil, err
	}
	if err := checkFileHeader(h[:]); err != nil {
		return nil, r.corrupt(0, "%v", err)
	}
	return r, nil
}

// ReadValue reads the value p points to, appending it to dst (which may
// be nil), and verifies it against p's checksum with that one read: the
// bytes go from the file straight into dst, which grows only if it lacks
// room, and only once the pointer is known to lie inside the file. A
// pointer past the end of the file, or a value that fails its checksum,
// is a *base.CorruptionError at the value's offset.
func (r *Reader) ReadValue(p Pointer, dst []byte) ([]byte, error) {
	if err := r.check(p); err != nil {
		return nil, err
	}
	n := len(dst)
	dst = slices.Grow(dst, int(p.Length))[:n+int(p.Length)]
	v := dst[n:]
	if err := r.readAt(v, int64(p.Offset)); err != nil {
		return nil, err
	}
	if got := checksum(v); got != p.Checksum {
		return nil, r.corrupt(int64(p.Offset), "value of %d bytes: checksum %#08x, the pointer says %#08x", p.Length, got, p.Checksum)
	}
	return dst, nil
}

// VerifyValue checks the value p points to against p's checksum without
// holding it whole: it reads the value through buf (any nonzero size) a
// piece at a time. It fails as ReadValue does, and the bytes it read are
// not kept. A caller that serves a value in place (DB.OpenValue) verifies
// it so, once, instead of reading it into a slice of its own.
func (r *Reader) VerifyValue(p Pointer, buf []byte) error {
	if err := r.check(p); err != nil {
		return err
	}
	crc := uint32(0)
	for off, end := p.Offset, p.Offset+p.Length; off < end; {
		piece := buf[:min(uint64(len(buf)), end-off)]
		if err := r.readAt(piece, int64(off)); err != nil {
			return err
		}
		crc = base.UpdateCRC32C(crc, piece)
		off += uint64(len(piece))
	}
	if got := base.MaskCRC(crc); got != p.Checksum {
		return r.corrupt(int64(p.Offset), "value of %d bytes: checksum %#08x, the pointer says %#08x", p.Length, got, p.Checksum)
	}
	return nil
}

// check reports a pointer into another file, or one past its end, which
// is corruption at the value's offset.
func (r *Reader) check(p Pointer) error {
	if p.FileNum != r.opts.FileNum {
		return fmt.Errorf("blob: %s read from %s", p, r.opts.FileName)
	}
	end := p.Offset + p.Length
	if p.Offset < uint64(HeaderLen+RecordHeaderLen) || end < p.Offset || end > uint64(r.size) {
		return r.corrupt(int64(min(p.Offset, uint64(r.size))), "value of %d bytes at offset %d lies outside the file of %d bytes", p.Length, p.Offset, r.size)
	}
	return nil
}

// Size is the file size the Reader was opened with.
func (r *Reader) Size() int64 { return r.size }

func (r *Reader) corrupt(off int64, format string, args ...any) error {
	return base.Corruptf(r.opts.FileName, off, format, args...)
}

// readAt fills buf from off; a short file is corruption, not I/O failure.
func (r *Reader) readAt(buf []byte, off int64) error {
	n, err := r.f.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.corrupt(off, "file truncated: read %d of %d bytes", n, len(buf))
	}
	return fmt.Errorf("blob: reading %s at offset %d: %w", r.opts.FileName, off, err)
}
