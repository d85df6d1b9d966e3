package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// TestAll checks that All yields what Next returns, with Offset in step,
// ends a clean log with no error, ends damage with one error pair, and
// stops when the loop breaks.
func TestAll(t *testing.T) {
	recs := [][]byte{[]byte("one"), bytes.Repeat([]byte("two"), BlockSize), []byte("three")}
	file, model := writeLog(t, nil, recs, 0)

	r := NewReader(bytes.NewReader(file), "test.log")
	n := 0
	for rec, err := range r.All() {
		if err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		if !bytes.Equal(rec, recs[n]) || r.Offset() != model[n].start {
			t.Fatalf("record %d: %d bytes at offset %d, want %d bytes at %d", n, len(rec), r.Offset(), len(recs[n]), model[n].start)
		}
		n++
	}
	if n != len(recs) {
		t.Fatalf("yielded %d records, want %d", n, len(recs))
	}

	r = NewReader(bytes.NewReader(file), "test.log")
	n = 0
	for range r.All() {
		n++
		break
	}
	if rec, err := r.Next(); n != 1 || err != nil || !bytes.Equal(rec, recs[1]) {
		t.Fatalf("after a break at the first record: yielded %d, Next gave %d bytes, %v", n, len(rec), err)
	}

	// Damage in the first record, followed by intact ones, is corruption.
	damaged := bytes.Clone(file)
	damaged[HeaderSize] ^= 1
	r = NewReader(bytes.NewReader(damaged), "test.log")
	var errs []error
	for rec, err := range r.All() {
		if err != nil && rec != nil {
			t.Fatalf("an error pair carries a record of %d bytes", len(rec))
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], base.ErrCorruption) {
		t.Fatalf("damaged log yielded %v, want one corruption error", errs)
	}
}
