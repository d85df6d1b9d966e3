package record

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// loggedRecord is what the test model remembers about one written record.
type loggedRecord struct {
	data       []byte
	start, end int64 // offset of its first fragment header; offset after its last byte
}

// writeLog writes recs through a Writer, flushing after each record with
// probability flushProb, and returns the file bytes and each record's span.
func writeLog(t testing.TB, rng *rand.Rand, recs [][]byte, flushProb float64) ([]byte, []loggedRecord) {
	t.Helper()
	var file bytes.Buffer
	w := NewWriter(&file)
	var model []loggedRecord
	for _, r := range recs {
		start := w.Size()
		if BlockSize-start%BlockSize < HeaderSize {
			start += BlockSize - start%BlockSize
		}
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		model = append(model, loggedRecord{data: r, start: start, end: w.Size()})
		if int64(file.Len())+int64(w.Buffered()) != w.Size() {
			t.Fatalf("Size %d != flushed %d + buffered %d", w.Size(), file.Len(), w.Buffered())
		}
		if rng != nil && rng.Float64() < flushProb {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if w.Buffered() != 0 || int64(file.Len()) != w.Size() {
				t.Fatalf("after Flush: buffered %d, file %d, size %d", w.Buffered(), file.Len(), w.Size())
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return file.Bytes(), model
}

// readAll reads every record from file, returning copies, the final error
// and the reader.
//
//lint:ignore ST1008 the error is not a failure of readAll but what ended the log, which the tests compare.
func readAll(file []byte) ([][]byte, []int64, error, *Reader) {
	r := NewReader(bytes.NewReader(file), "test.log")
	var recs [][]byte
	var offs []int64
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, offs, err, r
		}
		recs = append(recs, append([]byte(nil), rec...))
		offs = append(offs, r.Offset())
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestRoundTripRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for iter := 0; iter < 20; iter++ {
		var recs [][]byte
		for range rng.IntN(40) {
			var n int
			switch rng.IntN(4) {
			case 0:
				n = 0
			case 1:
				n = rng.IntN(100)
			case 2:
				n = BlockSize - HeaderSize - 3 + rng.IntN(8) // around one block
			default:
				n = rng.IntN(100 << 10)
			}
			recs = append(recs, randomBytes(rng, n))
		}
		file, model := writeLog(t, rng, recs, 0.3)
		got, offs, err, r := readAll(file)
		if err != io.EOF {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}
		if _, torn := r.TornTail(); torn {
			t.Fatalf("seed %d iter %d: clean log reported a torn tail", seed, iter)
		}
		if len(got) != len(recs) {
			t.Fatalf("seed %d iter %d: read %d records, wrote %d", seed, iter, len(got), len(recs))
		}
		for i := range got {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("seed %d iter %d: record %d differs (len %d vs %d)", seed, iter, i, len(got[i]), len(recs[i]))
			}
			if offs[i] != model[i].start {
				t.Fatalf("seed %d iter %d: record %d offset %d, want %d", seed, iter, i, offs[i], model[i].start)
			}
		}
	}
}

// tinyLog is a one-block log small enough to damage at every byte.
func tinyLog(t testing.TB) ([]byte, []loggedRecord) {
	return logOfSizes(t, []int{10, 0, 300, 1, 0, 700, 5})
}

// smallLog has records that cross block boundaries, fill a block exactly,
// leave a block tail shorter than a header, and are empty.
func smallLog(t testing.TB) ([]byte, []loggedRecord) {
	return logOfSizes(t, []int{
		10, 0, 300,
		BlockSize - 3 - (3*HeaderSize + 310) - HeaderSize, // leaves a 3-byte block tail
		2 * BlockSize, // FIRST, MIDDLE, LAST of 14 bytes
		BlockSize - (HeaderSize + 14) - HeaderSize, // exactly fills the rest of the block
		0, 100, 30, 5,
	})
}

func logOfSizes(t testing.TB, sizes []int) ([]byte, []loggedRecord) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs [][]byte
	for _, n := range sizes {
		recs = append(recs, randomBytes(rng, n))
	}
	return writeLog(t, nil, recs, 0)
}

