package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// ValueReader reads one value where it is stored instead of copying it
// into a slice: a value in a blob file (a separated value, doc/blob.md)
// is read from that file, and SendTo lets the kernel copy it straight to
// a socket (sendfile(2)). A value kept in the tree is copied once, by
// OpenValue, and read from that copy.
//
// The reader holds its blob file until Close: garbage collection may copy
// the value elsewhere and drop every pointer to the file, but the file
// stays on disk, with the value at its place, until the last reader of it
// closes. Close every ValueReader; Close of the DB does not wait for them
// (their reads fail with the file closed).
//
// Checksums: no byte leaves a ValueReader from a value that has not
// passed its CRC-32C in this process. The first ReadAt or SendTo of a
// separated value reads it whole and checks it; the DB remembers the
// values checked (up to maxVerifiedValues), so the next readers of a
// value go straight to the file. Bytes that go bad on disk after that
// check are not caught by ReadAt or SendTo: Get and Check (lsmgo check,
// the scrub) verify every read and find them.
//
// ReadAt and SendTo may be called concurrently; Close once, after them.
type ValueReader struct {
	db    *DB
	value []byte // the value, when it is kept in the tree
	// p locates a separated value; br and r are its file, held, and a
	// reader that has seen the value's bytes.
	p       blob.Pointer
	br      *blobReader
	r       *blob.Reader
	checked atomic.Bool
	closed  bool
}

// OpenValue returns a ValueReader over the value of key, or ErrNotFound.
func (db *DB) OpenValue(key []byte) (*ValueReader, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.openValue(key, readSeqLatest)
}

// OpenValue returns a ValueReader over the value key had when the
// snapshot was taken, or ErrNotFound. Expiry is judged by the clock now.
// The reader stays valid after the snapshot is closed.
func (s *Snapshot) OpenValue(key []byte) (*ValueReader, error) {
	if s.closed || s.db.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.openValue(key, s.seq)
}

// openValue finds key at readSeq and holds the blob file its value is in
// while the read state still pins that file (its memtable or table
// points into it), so the file cannot have been removed in between.
func (db *DB) openValue(key []byte, readSeq base.SeqNum) (*ValueReader, error) {
	rs, readSeq, err := db.loadReadStateAt(readSeq)
	if err != nil {
		return nil, err
	}
	defer rs.unref()
	value, kind, found, blk, err := rs.get(db, key, readSeq)
	if err != nil {
		db.noteCorruption(err)
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	if blk != nil {
		defer blk.Release()
	}
	if !kind.IsBlob() {
		v, _, err := db.resolveValue(nil, kind, value)
		if err != nil {
			return nil, err
		}
		return &ValueReader{db: db, value: v}, nil
	}
	if value, _, err = db.liveValue(kind, value); err != nil {
		return nil, err
	}
	p, err := blob.DecodePointer(value)
	if err != nil {
		return nil, base.Corruptf("", -1, "blob pointer: %v", err)
	}
	br, r, err := db.blobs.hold(p)
	if err != nil {
		db.noteCorruption(err)
		return nil, err
	}
	return &ValueReader{db: db, p: p, br: br, r: r}, nil
}

// Size returns the value's length in bytes.
func (v *ValueReader) Size() int64 {
	if v.br == nil {
		return int64(len(v.value))
	}
	return int64(v.p.Length)
}

// ReadAt reads len(buf) bytes of the value from off, as io.ReaderAt does:
// fewer only at the value's end, with io.EOF.
func (v *ValueReader) ReadAt(buf []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("lsmgo: ValueReader.ReadAt: negative offset")
	}
	size := v.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := buf[:min(int64(len(buf)), size-off)]
	if v.br == nil {
		copy(want, v.value[off:])
	} else {
		if err := v.verify(); err != nil {
			return 0, err
		}
		if n, err := v.br.file.ReadAt(want, int64(v.p.Offset)+off); n < len(want) {
			return n, v.shortRead(err)
		}
	}
	if len(want) < len(buf) {
		return len(want), io.EOF
	}
	return len(want), nil
}

