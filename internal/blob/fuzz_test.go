package blob

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// seedFiles returns small valid blob files for fuzz corpora.
func seedFiles(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var out [][]byte
	for _, n := range []int{0, 1, 3} {
		entries := randomEntries(rng, n)
		for i := range entries {
			entries[i].value = entries[i].value[:min(len(entries[i].value), 50)]
		}
		data, _ := writeFile(t, entries)
		out = append(out, data)
	}
	return out
}

// FuzzScan opens arbitrary bytes as a blob file and scans it. Nothing may
// panic; every error must be corruption (the bytes are in memory, so no
// I/O fails); every record the scan returns must read back through its
// pointer, since the scan verified its value; and a scan that ends without
// error either reached the end of the file or reports a torn tail inside
// it.
func FuzzScan(f *testing.F) {
	for _, s := range seedFiles(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{FileNum: testFileNum, FileName: "f"})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("NewReader: non-corruption error %v", err)
			}
			return
		}
		s := r.NewScanner()
		prevEnd := int64(HeaderLen)
		for s.Next() {
			p := s.Pointer()
			if s.Offset() != prevEnd || p.Offset != uint64(s.Offset())+RecordHeaderLen+uint64(len(s.Key())) {
				t.Fatalf("record at %d (previous ended at %d) has pointer %v", s.Offset(), prevEnd, p)
			}
			if _, err := DecodePointer(p.Append(nil)); err != nil {
				t.Fatalf("pointer %v from a scan does not decode: %v", p, err)
			}
			if _, err := r.ReadValue(p, nil); err != nil {
				t.Fatalf("scanned record at %d does not read back: %v", s.Offset(), err)
			}
			prevEnd = int64(p.Offset + p.Length)
		}
		if err := s.Err(); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("scan: non-corruption error %v", err)
			}
			return
		}
		off, torn := s.TornTail()
		switch {
		case torn && off != prevEnd:
			t.Fatalf("torn tail at %d, but the last record ended at %d", off, prevEnd)
		case !torn && prevEnd != int64(len(data)):
			t.Fatalf("scan ended at %d of %d bytes without error or torn tail", prevEnd, len(data))
		}
	})
}

// FuzzDecodePointer decodes arbitrary bytes as a pointer. Nothing may
// panic; a pointer that decodes encodes to something that decodes to it
// again, and reading it from a real file either returns a value that
// matches its checksum or fails with corruption (or, for another file's
// number, a plain error).
func FuzzDecodePointer(f *testing.F) {
	files := seedFiles(f)
	data := files[len(files)-1]
	r := openBytes(f, data)
	s := r.NewScanner()
	for s.Next() {
		f.Add(s.Pointer().Append(nil))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePointer(b)
		if err != nil {
			if !errors.Is(err, errBadPointer) {
				t.Fatalf("DecodePointer: unexpected error %v", err)
			}
			return
		}
		if q, err := DecodePointer(p.Append(nil)); err != nil || q != p {
			t.Fatalf("%v re-encodes to %v, %v", p, q, err)
		}
		v, err := r.ReadValue(p, nil)
		switch {
		case err == nil && (uint64(len(v)) != p.Length || checksum(v) != p.Checksum):
			t.Fatalf("ReadValue(%v) returned %d bytes that do not match", p, len(v))
		case err != nil && p.FileNum == testFileNum && !errors.Is(err, base.ErrCorruption):
			t.Fatalf("ReadValue(%v): non-corruption error %v", p, err)
		case err == nil && p.FileNum != testFileNum:
			t.Fatalf("ReadValue(%v) read a pointer into another file", p)
		}
	})
}