func TestSmallLogLayout(t *testing.T) {
	file, model := smallLog(t)
	if model[3].end%BlockSize != BlockSize-3 {
		t.Fatalf("record 3 should leave a 3-byte tail, ends at %d", model[3].end%BlockSize)
	}
	if model[4].start%BlockSize != 0 {
		t.Fatalf("record 4 should start a block, starts at %d", model[4].start)
	}
	if model[5].end%BlockSize != 0 {
		t.Fatalf("record 5 should fill its block exactly, ends at %d", model[5].end)
	}
	if !bytes.Equal(file[model[3].end:model[4].start], make([]byte, 3)) {
		t.Fatal("block tail is not zero-filled")
	}
}

// damagePositions returns every offset of a tiny log, and for the larger
// log every offset within 40 bytes of a record or block boundary (where the
// reader's decisions change) plus every 101st offset elsewhere. Reading a
// 130 KB log once per offset would take half a minute.
func damagePositions(file []byte, model []loggedRecord) []int {
	var marks []int64
	for _, m := range model {
		marks = append(marks, m.start, m.end)
	}
	for b := int64(0); b <= int64(len(file)); b += BlockSize {
		marks = append(marks, b)
	}
	var out []int
	for n := 0; n <= len(file); n++ {
		keep := len(file) < BlockSize || n%101 == 0
		for _, m := range marks {
			keep = keep || (int64(n) >= m-40 && int64(n) <= m+40)
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

func TestTruncateEveryPosition(t *testing.T) {
	for _, mk := range []func(testing.TB) ([]byte, []loggedRecord){tinyLog, smallLog} {
		truncateAt(t, mk)
	}
}

func truncateAt(t *testing.T, mk func(testing.TB) ([]byte, []loggedRecord)) {
	file, model := mk(t)
	for _, n := range damagePositions(file, model) {
		got, _, err, r := readAll(file[:n])
		if err != io.EOF {
			t.Fatalf("truncated at %d: %v", n, err)
		}
		// Records that end at or before n survive; the first that does not
		// is where the torn tail starts, unless n is at its start or in the
		// zero padding before it.
		want := 0
		for want < len(model) && model[want].end <= int64(n) {
			want++
		}
		if len(got) != want {
			t.Fatalf("truncated at %d: got %d records, want %d", n, len(got), want)
		}
		for i := range got {
			if !bytes.Equal(got[i], model[i].data) {
				t.Fatalf("truncated at %d: record %d differs", n, i)
			}
		}
		off, torn := r.TornTail()
		wantTorn := want < len(model) && int64(n) > model[want].start
		if torn != wantTorn || (torn && off != model[want].start) {
			t.Fatalf("truncated at %d: TornTail = %d, %v; want torn %v at %d", n, off, torn, wantTorn, model[min(want, len(model)-1)].start)
		}
	}
}

func TestFlipEveryByte(t *testing.T) {
	for _, mk := range []func(testing.TB) ([]byte, []loggedRecord){tinyLog, smallLog} {
		flipAt(t, mk)
	}
}

func flipAt(t *testing.T, mk func(testing.TB) ([]byte, []loggedRecord)) {
	file, model := mk(t)
	last := model[len(model)-1]
	damaged := make([]byte, len(file))
	for _, pos := range damagePositions(file, model) {
		if pos == len(file) {
			continue
		}
		copy(damaged, file)
		damaged[pos] ^= 1 << (pos % 8)
		got, _, err, r := readAll(damaged)
		for i := range got {
			if i >= len(model) || !bytes.Equal(got[i], model[i].data) {
				t.Fatalf("flip at %d: returned a wrong record %d", pos, i)
			}
		}
		// Find the record whose bytes hold pos; -1 for padding.
		hit := -1
		for i, m := range model {
			if int64(pos) >= m.start && int64(pos) < m.end {
				hit = i
			}
		}
		var ce *base.CorruptionError
		switch {
		case hit < 0:
			if err != io.EOF || len(got) != len(model) {
				t.Fatalf("flip in padding at %d: %d records, %v", pos, len(got), err)
			}
		case hit == len(model)-1:
			// The last record is one fragment: damage there is
			// indistinguishable from a torn write.
			off, torn := r.TornTail()
			if err != io.EOF || !torn || off != last.start || len(got) != hit {
				t.Fatalf("flip in last record at %d: %d records, %v, torn %v at %d", pos, len(got), err, torn, off)
			}
		default:
			if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("flip in record %d at %d: want corruption, got %v", hit, pos, err)
			}
			if ce.Offset < model[hit].start || ce.Offset >= model[hit].end || len(got) != hit {
				t.Fatalf("flip in record %d [%d,%d) at %d: %d records, %v", hit, model[hit].start, model[hit].end, pos, len(got), err)
			}
			if off, ok := r.Damage(); !ok || off != model[hit].start {
				t.Fatalf("flip in record %d [%d,%d) at %d: Damage = %d, %v", hit, model[hit].start, model[hit].end, pos, off, ok)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Fatalf("error is not sticky: %v then %v", err, err2)
			}
			// Reading on from the intact record the damage is followed
			// by finds every record after the damaged one.
			from, ok := r.IntactAfter()
			if !ok || from != model[hit+1].start {
				t.Fatalf("flip in record %d at %d: IntactAfter = %d, %v; want %d", hit, pos, from, ok, model[hit+1].start)
			}
			rest := NewReaderFrom(bytes.NewReader(damaged), "test.log", from)
			for i := hit + 1; ; i++ {
				rec, err := rest.Next()
				if err == io.EOF && i == len(model) {
					break
				}
				if err != nil || i == len(model) || !bytes.Equal(rec, model[i].data) || rest.Offset() != model[i].start {
					t.Fatalf("flip in record %d at %d: reading on, record %d: %v", hit, pos, i, err)
				}
			}
		}
	}
}

func TestTailCases(t *testing.T) {
	recs := [][]byte{[]byte("alpha"), bytes.Repeat([]byte("b"), 50000), []byte("gamma")}
	file, model := writeLog(t, nil, recs, 0)
	other, _ := writeLog(t, nil, [][]byte{[]byte("later")}, 0)
	garbage := randomBytes(rand.New(rand.NewPCG(3, 4)), BlockSize)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	// A record written as if it started right after a 1000-byte hole.
	hole := cat(file, make([]byte, 1000))
	hole = cat(hole, make([]byte, BlockSize-len(hole)%BlockSize), other)

	// A fourth record spanning blocks 1 to 3: FIRST, MIDDLE, LAST.
	long, longModel := writeLog(t, nil, append(recs, bytes.Repeat([]byte("L"), 2*BlockSize)), 0)
	longStart := longModel[3].start
	// A power loss that lost a page inside its FIRST fragment but kept the
	// later pages of the same record.
	lostFirst := bytes.Clone(long)
	clear(lostFirst[longStart+100 : longStart+100+4096])
	// The same, followed by an intact record: the writer went on.
	lostFirstThenMore := cat(lostFirst, other)

	tests := []struct {
		name      string
		file      []byte
		records   int
		corrupt   bool
		damageOff int64
		torn      bool
		tornOff   int64
	}{
		{name: "empty", file: nil},
		{name: "clean", file: file, records: 3},
		{name: "zeros after", file: cat(file, make([]byte, 3*BlockSize)), records: 3},
		{name: "garbage after", file: cat(file, garbage), records: 3, torn: true, tornOff: model[2].end},
		{name: "garbage then zeros", file: cat(file, garbage, make([]byte, 2*BlockSize)), records: 3, torn: true, tornOff: model[2].end},
		{name: "zeros then a valid block", file: hole, records: 3, corrupt: true, damageOff: model[2].end},
		{name: "garbage then a valid block", file: cat(file, garbage[:BlockSize-len(file)%BlockSize], other), records: 3, corrupt: true, damageOff: model[2].end},
		{name: "lost page inside the last record", file: lostFirst, records: 3, torn: true, tornOff: longStart},
		{name: "lost page inside a record followed by another", file: lostFirstThenMore, records: 3, corrupt: true, damageOff: longStart},
		{name: "only zeros", file: make([]byte, 100), records: 0},
		{name: "only garbage", file: garbage, records: 0, torn: true, tornOff: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err, r := readAll(tc.file)
			if len(got) != tc.records {
				t.Fatalf("got %d records, want %d", len(got), tc.records)
			}
			if tc.corrupt {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("want corruption, got %v", err)
				}
				if off, ok := r.Damage(); !ok || off != tc.damageOff {
					t.Fatalf("Damage = %d, %v; want %d", off, ok, tc.damageOff)
				}
				return
			}
			if _, ok := r.Damage(); ok {
				t.Fatal("Damage reports damage without a corruption error")
			}
			if err != io.EOF {
				t.Fatalf("want io.EOF, got %v", err)
			}
			off, torn := r.TornTail()
			if torn != tc.torn || off != tc.tornOff {
				t.Fatalf("TornTail = %d, %v; want %d, %v", off, torn, tc.tornOff, tc.torn)
			}
		})
	}
}

