package blob

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// memFile is a File in memory that can be made to fail.
type memFile struct {
	bytes.Buffer
	writes  [][]byte // every slice Write was given
	failW   error    // returned by Write once set
	failS   error    // returned by Sync once set
	syncs   int
	closed  bool
	partial int // with failW: bytes of the failing write that land
}

func (f *memFile) Write(b []byte) (int, error) {
	f.writes = append(f.writes, b)
	if f.failW != nil {
		n := min(f.partial, len(b))
		f.Buffer.Write(b[:n])
		return n, f.failW
	}
	return f.Buffer.Write(b)
}

func (f *memFile) Sync() error {
	f.syncs++
	return f.failS
}

func (f *memFile) Close() error {
	f.closed = true
	return nil
}

const testFileNum = base.FileNum(7)

type entry struct{ key, value []byte }

// randomEntries returns entries with values of every size class: empty,
// small enough to be buffered, around and well past the buffer.
func randomEntries(rng *rand.Rand, n int) []entry {
	sizes := []int{0, 1, 100, 4 << 10, maxBuffered - RecordHeaderLen - 10, maxBuffered, maxBuffered + 1, 300 << 10}
	out := make([]entry, n)
	for i := range out {
		key := fmt.Appendf(nil, "key-%04d-%s", i, strings.Repeat("k", rng.IntN(40)))
		value := make([]byte, sizes[rng.IntN(len(sizes))])
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		out[i] = entry{key, value}
	}
	return out
}

// writeFile writes entries to a blob file and returns its bytes and the
// pointers Add returned.
func writeFile(t testing.TB, entries []entry) ([]byte, []Pointer) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f, testFileNum, "000007.blob")
	var ptrs []Pointer
	for _, e := range entries {
		p, err := w.Add(e.key, e.value)
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
	}
	size := w.Size()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(f.Len()) != size || f.syncs != 1 || !f.closed {
		t.Fatalf("file: %d bytes (Size said %d), %d syncs, closed %v", f.Len(), size, f.syncs, f.closed)
	}
	return f.Bytes(), ptrs
}

func openBytes(t testing.TB, data []byte) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{FileNum: testFileNum, FileName: "000007.blob"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scanAll returns the keys and pointers a scan yields, and how it ended.
func scanAll(r *Reader) (keys [][]byte, ptrs []Pointer, offs []int64, s *Scanner) {
	s = r.NewScanner()
	for s.Next() {
		keys = append(keys, bytes.Clone(s.Key()))
		ptrs = append(ptrs, s.Pointer())
		offs = append(offs, s.Offset())
	}
	return keys, ptrs, offs, s
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			entries := randomEntries(rng, n)
			data, ptrs := writeFile(t, entries)
			r := openBytes(t, data)
			for i, p := range ptrs {
				v, err := r.ReadValue(p, nil)
				if err != nil || !bytes.Equal(v, entries[i].value) {
					t.Fatalf("entry %d (%s): %d bytes, %v", i, p, len(v), err)
				}
				// Pieces of 1 and 7 bytes cross every boundary a value has.
				for _, piece := range []int{1, 7, 1 << 10} {
					if err := r.VerifyValue(p, make([]byte, piece)); err != nil {
						t.Fatalf("VerifyValue of entry %d (%s) in %d-byte pieces: %v", i, p, piece, err)
					}
				}
			}
			keys, got, _, s := scanAll(r)
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
			if off, torn := s.TornTail(); torn {
				t.Fatalf("torn tail at %d in an intact file", off)
			}
			if len(got) != n {
				t.Fatalf("scan found %d records, want %d", len(got), n)
			}
			for i := range got {
				if got[i] != ptrs[i] || !bytes.Equal(keys[i], entries[i].key) {
					t.Fatalf("record %d: %q %v, want %q %v", i, keys[i], got[i], entries[i].key, ptrs[i])
				}
			}
		})
	}
}

