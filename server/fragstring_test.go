package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/bitops"
	"github.com/redis/go-redis/v9"
)

// TestFragStringModel runs seeded random string and bit commands against
// a []byte model per key. Offsets reach past fragThreshold, so keys start
// plain, become fragmented under SETBIT and BITFIELD, grow and shrink
// through SETRANGE, APPEND, SET, COPY and RENAME, and every reply —
// GET's bytes included — must be the model's, whichever representation
// the key has at the time. OBJECT ENCODING tells which one it has; both
// must occur.
func TestFragStringModel(t *testing.T) {
	s := startServer(t, nil)
	cl := newClient(t, s, 2, nil)
	ctx := context.Background()
	const seed = 21
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"b0", "b1", "b2"}
	model := map[string][]byte{}
	offset := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Int64N(1 << 10)
		case 1:
			return fragThreshold - 64 + rng.Int64N(128)
		}
		return rng.Int64N(3 * fragThreshold)
	}
	// Patches of zeros now and then clear whole fragments, which must
	// then read as zeros (deleted, not left stale).
	patchByte := func() byte {
		if rng.IntN(4) == 0 {
			return 0
		}
		return byte(rng.IntN(256))
	}
	fail := func(step int, what string, got, want any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s = %v, want %v", seed, step, what, got, want)
	}
	sawFrag, sawPlain := false, false
	// Each step picks one of the operations at random: 1,000 under
	// -short still run each well over fifty times, at a third of the
	// cost (26 s under -race on CI's two cores).
	steps := 3000
	if testing.Short() {
		steps = 1000
	}
	for step := range steps {
		k := keys[rng.IntN(len(keys))]
		m := model[k]
		switch rng.IntN(14) {
		case 0, 1, 2:
			bit := offset()*8 + rng.Int64N(8)
			on := rng.IntN(2)
			want := int64(bitops.GetBit(m, uint64(bit)))
			if _, err := cl.SetBit(ctx, k, bit, on).Result(); err != nil {
				fail(step, "SETBIT err", err, nil)
			} else if got := cl.GetBit(ctx, k, bit).Val(); got != int64(on) {
				fail(step, "GETBIT after SETBIT", got, on)
			}
			m = bitops.Grow(m, uint64(bit))
			if old := bitops.SetBit(m, uint64(bit), on == 1); int64(old) != want {
				t.Fatalf("model disagrees with itself")
			}
		case 3:
			bit := uint64(offset()*8 + rng.Int64N(8))
			if got := cl.GetBit(ctx, k, int64(bit)).Val(); got != int64(bitops.GetBit(m, bit)) {
				fail(step, "GETBIT", got, bitops.GetBit(m, bit))
			}
		case 4:
			off := offset()
			patch := bytes.Repeat([]byte{patchByte()}, 1+rng.IntN(9000))
			got, err := cl.SetRange(ctx, k, off, string(patch)).Result()
			if need := int(off) + len(patch); need > len(m) {
				m = append(m, make([]byte, need-len(m))...)
			}
			copy(m[off:], patch)
			if err != nil || got != int64(len(m)) {
				fail(step, "SETRANGE", fmt.Sprint(got, err), len(m))
			}
		case 5:
			patch := bytes.Repeat([]byte{patchByte()}, rng.IntN(3000))
			got, err := cl.Append(ctx, k, string(patch)).Result()
			m = append(m, patch...)
			if err != nil || got != int64(len(m)) {
				fail(step, "APPEND", fmt.Sprint(got, err), len(m))
			}
		case 6:
			got, err := cl.Get(ctx, k).Bytes()
			if len(m) == 0 && err == nil || len(m) > 0 && !bytes.Equal(got, m) {
				fail(step, "GET length", len(got), len(m))
			}
		case 7:
			start, end := rng.Int64N(3*fragThreshold)-fragThreshold, rng.Int64N(3*fragThreshold)-fragThreshold
			got := cl.GetRange(ctx, k, start, end).Val()
			want := getRangeModel(m, start, end)
			if got != string(want) {
				fail(step, fmt.Sprintf("GETRANGE %d %d length", start, end), len(got), len(want))
			}
		case 8:
			if got := cl.StrLen(ctx, k).Val(); got != int64(len(m)) {
				fail(step, "STRLEN", got, len(m))
			}
			if got := cl.BitCount(ctx, k, nil).Val(); got != bitops.CountAll(m) {
				fail(step, "BITCOUNT", got, bitops.CountAll(m))
			}
			r := bitops.Range{Start: rng.Int64N(200_000) - 100_000, End: rng.Int64N(200_000) - 100_000}
			if got := cl.BitCount(ctx, k, &redis.BitCount{Start: r.Start, End: r.End}).Val(); got != bitops.Count(m, r) {
				fail(step, "BITCOUNT range", got, bitops.Count(m, r))
			}
		case 9:
			bit := rng.IntN(2)
			if got, want := cl.BitPos(ctx, k, int64(bit)).Val(), bitPosModel(m, bit); got != want {
				fail(step, "BITPOS", got, want)
			}
		case 10:
			// BITFIELD: an 8-bit field anywhere, straddling bytes.
			bit := uint64(offset()*8 + rng.Int64N(8))
			f, _ := bitops.ParseField([]byte("u8"), parseInt)
			v := rng.Int64N(256)
			got, err := cl.BitField(ctx, k, "SET", "u8", bit, v, "GET", "u8", bit).Result()
			m = bitops.Grow(m, bit+7)
			old, _ := f.Set(m, bit, v, bitops.Wrap)
			if err != nil || len(got) != 2 || got[0] != old || got[1] != v {
				fail(step, "BITFIELD", fmt.Sprint(got, err), []int64{old, v})
			}
		case 11:
			other := keys[rng.IntN(len(keys))]
			if other == k {
				continue
			}
			if rng.IntN(2) == 0 {
				err := cl.Rename(ctx, k, other).Err()
				if len(m) == 0 {
					continue // no such key
				}
				if err != nil {
					fail(step, "RENAME", err, nil)
				}
				model[other], m = m, nil
			} else {
				n, _ := cl.Copy(ctx, k, other, 0, true).Result()
				if len(m) > 0 {
					if n != 1 {
						fail(step, "COPY", n, 1)
					}
					model[other] = bytes.Clone(m)
				}
			}
		case 12:
			switch enc := cl.ObjectEncoding(ctx, k).Val(); {
			case len(m) > fragThreshold && enc == "raw":
				sawFrag = true
			case len(m) > 0 && len(m) <= fragThreshold:
				sawPlain = true
			}
			if len(m) > 0 {
				if typ := cl.Type(ctx, k).Val(); typ != "string" {
					fail(step, "TYPE", typ, "string")
				}
				// DUMP gives a string's payload, whatever its storage.
				payload, err := cl.Dump(ctx, k).Result()
				if err == nil {
					err = cl.RestoreReplace(ctx, "restored", 0, payload).Err()
				}
				got, _ := cl.Get(ctx, "restored").Bytes()
				if err != nil || !bytes.Equal(got, m) {
					fail(step, "GET of DUMP/RESTORE length", fmt.Sprint(len(got), err), len(m))
				}
			}
		default:
			if rng.IntN(3) == 0 {
				cl.Del(ctx, k)
				m = nil
			} else if len(m) > 0 {
				cl.Set(ctx, k, "x", 0)
				m = []byte("x")
			}
		}
		model[k] = m
	}
	if !sawFrag || !sawPlain {
		t.Errorf("saw fragmented strings: %v, plain ones: %v", sawFrag, sawPlain)
	}
	for _, k := range keys {
		got, _ := cl.Get(ctx, k).Bytes()
		if !bytes.Equal(got, model[k]) {
			t.Errorf("%s: GET differs from the model at the end (%d bytes, want %d)", k, len(got), len(model[k]))
		}
	}
}