func TestOutOfSequenceFragments(t *testing.T) {
	frag := func(typ byte, payload string) []byte {
		var w Writer
		w.appendFragment(typ, []byte(payload))
		return w.buf
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	okLen := int64(HeaderSize + 2)
	tests := map[string]struct {
		file      []byte
		damageOff int64 // where the record that cannot be read begins
	}{
		"middle without first":     {frag(typeMiddle, "x"), 0},
		"last without first":       {cat(frag(typeFull, "ok"), frag(typeLast, "x")), okLen},
		"full inside record":       {cat(frag(typeFull, "ok"), frag(typeFirst, "a"), frag(typeFull, "b")), okLen},
		"first inside record":      {cat(frag(typeFirst, "a"), frag(typeFirst, "b")), 0},
		"unknown type":             {cat(frag(typeFull, "ok"), frag(9, "x")), okLen},
		"unknown type in a record": {cat(frag(typeFull, "ok"), frag(typeFirst, "a"), frag(9, "x")), okLen},
		"type zero":                {frag(0, "x"), 0},
	}
	for name, tc := range tests {
		_, _, err, r := readAll(tc.file)
		if !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: want corruption, got %v", name, err)
			continue
		}
		if off, ok := r.Damage(); !ok || off != tc.damageOff {
			t.Errorf("%s: Damage = %d, %v; want %d", name, off, ok, tc.damageOff)
		}
	}
	// FIRST cut off by the end of the file is a torn tail.
	file := cat(frag(typeFull, "ok"), frag(typeFirst, "a"), frag(typeMiddle, "b"))
	got, _, err, r := readAll(file)
	if off, torn := r.TornTail(); err != io.EOF || len(got) != 1 || !torn || off != HeaderSize+2 {
		t.Fatalf("unfinished record: %d records, %v, torn %v at %d", len(got), err, torn, off)
	}
}

