package batchrepr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

type record struct {
	kind       base.Kind
	key, value []byte
}

func randomRecords(rng *rand.Rand, n int) []record {
	recs := make([]record, n)
	for i := range recs {
		r := record{kind: base.Kind(rng.IntN(int(base.KindMax) + 1))}
		// Lengths past 127 and 16383 exercise 2- and 3-byte varints.
		lens := []int{0, 1, 5, 127, 128, 300, 16384}
		r.key = randomBytes(rng, lens[rng.IntN(len(lens))])
		if r.kind != base.KindDelete {
			r.value = randomBytes(rng, lens[rng.IntN(len(lens))])
		}
		recs[i] = r
	}
	return recs
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func encode(seq base.SeqNum, recs []record) []byte {
	repr := New()
	for _, r := range recs {
		repr = Append(repr, r.kind, r.key, r.value)
	}
	SetSeq(repr, seq)
	return repr
}

func decode(repr []byte) ([]record, error) {
	r, err := NewReader(repr)
	if err != nil {
		return nil, err
	}
	var recs []record
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return recs, err
		}
		if !ok {
			return recs, nil
		}
		recs = append(recs, record{kind, key, value})
	}
}

func equalRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || !bytes.Equal(a[i].key, b[i].key) || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	// Each iteration decodes every prefix of its batch, so the cost grows
	// with the square of the batch; -short (CI) runs a quarter of them.
	iters := 200
	if testing.Short() {
		iters = 50
	}
	for iter := 0; iter < iters; iter++ {
		recs := randomRecords(rng, rng.IntN(20))
		seq := base.SeqNum(rng.Uint64N(uint64(base.SeqNumMax)))
		repr := encode(seq, recs)
		if Seq(repr) != seq || Count(repr) != uint32(len(recs)) {
			t.Fatalf("seed %d: header seq %d count %d, want %d %d", seed, Seq(repr), Count(repr), seq, len(recs))
		}
		got, err := decode(repr)
		if err != nil {
			t.Fatalf("seed %d: decode: %v", seed, err)
		}
		if !equalRecords(got, recs) {
			t.Fatalf("seed %d: round trip mismatch", seed)
		}
		// Every strict prefix is a truncated batch and must be rejected,
		// including cuts that fall exactly on a record boundary.
		for cut := 0; cut < len(repr); cut += 1 + rng.IntN(64) {
			if _, err := decode(repr[:cut]); err == nil {
				t.Fatalf("seed %d: prefix of %d/%d bytes decoded without error", seed, cut, len(repr))
			}
		}
	}
}

func TestReaderSlicesAreCapped(t *testing.T) {
	repr := encode(1, []record{{base.KindSet, []byte("k"), []byte("v")}, {base.KindSet, []byte("x"), []byte("y")}})
	r, err := NewReader(repr)
	if err != nil {
		t.Fatal(err)
	}
	_, key, value, _, _ := r.Next()
	_ = append(key, 'Z')
	_ = append(value, 'Z')
	got, err := decode(repr)
	if err != nil || string(got[1].key) != "x" || string(got[0].value) != "v" {
		t.Fatalf("appending to returned slices changed the repr: %v %+v", err, got)
	}
}

func TestReaderErrors(t *testing.T) {
	header := func(count uint32) []byte {
		h := New()
		binary.LittleEndian.PutUint32(h[8:], count)
		return h
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		repr []byte
		want string // substring of the error; "" means success
	}{
		{"empty batch", New(), ""},
		{"short header", make([]byte, HeaderLen-1), "shorter than its"},
		{"nil", nil, "shorter than its"},
		{"delete has no value", cat(header(1), []byte{0, 1, 'k'}), ""},
		{"count too high", cat(header(2), []byte{0, 1, 'k'}), "counts 2 records but holds 1"},
		{"count too low", cat(header(0), []byte{0, 1, 'k'}), "after its 0 counted records"},
		{"unknown kind", cat(header(1), []byte{byte(base.KindMax) + 1, 1, 'k'}), fmt.Sprintf("unknown kind %d", base.KindMax+1)},
		{"truncated key", cat(header(1), []byte{0, 5, 'k'}), "truncated"},
		{"missing key length", cat(header(1), []byte{0}), "truncated"},
		{"unterminated varint", cat(header(1), []byte{0, 0x80}), "truncated"},
		{"overflowing varint", cat(header(1), []byte{0}, bytes.Repeat([]byte{0xff}, 11)), "malformed"},
		{"missing value", cat(header(1), []byte{1, 1, 'k'}), "value: truncated"},
		{"truncated value", cat(header(1), []byte{1, 1, 'k', 3, 'v'}), "value: truncated"},
		{"huge length", cat(header(1), []byte{1}, binary.AppendUvarint(nil, 1<<63), []byte{'k'}), "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.repr)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestReaderOffset(t *testing.T) {
	repr := encode(7, []record{{base.KindSet, []byte("ab"), []byte("c")}})
	r, _ := NewReader(repr)
	if r.Offset() != HeaderLen {
		t.Fatalf("offset %d before first record", r.Offset())
	}
	r.Next()
	if r.Offset() != len(repr) {
		t.Fatalf("offset %d after last record, want %d", r.Offset(), len(repr))
	}
}

func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	f.Add([]byte{})
	f.Add(New())
	for i := 0; i < 8; i++ {
		f.Add(encode(base.SeqNum(i), randomRecords(rng, i)))
	}
	f.Add(append(New(), 0xff, 0x80))
	f.Fuzz(func(t *testing.T, repr []byte) {
		recs, err := decode(repr)
		if len(recs) > len(repr) {
			t.Fatalf("%d records out of %d bytes", len(recs), len(repr))
		}
		if err != nil {
			return
		}
		// Whatever decodes cleanly must survive a re-encode. The input may
		// use overlong varints, so compare records, not bytes.
		again, err := decode(encode(Seq(repr), recs))
		if err != nil || !equalRecords(again, recs) {
			t.Fatalf("re-encode of a valid batch differs: %v", err)
		}
		if int(Count(repr)) != len(recs) {
			t.Fatalf("count %d but %d records decoded", Count(repr), len(recs))
		}
	})
}

func TestRecordLen(t *testing.T) {
	for _, kind := range []base.Kind{base.KindSet, base.KindSetExpiry, base.KindDelete} {
		for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1 << 21} {
			key, value := make([]byte, n%300), make([]byte, n)
			repr := New()
			got := len(Append(repr, kind, key, value)) - len(repr)
			if want := RecordLen(kind, len(key), len(value)); got != want {
				t.Errorf("%s key %d value %d: Append added %d bytes, RecordLen says %d", kind, len(key), len(value), got, want)
			}
		}
	}
}