// getRangeModel is GETRANGE over m: negative indexes count from the end
// (and stop at 0), the end stops at the last byte, and a range that ends
// before it starts, or two negative indexes in the wrong order, is empty.
func getRangeModel(m []byte, start, end int64) []byte {
	n := int64(len(m))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	lo, hi := start, end
	if lo < 0 {
		lo = max(lo+n, 0)
	}
	if hi < 0 {
		hi = max(hi+n, 0)
	}
	if hi = min(hi, n-1); lo > hi {
		return nil
	}
	return m[lo : hi+1]
}

func bitPosModel(m []byte, bit int) int64 {
	if len(m) == 0 {
		return -int64(bit)
	}
	return bitops.Pos(m, bit, nil, false)
}

// TestSparseBitmap sets bits at random offsets up to 2^32-1 and checks
// that the key costs what its bits cost: a few fragments, not 512 MiB,
// while GETBIT, BITCOUNT, STRLEN and GETRANGE answer as for the whole
// string; DEL then leaves nothing readable.
func TestSparseBitmap(t *testing.T) {
	s := startServer(t, nil)
	cl := newClient(t, s, 3, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 2))
	set := map[int64]bool{1<<32 - 1: true}
	for len(set) < 2000 {
		set[rng.Int64N(1<<32)] = true
	}
	for bit := range set {
		if err := cl.SetBit(ctx, "sparse", bit, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := cl.StrLen(ctx, "sparse").Val(); n != 1<<29 {
		t.Fatalf("STRLEN = %d, want %d", n, 1<<29)
	}
	if n := cl.BitCount(ctx, "sparse", nil).Val(); n != int64(len(set)) {
		t.Fatalf("BITCOUNT = %d, want %d", n, len(set))
	}
	for bit := range set {
		if cl.GetBit(ctx, "sparse", bit).Val() != 1 || cl.GetBit(ctx, "sparse", bit^1).Val() != int64(bitTwin(set, bit)) {
			t.Fatalf("GETBIT around %d wrong", bit)
		}
		window := cl.GetRange(ctx, "sparse", bit/8, bit/8).Val()
		if len(window) != 1 || window[0]&(0x80>>(bit%8)) == 0 {
			t.Fatalf("GETRANGE at byte %d = %q", bit/8, window)
		}
	}
	// The fragments of the key: at most one per bit set.
	ks := &s.ks
	v, _, err := ks.getStringRef(ks.latest(), new(keyBuf), []byte("sparse"))
	if err != nil || v.frag == nil {
		t.Fatalf("not fragmented: %v", err)
	}
	frags, stored := 0, 0
	if err := ks.fragWalk(ks.latest(), []byte("sparse"), *v.frag, 0, 1<<32, func(_ int64, data []byte) error {
		frags++
		stored += len(data)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A fragment keeps only the bytes between its first and last nonzero
	// byte: about one per bit here, where two bits rarely share one.
	if frags > len(set) || stored > 64*len(set) {
		t.Fatalf("%d fragments holding %d bytes for %d bits", frags, stored, len(set))
	}
	if n := cl.Del(ctx, "sparse").Val(); n != 1 {
		t.Fatalf("DEL = %d", n)
	}
	if n := cl.Exists(ctx, "sparse").Val(); n != 0 {
		t.Fatalf("EXISTS after DEL = %d", n)
	}
	t.Logf("%d bits in %d fragments of %d bytes in all", len(set), frags, stored)
}

// A stored fragment is bytes from disk: damaged ones are corruption,
// never a panic or bytes past the string.
func TestDecodeFragRefusesDamage(t *testing.T) {
	m := collMeta{count: 3 * fragSize}
	var buf []byte
	for _, val := range [][]byte{
		{},              // no skip
		{0x80},          // truncated uvarint
		{0x82, 0x20, 1}, // skip 4098
		append([]byte{0x80, 0x20}, make([]byte, 1)...), // 4096 + 1 byte
		{0x81, 0x20},                            // runs, none
		{0x81, 0x20, 0, 0},                      // an empty run
		{0x81, 0x20, 0, 2, 1},                   // a run short of its bytes
		{0x81, 0x20, 0x80},                      // truncated gap
		{0x81, 0x20, 0x80, 0x20, 1, 1},          // a run past the fragment
		{0x81, 0x20, 0, 1, 1, 0x80, 0x20, 1, 1}, // a gap past it
	} {
		if _, _, err := decodeFrag([]byte("k"), m, 0, val, &buf); err == nil {
			t.Errorf("decodeFrag(%x) accepted", val)
		}
	}
	if _, _, err := decodeFrag([]byte("k"), m, 2, []byte{0, 1, 2}, &buf); err != nil {
		t.Errorf("a valid last fragment: %v", err)
	}
	if _, _, err := decodeFrag([]byte("k"), collMeta{count: 2*fragSize + 2}, 2, []byte{0, 1, 2, 3}, &buf); err == nil {
		t.Error("a fragment past the length accepted")
	}
	if _, _, err := decodeFrag([]byte("k"), collMeta{count: 2*fragSize + 2}, 2, []byte{0x81, 0x20, 1, 2, 1, 1}, &buf); err == nil {
		t.Error("runs past the length accepted")
	}
}

// FuzzDecodeFrag feeds stored fragments that may be damaged: a fragment
// decodes to bytes inside its own 4 KiB or to an error, and what decodes
// encodes back to a value that decodes the same.
func FuzzDecodeFrag(f *testing.F) {
	f.Add([]byte{0, 1, 2})
	f.Add([]byte{0x81, 0x20, 3, 1, 0xff, 9, 2, 1, 2})
	f.Add(encodeFrag(nil, sparseFrag(rand.New(rand.NewPCG(1, 2)), 40)))
	m := collMeta{count: 4 * fragSize}
	f.Fuzz(func(t *testing.T, val []byte) {
		var buf, buf2 []byte
		at, data, err := decodeFrag([]byte("k"), m, 1, val, &buf)
		if err != nil {
			return
		}
		if at < fragSize || at+int64(len(data)) > 2*fragSize {
			t.Fatalf("decoded [%d, %d) outside fragment 1", at, at+int64(len(data)))
		}
		frag := make([]byte, fragSize)
		copy(frag[at-fragSize:], data)
		enc := encodeFrag(nil, frag)
		if allZero(frag) {
			if len(enc) != 0 {
				t.Fatalf("all-zero fragment encoded as %x", enc)
			}
			return
		}
		at2, data2, err := decodeFrag([]byte("k"), m, 1, enc, &buf2)
		if err != nil {
			t.Fatalf("re-encoded %x: %v", enc, err)
		}
		again := make([]byte, fragSize)
		copy(again[at2-fragSize:], data2)
		if !bytes.Equal(frag, again) {
			t.Fatalf("%x re-encoded as %x decodes differently", val, enc)
		}
	})
}

// sparseFrag returns a fragment with n random bits set.
func sparseFrag(rng *rand.Rand, n int) []byte {
	f := make([]byte, fragSize)
	for range n {
		bit := rng.IntN(fragSize * 8)
		f[bit/8] |= 0x80 >> (bit % 8)
	}
	return f
}

// encodeFrag's form is the shorter, and any fragment, sparse or dense,
// comes back as it went in.
func TestEncodeFragRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	m := collMeta{count: 1 << 20}
	var buf []byte
	for iter := range 2000 {
		var f []byte
		switch iter % 4 {
		case 0:
			f = sparseFrag(rng, rng.IntN(64))
		case 1:
			f = sparseFrag(rng, rng.IntN(fragSize*8))
		case 2: // a dense stretch among zeros
			f = make([]byte, fragSize)
			lo := rng.IntN(fragSize)
			for j := lo; j < min(fragSize, lo+rng.IntN(300)); j++ {
				f[j] = byte(rng.Uint32())
			}
		default: // short runs with short gaps
			f = make([]byte, fragSize)
			for j := rng.IntN(50); j < fragSize; j += 1 + rng.IntN(6) {
				f[j] = byte(1 + rng.IntN(255))
			}
		}
		enc := encodeFrag(nil, f)
		if allZero(f) {
			if len(enc) != 0 {
				t.Fatalf("all-zero fragment encoded as %x", enc)
			}
			continue
		}
		trimmed := bytes.TrimRight(f, "\x00")
		skip := len(trimmed) - len(bytes.TrimLeft(trimmed, "\x00"))
		if dense := uvarintLen(skip) + len(trimmed) - skip; len(enc) > dense {
			t.Fatalf("encoded in %d bytes, one run takes %d", len(enc), dense)
		}
		at, data, err := decodeFrag([]byte("k"), m, 3, enc, &buf)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, fragSize)
		copy(got[at-3*fragSize:], data)
		if !bytes.Equal(got, f) {
			t.Fatalf("iteration %d: fragment changed in a round trip through %x", iter, enc)
		}
	}
	// A sparse fragment's cost follows its bits, not their span.
	if n := len(encodeFrag(nil, sparseFrag(rng, 8))); n > 8*4+2 {
		t.Errorf("8 bits stored in %d bytes", n)
	}
}

// bitTwin is the bit next to bit in its pair (bit^1): set or not.
func bitTwin(set map[int64]bool, bit int64) int {
	if set[bit^1] {
		return 1
	}
	return 0
}

// A SETBIT inside a fragmented string's length writes its fragment and
// not the metadata: WATCH still sees it as a change, and one that
// changes nothing is still none.
func TestFragStringEditTouchesWatch(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	cl, other := newClient(t, s, 0, nil), newClient(t, s, 0, nil)
	if err := cl.SetBit(ctx, "w", 1<<22, 1).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bit     int64
		value   int
		aborted bool
	}{{1 << 21, 1, true}, {1 << 21, 1, false}, {1 << 22, 0, true}, {8, 0, false}} {
		err := cl.Watch(ctx, func(tx *redis.Tx) error {
			if err := other.SetBit(ctx, "w", tc.bit, tc.value).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Ping(ctx)
				return nil
			})
			return err
		}, "w")
		if aborted := errors.Is(err, redis.TxFailedErr); aborted != tc.aborted || (err != nil && !aborted) {
			t.Errorf("SETBIT w %d %d under WATCH: EXEC error %v, want aborted %v", tc.bit, tc.value, err, tc.aborted)
		}
	}
	if n := cl.StrLen(ctx, "w").Val(); n != 1<<19+1 {
		t.Errorf("STRLEN = %d", n)
	}
}