// countingWriter records each Write call.
type countingWriter struct {
	writes int
	buf    bytes.Buffer
	fail   error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	if c.fail != nil {
		return len(p) / 2, c.fail
	}
	return c.buf.Write(p)
}

func TestFlushIsOneWrite(t *testing.T) {
	var cw countingWriter
	w := NewWriter(&cw)
	for i := range 10 {
		if err := w.WriteRecord(bytes.Repeat([]byte{byte(i)}, 20000)); err != nil {
			t.Fatal(err)
		}
	}
	if cw.writes != 0 {
		t.Fatalf("WriteRecord reached the file: %d writes", cw.writes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if cw.writes != 1 || int64(cw.buf.Len()) != w.Size() {
		t.Fatalf("writes %d, bytes %d, size %d", cw.writes, cw.buf.Len(), w.Size())
	}
}

// TestGroupBufferKept writes groups of several MiB, as commit groups of
// large values are: once the buffer has grown, a group of the same size
// allocates nothing, and a run of small groups gives the memory back.
func TestGroupBufferKept(t *testing.T) {
	w := NewWriter(io.Discard)
	payload := make([]byte, 700<<10)
	group := func() {
		for range 4 {
			if err := w.WriteRecord(payload); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	group()
	if allocs := testing.AllocsPerRun(5, group); allocs != 0 {
		t.Fatalf("%.1f allocations per group of %d KiB after the first", allocs, 4*len(payload)>>10)
	}
	for range shrinkAfter {
		if err := w.WriteRecord([]byte("small")); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if cap(w.buf) > maxRetainedBuffer {
		t.Fatalf("buffer of %d bytes kept after %d small groups", cap(w.buf), shrinkAfter)
	}
}

func TestWriteErrorIsSticky(t *testing.T) {
	boom := errors.New("boom")
	cw := countingWriter{fail: boom}
	w := NewWriter(&cw)
	w.WriteRecord([]byte("a"))
	if err := w.Flush(); err != boom {
		t.Fatalf("Flush: %v", err)
	}
	cw.fail = nil
	if err := w.WriteRecord([]byte("b")); err != boom {
		t.Fatalf("WriteRecord after failure: %v", err)
	}
	if err := w.Flush(); err != boom {
		t.Fatalf("Flush after failure: %v", err)
	}
}

// errReader fails after delivering its data.
type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReadErrorIsReturned(t *testing.T) {
	boom := errors.New("disk on fire")
	file, _ := writeLog(t, nil, [][]byte{bytes.Repeat([]byte("x"), BlockSize)}, 0)
	r := NewReader(&errReader{data: file[:BlockSize], err: boom}, "x.log")
	if _, err := r.Next(); !errors.Is(err, boom) || errors.Is(err, base.ErrCorruption) {
		t.Fatalf("want the I/O error, got %v", err)
	}
}

func TestMaskCRC(t *testing.T) {
	// Known answer: CRC-32C("123456789") = 0xe3069283.
	if c := fragmentCRC('1', []byte("23456789")); c != 0xe3069283 {
		t.Fatalf("CRC-32C = %#x", c)
	}
	if m := maskCRC(0); m != crcMaskDelta {
		t.Fatalf("mask(0) = %#x", m)
	}
	if m := maskCRC(1); m != 1<<17+crcMaskDelta {
		t.Fatalf("mask(1) = %#x", m)
	}
}

func FuzzReader(f *testing.F) {
	// Seeds stay small: the fuzzing engine slows to a crawl on inputs of
	// several blocks, and block boundaries are covered by the tests above.
	file, _ := tinyLog(f)
	f.Add(file)
	f.Add(file[:len(file)-3])
	f.Add([]byte{})
	f.Add(make([]byte, 20))
	short, _ := writeLog(f, nil, [][]byte{[]byte("a"), {}, []byte("hello world")}, 0)
	f.Add(short)
	flipped := append([]byte(nil), short...)
	flipped[3] ^= 0x40
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz.log")
		prev := int64(-1)
		for {
			rec, err := r.Next()
			if err != nil {
				var ce *base.CorruptionError
				if err != io.EOF && !errors.As(err, &ce) {
					t.Fatalf("unexpected error type: %v", err)
				}
				if ce != nil && (ce.Offset < 0 || ce.Offset >= int64(len(data))) {
					t.Fatalf("corruption offset %d outside file of %d bytes", ce.Offset, len(data))
				}
				if off, torn := r.TornTail(); torn && (off < 0 || off >= int64(len(data))) {
					t.Fatalf("torn tail offset %d outside file of %d bytes", off, len(data))
				}
				if _, err2 := r.Next(); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				return
			}
			if r.Offset() <= prev || r.Offset()+int64(len(rec)) > int64(len(data)) {
				t.Fatalf("record offset %d (len %d) after %d in %d bytes", r.Offset(), len(rec), prev, len(data))
			}
			prev = r.Offset()
		}
	})
}

// TestHeaderOnlyBlockTail covers a block with exactly one header's worth of
// room left: the writer puts an empty FIRST (or an empty FULL) there.
func TestHeaderOnlyBlockTail(t *testing.T) {
	for _, second := range [][]byte{[]byte("abc"), {}} {
		recs := [][]byte{bytes.Repeat([]byte("x"), BlockSize-2*HeaderSize), second, []byte("z")}
		file, model := writeLog(t, nil, recs, 0)
		if model[1].start != BlockSize-HeaderSize {
			t.Fatalf("second record starts at %d", model[1].start)
		}
		want := byte(typeFirst)
		if len(second) == 0 {
			want = typeFull
		}
		if file[BlockSize-1] != want {
			t.Fatalf("fragment type %d in the last header of the block, want %d", file[BlockSize-1], want)
		}
		got, _, err, _ := readAll(file)
		if err != io.EOF || len(got) != 3 || !bytes.Equal(got[1], second) || !bytes.Equal(got[2], recs[2]) {
			t.Fatalf("read %d records, %v", len(got), err)
		}
	}
}