// TestLargeValueNotCopied checks that a value past the buffer reaches the
// file as the caller's own slice: a 512 MiB value must not cost another
// 512 MiB.
func TestLargeValueNotCopied(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f, testFileNum, "x")
	value := make([]byte, 2*maxBuffered)
	if _, err := w.Add([]byte("k"), value); err != nil {
		t.Fatal(err)
	}
	for _, b := range f.writes {
		if len(b) == len(value) && &b[0] == &value[0] {
			return
		}
	}
	t.Fatalf("the value was not written from the caller's slice (%d writes)", len(f.writes))
}

func TestWriterErrorsAreSticky(t *testing.T) {
	boom := errors.New("boom")
	t.Run("write", func(t *testing.T) {
		f := &memFile{}
		w := NewWriter(f, testFileNum, "x")
		if _, err := w.Add([]byte("a"), []byte("1")); err != nil {
			t.Fatal(err)
		}
		f.failW, f.partial = boom, 3
		if err := w.Flush(); !errors.Is(err, boom) {
			t.Fatalf("Flush: %v, want boom", err)
		}
		f.failW = nil
		if _, err := w.Add([]byte("b"), []byte("2")); !errors.Is(err, boom) {
			t.Fatalf("Add after a failed write: %v", err)
		}
		if err := w.Sync(); !errors.Is(err, boom) || f.syncs != 0 {
			t.Fatalf("Sync after a failed write: %v (%d syncs)", err, f.syncs)
		}
		if err := w.Close(); !errors.Is(err, boom) || !f.closed {
			t.Fatalf("Close: %v, closed %v", err, f.closed)
		}
	})
	t.Run("large value", func(t *testing.T) {
		f := &memFile{}
		w := NewWriter(f, testFileNum, "x")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.failW = boom
		if _, err := w.Add([]byte("a"), make([]byte, 2*maxBuffered)); !errors.Is(err, boom) {
			t.Fatalf("Add: %v, want boom", err)
		}
	})
	t.Run("sync", func(t *testing.T) {
		f := &memFile{failS: boom}
		w := NewWriter(f, testFileNum, "x")
		if err := w.Sync(); !errors.Is(err, boom) {
			t.Fatalf("Sync: %v", err)
		}
		f.failS = nil
		if err := w.Sync(); !errors.Is(err, boom) || f.syncs != 1 {
			t.Fatalf("second Sync: %v after %d syncs; a failed fsync must be final", err, f.syncs)
		}
	})
	t.Run("closed", func(t *testing.T) {
		w := NewWriter(&memFile{}, testFileNum, "x")
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(nil, nil); err == nil {
			t.Fatal("Add after Close succeeded")
		}
		if err := w.Close(); err == nil {
			t.Fatal("second Close succeeded")
		}
	})
}

