package blob

import "github.com/lsmgo-dev/lsmgo/internal/base"

// scanChunk is how much a Scanner reads at a time; a value longer than it
// is checksummed chunk by chunk, so scanning needs bounded memory whatever
// the values' sizes.
const scanChunk = 64 << 10

// Scanner walks the records of a blob file in order, verifying each
// record's header, key and value checksums, for garbage collection and
// checking. It stops at the first record that does not verify:
//   - a torn tail (TornTail): the file ends inside a record, or from a
//     record on holds only zeros, or its last record fails a key or value
//     checksum. That is what an append interrupted by a crash leaves. The
//     engine never appends to a blob file after a crash, so a torn tail
//     is only ever at the end, and it holds nothing a durable pointer
//     refers to.
//   - damage (Err, a *base.CorruptionError at the record's offset): a
//     record that fails a checksum with data after it.
//
// Whether either matters depends on whether anything points into the
// bytes concerned; the scanner cannot know, and its callers decide.
type Scanner struct {
	r *Reader
	// off is where the next record begins.
	off int64
	// buf holds file bytes [bufOff, bufOff+len(buf)).
	buf    []byte
	bufOff int64

	key     []byte
	ptr     Pointer
	recOff  int64
	err     error
	tornOff int64
	torn    bool
	done    bool
}

// NewScanner returns a scanner positioned before the first record.
func (r *Reader) NewScanner() *Scanner {
	return &Scanner{r: r, off: int64(HeaderLen), buf: make([]byte, 0, scanChunk)}
}

// Next moves to the next record and reports whether there is one.
func (s *Scanner) Next() bool {
	if s.done {
		return false
	}
	ok, err := s.next()
	if err != nil {
		s.err = err
	}
	if !ok {
		s.done = true
	}
	return ok
}

func (s *Scanner) next() (bool, error) {
	size := s.r.size
	off := s.off
	if off == size {
		return false, nil
	}
	if size-off < RecordHeaderLen {
		return false, s.endTorn(off)
	}
	hb, err := s.read(off, RecordHeaderLen)
	if err != nil {
		return false, err
	}
	h, ok := decodeRecordHeader(hb)
	if !ok {
		zeros, err := s.zeroFrom(off)
		if err != nil {
			return false, err
		}
		if zeros {
			return false, s.endTorn(off)
		}
		return false, s.r.corrupt(off, "record header checksum mismatch")
	}
	keyOff := off + RecordHeaderLen
	valueOff := keyOff + int64(h.keyLen)
	// The lengths passed the header's checksum, so a record that runs
	// past the end of the file is one whose append was cut short. They
	// are compared without overflow: valueLen may not fit an int64.
	if valueOff > size || uint64(size-valueOff) < h.valueLen {
		return false, s.endTorn(off)
	}
	end := valueOff + int64(h.valueLen)
	key, err := s.read(keyOff, int(h.keyLen))
	if err != nil {
		return false, err
	}
	if checksum(key) != h.keyCRC {
		return false, s.damaged(off, end, "record key checksum mismatch")
	}
	s.key = append(s.key[:0], key...)
	crc, err := s.valueChecksum(valueOff, h.valueLen)
	if err != nil {
		return false, err
	}
	if crc != h.valueCRC {
		return false, s.damaged(off, end, "record value checksum mismatch")
	}
	s.recOff = off
	s.ptr = Pointer{FileNum: s.r.opts.FileNum, Offset: uint64(valueOff), Length: h.valueLen, Checksum: h.valueCRC}
	s.off = end
	return true, nil
}

// damaged reports a record at off, ending at end, that failed a checksum:
// the last record of the file is a torn tail, any other is damage.
func (s *Scanner) damaged(off, end int64, reason string) error {
	if end == s.r.size {
		return s.endTorn(off)
	}
	return s.r.corrupt(off, "%s", reason)
}

func (s *Scanner) endTorn(off int64) error {
	s.tornOff, s.torn = off, true
	return nil
}

// valueChecksum checksums n bytes at off, a chunk at a time.
func (s *Scanner) valueChecksum(off int64, n uint64) (uint32, error) {
	var crc uint32
	for n > 0 {
		k := int(min(n, scanChunk))
		b, err := s.read(off, k)
		if err != nil {
			return 0, err
		}
		crc = base.UpdateCRC32C(crc, b)
		off += int64(k)
		n -= uint64(k)
	}
	return base.MaskCRC(crc), nil
}

// zeroFrom reports whether the file holds only zero bytes from off on.
func (s *Scanner) zeroFrom(off int64) (bool, error) {
	for off < s.r.size {
		k := int(min(s.r.size-off, scanChunk))
		b, err := s.read(off, k)
		if err != nil {
			return false, err
		}
		for _, c := range b {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(k)
	}
	return true, nil
}

// read returns n bytes at off, valid until the next read. n may exceed
// scanChunk (a long key); the buffer grows to fit it. The caller has
// checked that [off, off+n) lies inside the file.
func (s *Scanner) read(off int64, n int) ([]byte, error) {
	if off >= s.bufOff && off+int64(n) <= s.bufOff+int64(len(s.buf)) {
		i := off - s.bufOff
		return s.buf[i : i+int64(n)], nil
	}
	want := max(n, min(scanChunk, int(s.r.size-off)))
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	s.bufOff = off
	if err := s.r.readAt(s.buf, off); err != nil {
		s.buf = s.buf[:0]
		return nil, err
	}
	return s.buf[:n], nil
}

// Key is the current record's user key, valid until the next call to Next.
func (s *Scanner) Key() []byte { return s.key }

// Pointer points to the current record's value.
func (s *Scanner) Pointer() Pointer { return s.ptr }

// Offset is where the current record begins.
func (s *Scanner) Offset() int64 { return s.recOff }

// Err is the damage or I/O error that ended the scan, or nil.
func (s *Scanner) Err() error { return s.err }

// TornTail reports, once Next has returned false with a nil Err, whether
// the file ended in a torn tail, and where it begins: every record before
// that offset was returned whole.
func (s *Scanner) TornTail() (offset int64, ok bool) { return s.tornOff, s.torn }
