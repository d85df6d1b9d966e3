package blob

import (
	"errors"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// File is what a Writer writes to; vfs.File satisfies it.
type File interface {
	io.Writer
	io.Closer
	Sync() error
}

// maxBuffered is how many bytes of small records a Writer gathers before
// writing. A value larger than what is left of it is written straight from
// the caller's slice, so a large value is never copied.
const maxBuffered = 64 << 10

// errClosed is returned by a Writer used after Close.
var errClosed = errors.New("blob: writer closed")

// Writer appends records to a new blob file. Records and the file header
// are gathered in a buffer and reach the file at Flush (or sooner, when
// the buffer fills or a large value passes it); Sync makes them durable. A
// Writer is not safe for concurrent use.
type Writer struct {
	f       File
	fileNum base.FileNum
	name    string
	buf     []byte
	// written counts the bytes handed to the file; Size adds the buffer.
	written int64
	err     error
	closed  bool
}

// NewWriter starts blob file number fileNum in f, which must be empty.
// name names the file in errors.
func NewWriter(f File, fileNum base.FileNum, name string) *Writer {
	return &Writer{f: f, fileNum: fileNum, name: name, buf: appendFileHeader(make([]byte, 0, maxBuffered))}
}

// Add appends a record of key and value and returns the pointer to the
// value. The pointer is good for reading once Flush (or Sync) has
// returned. After a failed write every call fails with that error.
func (w *Writer) Add(key, value []byte) (Pointer, error) {
	if err := w.usable(); err != nil {
		return Pointer{}, err
	}
	if uint64(len(key)) > MaxKeyLen {
		return Pointer{}, fmt.Errorf("blob: key of %d bytes exceeds %d", len(key), uint64(MaxKeyLen))
	}
	h := recordHeader{keyCRC: checksum(key), valueCRC: checksum(value), keyLen: uint32(len(key)), valueLen: uint64(len(value))}
	var hb [RecordHeaderLen]byte
	h.encode(&hb)
	p := Pointer{
		FileNum:  w.fileNum,
		Offset:   uint64(w.Size()) + RecordHeaderLen + uint64(len(key)),
		Length:   uint64(len(value)),
		Checksum: h.valueCRC,
	}
	w.buf = append(w.buf, hb[:]...)
	w.buf = append(w.buf, key...)
	if len(w.buf)+len(value) <= maxBuffered {
		w.buf = append(w.buf, value...)
		return p, nil
	}
	if err := w.flushBuffer(); err != nil {
		return Pointer{}, err
	}
	if err := w.write(value); err != nil {
		return Pointer{}, err
	}
	return p, nil
}

// Flush writes everything added so far to the file (write(2), no fsync).
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.flushBuffer()
}

// Sync flushes and then makes the file's contents durable.
func (w *Writer) Sync() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages, so no later fsync can vouch for them.
		w.err = fmt.Errorf("blob: sync %s: %w", w.name, err)
		return w.err
	}
	return nil
}

// Size is the file's size once everything added is flushed: the offset at
// which the next record begins.
func (w *Writer) Size() int64 { return w.written + int64(len(w.buf)) }

// Close flushes and closes the file; it does not sync (call Sync first
// when the contents must be durable).
func (w *Writer) Close() error {
	if w.closed {
		return errClosed
	}
	err := w.err
	if err == nil {
		err = w.flushBuffer()
	}
	w.closed = true
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("blob: close %s: %w", w.name, cerr)
	}
	return err
}

func (w *Writer) usable() error {
	if w.closed {
		return errClosed
	}
	return w.err
}

func (w *Writer) flushBuffer() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// write hands b to the file. A failure is sticky: how much of b reached
// the file is unknown, so no later record could be placed after it.
func (w *Writer) write(b []byte) error {
	n, err := w.f.Write(b)
	w.written += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("blob: write %s: %w", w.name, err)
	}
	return w.err
}