func TestPointerEncoding(t *testing.T) {
	for _, p := range []Pointer{
		{FileNum: 1, Offset: HeaderLen + RecordHeaderLen, Length: 0, Checksum: 0},
		{FileNum: 123456, Offset: 1 << 40, Length: 512 << 20, Checksum: 0xdeadbeef},
		{FileNum: math.MaxUint64, Offset: math.MaxInt64, Length: 0, Checksum: math.MaxUint32},
	} {
		enc := p.Append(nil)
		if len(enc) > MaxPointerLen {
			t.Errorf("%v: %d bytes, over MaxPointerLen", p, len(enc))
		}
		got, err := DecodePointer(enc)
		if err != nil || got != p {
			t.Errorf("%v: decoded %v, %v", p, got, err)
		}
	}
	valid := Pointer{FileNum: 9, Offset: 100, Length: 5, Checksum: 1}.Append(nil)
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "malformed varint"},
		{"truncated checksum", valid[:len(valid)-1], "bytes after the varints"},
		{"trailing byte", append(bytes.Clone(valid), 0), "bytes after the varints"},
		{"varint overflow", bytes.Repeat([]byte{0xff}, 11), "malformed varint"},
		{"file 0", Pointer{Offset: 100}.Append(nil), "file number 0"},
		{"offset in header", Pointer{FileNum: 1, Offset: HeaderLen}.Append(nil), "inside the headers"},
		{"overflow", Pointer{FileNum: 1, Offset: math.MaxInt64, Length: 1}.Append(nil), "overflows"},
		{"offset past int64", Pointer{FileNum: 1, Offset: math.MaxInt64 + 1}.Append(nil), "overflows"},
	} {
		if _, err := DecodePointer(tt.b); !errors.Is(err, errBadPointer) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// corruptAt checks that err is a *base.CorruptionError naming the test
// file at offset off.
func corruptAt(t *testing.T, what string, err error, off int64) {
	t.Helper()
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != "000007.blob" || ce.Offset != off {
		t.Fatalf("%s: %v, want corruption in 000007.blob at offset %d", what, err, off)
	}
}

func TestReadValueErrors(t *testing.T) {
	data, ptrs := writeFile(t, []entry{{[]byte("a"), []byte("value-a")}, {[]byte("b"), []byte("value-b")}})
	r := openBytes(t, data)
	p := ptrs[0]

	bad := p
	bad.Checksum++
	_, err := r.ReadValue(bad, nil)
	corruptAt(t, "wrong checksum", err, int64(p.Offset))
	corruptAt(t, "wrong checksum, verified", r.VerifyValue(bad, make([]byte, 3)), int64(p.Offset))

	damaged := bytes.Clone(data)
	damaged[p.Offset+2] ^= 1
	_, err = openBytes(t, damaged).ReadValue(p, nil)
	corruptAt(t, "damaged value", err, int64(p.Offset))
	corruptAt(t, "damaged value, verified", openBytes(t, damaged).VerifyValue(p, make([]byte, 3)), int64(p.Offset))

	past := ptrs[1]
	past.Length++
	_, err = r.ReadValue(past, nil)
	corruptAt(t, "past the end", err, int64(past.Offset))
	corruptAt(t, "past the end, verified", r.VerifyValue(past, make([]byte, 3)), int64(past.Offset))

	huge := p
	huge.Length = math.MaxUint64 - 3
	_, err = r.ReadValue(huge, nil)
	corruptAt(t, "overflowing length", err, int64(p.Offset))

	other := p
	other.FileNum++
	if _, err := r.ReadValue(other, nil); err == nil || errors.Is(err, base.ErrCorruption) {
		t.Fatalf("pointer into another file: %v, want a plain error", err)
	}

	// A short read is corruption too: the file shrank under the reader.
	short, err := NewReader(bytes.NewReader(data[:len(data)-2]), int64(len(data)), ReaderOptions{FileNum: testFileNum, FileName: "000007.blob"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = short.ReadValue(ptrs[1], nil)
	corruptAt(t, "truncated file", err, int64(ptrs[1].Offset))

	buf := append(make([]byte, 0, 64), "x:"...)
	if v, err := r.ReadValue(ptrs[1], buf); err != nil || string(v) != "x:value-b" || &v[0] != &buf[:1][0] {
		t.Fatalf("ReadValue appending to dst: %q, %v (reused dst: %v)", v, err, err == nil && &v[0] == &buf[:1][0])
	}
}

func TestFileHeaderErrors(t *testing.T) {
	good := appendFileHeader(nil)
	withVersion := func(v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[len(magic):], v)
		binary.LittleEndian.PutUint32(b[HeaderLen-4:], base.MaskCRC(base.CRC32C(b[:HeaderLen-4])))
		return b
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"short", good[:HeaderLen-1], "shorter than"},
		{"magic", flip(0), "bad magic"},
		{"version byte", flip(len(magic)), "checksum mismatch"},
		{"checksum", flip(HeaderLen - 1), "checksum mismatch"},
		{"future version", withVersion(2), "format version 2"},
	} {
		_, err := NewReader(bytes.NewReader(tt.b), int64(len(tt.b)), ReaderOptions{FileNum: testFileNum, FileName: "000007.blob"})
		corruptAt(t, tt.name, err, 0)
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestScanTruncated cuts a file at every offset: the scan returns exactly
// the records wholly before the cut and reports a torn tail where the cut
// record begins (none when the cut falls between records).
func TestScanTruncated(t *testing.T) {
	entries := []entry{{[]byte("a"), []byte("1")}, {[]byte("bb"), nil}, {[]byte("ccc"), bytes.Repeat([]byte("v"), 40)}}
	data, ptrs := writeFile(t, entries)
	_, _, offs, _ := scanAll(openBytes(t, data))
	ends := append(offs[1:], int64(len(data)))
	for cut := HeaderLen; cut <= len(data); cut++ {
		keys, got, _, s := scanAll(openBytes(t, data[:cut]))
		if s.Err() != nil {
			t.Fatalf("cut %d: %v", cut, s.Err())
		}
		whole := 0
		for whole < len(ends) && ends[whole] <= int64(cut) {
			whole++
		}
		if len(got) != whole {
			t.Fatalf("cut %d: %d records, want %d", cut, len(got), whole)
		}
		for i := range got {
			if got[i] != ptrs[i] || !bytes.Equal(keys[i], entries[i].key) {
				t.Fatalf("cut %d: record %d is %q %v", cut, i, keys[i], got[i])
			}
		}
		off, torn := s.TornTail()
		if wantTorn := whole < len(offs) && int64(cut) > offs[whole]; torn != wantTorn || (torn && off != offs[whole]) {
			t.Fatalf("cut %d: torn tail %v at %d, want %v at %d", cut, torn, off, wantTorn, offs[min(whole, len(offs)-1)])
		}
	}
}

// TestScanDamage flips every byte after the file header. The scan never
// returns a record that differs from what was written; it returns every
// record before the damaged one, then stops with corruption naming that
// record's offset, or with a torn tail there when the damage is in the
// key or value of the last record (a header that fails its checksum
// cannot say where its record ends, so data after it is damage).
func TestScanDamage(t *testing.T) {
	entries := []entry{{[]byte("a"), []byte("1")}, {[]byte("bb"), nil}, {[]byte("ccc"), bytes.Repeat([]byte("v"), 40)}}
	data, ptrs := writeFile(t, entries)
	_, _, offs, _ := scanAll(openBytes(t, data))
	for pos := HeaderLen; pos < len(data); pos++ {
		damaged := bytes.Clone(data)
		damaged[pos] ^= 0x40
		keys, got, _, s := scanAll(openBytes(t, damaged))
		rec := 0
		for rec+1 < len(offs) && offs[rec+1] <= int64(pos) {
			rec++
		}
		if len(got) != rec {
			t.Fatalf("byte %d (record %d): scan returned %d records", pos, rec, len(got))
		}
		for i := range got {
			if got[i] != ptrs[i] || !bytes.Equal(keys[i], entries[i].key) {
				t.Fatalf("byte %d: record %d is %q %v", pos, i, keys[i], got[i])
			}
		}
		off, torn := s.TornTail()
		if rec == len(offs)-1 && int64(pos) >= offs[rec]+RecordHeaderLen {
			if !torn || off != offs[rec] || s.Err() != nil {
				t.Fatalf("byte %d in the last record: torn %v at %d, err %v; want a torn tail at %d", pos, torn, off, s.Err(), offs[rec])
			}
			continue
		}
		corruptAt(t, fmt.Sprintf("byte %d", pos), s.Err(), offs[rec])
	}
}

func TestScanZeroTail(t *testing.T) {
	data, ptrs := writeFile(t, []entry{{[]byte("a"), []byte("1")}})
	end := int64(len(data))
	data = append(data, make([]byte, 3*scanChunk)...)
	_, got, _, s := scanAll(openBytes(t, data))
	if off, torn := s.TornTail(); len(got) != 1 || got[0] != ptrs[0] || s.Err() != nil || !torn || off != end {
		t.Fatalf("%d records, err %v, torn %v at %d; want 1 record and a torn tail at %d", len(got), s.Err(), torn, off, end)
	}
	data[len(data)-1] = 1
	_, _, _, s = scanAll(openBytes(t, data))
	corruptAt(t, "nonzero after the zeros", s.Err(), end)
}