// SendTo writes n bytes of the value from off to w. A separated value is
// copied from its blob file by io.Copy from a file descriptor of its own,
// so when w (or what it wraps, through io.ReaderFrom) is a TCP connection,
// such as an http.ResponseWriter, the kernel sends the bytes with
// sendfile(2) and they never enter Go's memory.
func (v *ValueReader) SendTo(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 || n > v.Size()-off {
		return 0, fmt.Errorf("lsmgo: ValueReader.SendTo: %d bytes from %d is outside the value of %d bytes", n, off, v.Size())
	}
	if v.br == nil {
		m, err := w.Write(v.value[off : off+n])
		return int64(m), err
	}
	if err := v.verify(); err != nil {
		return 0, err
	}
	f, err := v.br.spare.take(v.db.blobs.fs, v.db.blobs.path(v.p.FileNum))
	if err != nil {
		return 0, fmt.Errorf("lsmgo: open blob file: %w", err)
	}
	defer v.br.spare.put(f)
	var src io.Reader
	if s, ok := f.(io.ReadSeeker); ok {
		// The descriptor's position is where sendfile(2) starts.
		if _, err := s.Seek(int64(v.p.Offset)+off, io.SeekStart); err != nil {
			return 0, fmt.Errorf("lsmgo: seek in blob file: %w", err)
		}
		src = io.LimitReader(s, n)
	} else {
		src = io.NewSectionReader(f, int64(v.p.Offset)+off, n)
	}
	sent, err := io.Copy(w, src)
	if err == nil && sent < n {
		err = v.shortRead(nil)
	}
	return sent, err
}

// ValueLocation is where a separated value's bytes lie: Length bytes
// from Offset in File.
type ValueLocation struct {
	// File is the blob file, as Options.FS opened it (an *os.File on the
	// OS filesystem), or nil for a value kept in the tree.
	File           vfs.File
	Offset, Length int64
}

// Location returns where a separated value lies in its blob file, once
// its checksum passed as for ReadAt, so that a caller can hand the bytes
// to the kernel itself: sendfile(2) with an offset costs one system call
// a piece where SendTo's position-based sendfile costs a seek too, and
// the pieces of one answer need no descriptor of their own. File is the
// engine's shared descriptor, valid until Close: read it only at explicit
// offsets (ReadAt, pread(2), sendfile(2) with an offset pointer), never
// through its position, and do not close it. A value kept in the tree
// has no location: File is nil and Length its size.
func (v *ValueReader) Location() (ValueLocation, error) {
	if v.br == nil {
		return ValueLocation{Length: v.Size()}, nil
	}
	if err := v.verify(); err != nil {
		return ValueLocation{}, err
	}
	return ValueLocation{File: v.br.file, Offset: int64(v.p.Offset), Length: v.Size()}, nil
}

// Close releases the value's blob file.
func (v *ValueReader) Close() error {
	if v.closed {
		return ErrClosed
	}
	v.closed = true
	if v.br != nil {
		v.db.blobs.release(v.p.FileNum)
	}
	return nil
}

// verify checks the value against its checksum unless this reader or an
// earlier one did (blobFiles.verify).
func (v *ValueReader) verify() error {
	if v.checked.Load() {
		return nil
	}
	if err := v.db.blobs.verify(v.r, v.p); err != nil {
		v.db.noteCorruption(err)
		return err
	}
	v.checked.Store(true)
	return nil
}

// shortRead is the error of a read that got fewer bytes than a verified
// value has: the file shrank, which is corruption, unless the read failed.
func (v *ValueReader) shortRead(err error) error {
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("lsmgo: reading %s: %w", v.p, err)
	}
	err = base.Corruptf(v.db.blobs.path(v.p.FileNum), int64(v.p.Offset), "value of %d bytes: file truncated under a reader", v.p.Length)
	v.db.noteCorruption(err)
	return err
}
