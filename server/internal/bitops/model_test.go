package bitops

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bitModel is a string as a slice of bits, the obvious way.
type bitModel []bool

func toModel(s []byte) bitModel {
	m := make(bitModel, len(s)*8)
	for i := range m {
		m[i] = s[i/8]&(0x80>>(i%8)) != 0
	}
	return m
}

func randBytes(rng *rand.Rand, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		switch rng.IntN(4) {
		case 0:
			s[i] = 0
		case 1:
			s[i] = 0xff
		default:
			s[i] = byte(rng.Uint32())
		}
	}
	return s
}

// modelSpan is Redis' range rule written out on plain integers.
func modelSpan(n int, r Range) (int64, int64, bool) {
	total := int64(n)
	if r.Bit {
		total *= 8
	}
	s, e := r.Start, r.End
	if s < 0 {
		s = total + s
	}
	if e < 0 {
		e = total + e
	}
	if s < 0 {
		s = 0
	}
	if e < 0 {
		e = 0
	}
	if e > total-1 {
		e = total - 1
	}
	if s > e {
		return 0, 0, false
	}
	if r.Bit {
		return s, e, true
	}
	return s * 8, e*8 + 7, true
}

func randRange(rng *rand.Rand, n int) Range {
	lim := int64(n*8 + 10)
	return Range{Start: rng.Int64N(2*lim) - lim, End: rng.Int64N(2*lim) - lim, Bit: rng.IntN(2) == 0}
}

func TestCountPosAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for range 20000 {
		s := randBytes(rng, rng.IntN(20))
		m := toModel(s)
		r := randRange(rng, len(s))
		want := int64(0)
		if a, b, ok := modelSpan(len(s), r); ok && !(r.Start < 0 && r.End < 0 && r.Start > r.End) {
			for i := a; i <= b; i++ {
				if m[i] {
					want++
				}
			}
		}
		if got := Count(s, r); got != want {
			t.Fatalf("Count(% x, %+v) = %d, model %d", s, r, got, want)
		}
		bit := rng.IntN(2)
		endGiven := rng.IntN(2) == 0
		if !endGiven {
			r.End, r.Bit = -1, false
		}
		wantPos := int64(-1)
		if a, b, ok := modelSpan(len(s), r); ok {
			for i := a; i <= b; i++ {
				if m[i] == (bit == 1) {
					wantPos = i
					break
				}
			}
			if wantPos < 0 && bit == 0 && !endGiven {
				wantPos = b + 1
			}
		}
		if got := Pos(s, bit, &r, endGiven); got != wantPos {
			t.Fatalf("Pos(% x, %d, %+v, %v) = %d, model %d", s, bit, r, endGiven, got, wantPos)
		}
	}
}

func TestApplyAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	for range 5000 {
		op := Op(rng.IntN(4))
		srcs := make([][]byte, 1+rng.IntN(4))
		if op == Not {
			srcs = srcs[:1]
		}
		maxLen := 0
		for i := range srcs {
			if rng.IntN(5) > 0 {
				srcs[i] = randBytes(rng, rng.IntN(12))
			}
			maxLen = max(maxLen, len(srcs[i]))
		}
		want := make([]byte, maxLen)
		for i := range want {
			at := func(s []byte) byte {
				if i < len(s) {
					return s[i]
				}
				return 0
			}
			b := at(srcs[0])
			for _, s := range srcs[1:] {
				switch op {
				case And:
					b &= at(s)
				case Or:
					b |= at(s)
				case Xor:
					b ^= at(s)
				}
			}
			if op == Not {
				b = ^b
			}
			want[i] = b
		}
		if got := Apply(op, srcs); !bytes.Equal(got, want) {
			t.Fatalf("Apply(%d, % x) = % x, model % x", op, srcs, got, want)
		}
	}
}

// fieldModel computes a BITFIELD write with big integers: the exact sum,
// then the overflow mode's rule.
func fieldModel(f Field, value *big.Int, incr int64, ow Overflow) (*big.Int, bool) {
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), f.Bits)
	if f.Signed {
		lo.Neg(new(big.Int).Rsh(hi, 1))
		hi.Rsh(hi, 1)
	}
	hi.Sub(hi, big.NewInt(1))
	sum := new(big.Int).Add(value, big.NewInt(incr))
	if sum.Cmp(lo) >= 0 && sum.Cmp(hi) <= 0 {
		return sum, true
	}
	switch ow {
	case Fail:
		return nil, false
	case Sat:
		// Redis computes hi-value in 64 bits: when that wraps (a value to
		// store within hi of -2^63), it takes the value as too big.
		wraps := f.Signed && f.Bits < 64 && new(big.Int).Sub(hi, value).Cmp(big.NewInt(math.MaxInt64)) > 0
		if sum.Cmp(hi) > 0 || wraps {
			return hi, true
		}
		return lo, true
	}
	mod := new(big.Int).Lsh(big.NewInt(1), f.Bits)
	w := new(big.Int).Mod(sum, mod)
	if f.Signed && w.Cmp(hi) > 0 {
		w.Sub(w, mod)
	}
	return w, true
}

func TestFieldAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	edge := []int64{0, 1, -1, 2, -2, 127, -128, 255, 1 << 62, -1 << 62, 1<<63 - 1, -1 << 63, 1<<63 - 2}
	randInt := func() int64 {
		if rng.IntN(2) == 0 {
			return edge[rng.IntN(len(edge))]
		}
		return int64(rng.Uint64()) >> rng.IntN(64)
	}
	for range 50000 {
		f := Field{Signed: rng.IntN(2) == 0}
		f.Bits = uint(1 + rng.IntN(63))
		if f.Signed && rng.IntN(8) == 0 {
			f.Bits = 64
		}
		s := randBytes(rng, 12)
		offset := uint64(rng.IntN(96 - int(f.Bits) + 1))
		ow := Overflow(rng.IntN(3))
		cur := f.Get(s, offset)
		// The model reads the field itself, bit by bit.
		want := new(big.Int)
		m := toModel(s)
		for i := range uint64(f.Bits) {
			want.Lsh(want, 1)
			if m[offset+i] {
				want.Or(want, big.NewInt(1))
			}
		}
		if f.Signed && want.Bit(int(f.Bits)-1) == 1 {
			want.Sub(want, new(big.Int).Lsh(big.NewInt(1), f.Bits))
		}
		if want.Int64() != cur || !want.IsInt64() {
			t.Fatalf("Get %+v at %d of % x = %d, model %v", f, offset, s, cur, want)
		}
		before := bytes.Clone(s)
		v := randInt()
		var got int64
		var ok bool
		var stored *big.Int
		var wantOK bool
		if rng.IntN(2) == 0 {
			got, ok = f.IncrBy(s, offset, v, ow)
			stored, wantOK = fieldModel(f, big.NewInt(cur), v, ow)
			if ok && got != stored.Int64() {
				t.Fatalf("IncrBy %+v %d by %d (%d) = %d, model %v", f, cur, v, ow, got, stored)
			}
		} else {
			got, ok = f.Set(s, offset, v, ow)
			sv := big.NewInt(v)
			if !f.Signed {
				// Redis stores an unsigned field from v's two's-complement
				// pattern.
				sv.SetUint64(uint64(v))
			}
			stored, wantOK = fieldModel(f, sv, 0, ow)
			if got != cur {
				t.Fatalf("Set returned %d, field held %d", got, cur)
			}
		}
		if ok != wantOK {
			t.Fatalf("%+v %d with %d mode %d: ok %v, model %v", f, cur, v, ow, ok, wantOK)
		}
		if !ok {
			if !bytes.Equal(s, before) {
				t.Fatal("a failed write changed the string")
			}
			continue
		}
		if now := f.Get(s, offset); now != stored.Int64() {
			t.Fatalf("%+v after write of %d (mode %d) holds %d, model %v", f, v, ow, now, stored)
		}
		// Bits outside the field are untouched.
		after := toModel(s)
		for i := range m {
			if (uint64(i) < offset || uint64(i) >= offset+uint64(f.Bits)) && after[i] != m[i] {
				t.Fatalf("bit %d outside the field changed", i)
			}
		}
	}
}

func TestParseField(t *testing.T) {
	parse := func(b []byte) (int64, bool) {
		var n int64
		_, err := fmt.Sscan(string(b), &n)
		return n, err == nil && len(b) > 0
	}
	for _, c := range []struct {
		in   string
		want Field
		ok   bool
	}{
		{"i64", Field{true, 64}, true}, {"u63", Field{false, 63}, true}, {"u1", Field{false, 1}, true}, {"U1", Field{}, false}, {"I8", Field{}, false},
		{"u64", Field{}, false}, {"i65", Field{}, false}, {"i0", Field{}, false}, {"x8", Field{}, false},
		{"", Field{}, false}, {"i", Field{}, false}, {"u8\x00z", Field{false, 8}, true},
	} {
		got, ok := ParseField([]byte(c.in), parse)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseField(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSetGetBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	var s []byte
	var m []bool
	for range 5000 {
		off := uint64(rng.IntN(200))
		on := rng.IntN(2) == 0
		s = Grow(s, off)
		for uint64(len(m)) <= off {
			m = append(m, false)
		}
		old := SetBit(s, off, on)
		if (old == 1) != m[off] {
			t.Fatalf("SetBit old %d, model %v", old, m[off])
		}
		m[off] = on
		probe := uint64(rng.IntN(250))
		want := 0
		if probe < uint64(len(m)) && m[probe] {
			want = 1
		}
		if got := GetBit(s, probe); got != want {
			t.Fatalf("GetBit(%d) = %d, model %d", probe, got, want)
		}
		if len(s) != (len(m)+7)/8 && len(s)*8 < len(m) {
			t.Fatalf("string of %d bytes for %d bits", len(s), len(m))
		}
	}
}
