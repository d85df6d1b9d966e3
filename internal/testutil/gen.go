package testutil

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// KeySpace draws keys from a fixed set of N keys, small enough that writes,
// overwrites, deletes and snapshots keep meeting the same keys. Keys vary
// in length and share prefixes, which exercises prefix compression, and
// their byte order differs from their index order.
type KeySpace struct {
	// N is the number of distinct keys.
	N int
}

// Key returns the i-th key (0 <= i < N). Key 0 is the empty key, which
// is a valid user key and the smallest possible one.
func (ks KeySpace) Key(i int) []byte {
	if i == 0 {
		return []byte{}
	}
	// Every fifth key gets a suffix, so some keys are prefixes of others.
	k := fmt.Appendf(nil, "k%d", i)
	if i%5 == 0 {
		k = fmt.Appendf(k, "/%0*d", i%7, i)
	}
	return k
}

// Random returns a random key of the space.
func (ks KeySpace) Random(rng *rand.Rand) []byte { return ks.Key(rng.IntN(ks.N)) }

// Bound returns a random iterator bound or seek key: usually a key of the
// space, sometimes a key just before or after one (not in the space), and
// nil (unbounded) with probability nilPercent/100.
func (ks KeySpace) Bound(rng *rand.Rand, nilPercent int) []byte {
	if rng.IntN(100) < nilPercent {
		return nil
	}
	k := ks.Random(rng)
	switch rng.IntN(4) {
	case 0:
		// The smallest key greater than k.
		return append(k, 0)
	case 1:
		if len(k) > 0 {
			// A key smaller than k that sorts right before it.
			return k[:len(k)-1]
		}
	}
	return k
}

// Value returns a fresh value for key with a size drawn from a spread of
// sizes: empty, small, up to ~2 KiB, and rarely 100 KiB. The value starts
// with the key and tag, so a wrong value is recognizable in a failure
// message, and the filler is partly repetitive, so compression has work.
func Value(rng *rand.Rand, key []byte, tag uint64) []byte {
	var n int
	switch r := rng.IntN(1000); {
	case r < 50:
		return []byte{}
	case r < 700:
		n = rng.IntN(64)
	case r < 998:
		n = rng.IntN(2048)
	default:
		n = 100 << 10
	}
	v := fmt.Appendf(make([]byte, 0, n+32), "%s#%d:", key, tag)
	for len(v) < n {
		if rng.IntN(2) == 0 {
			// A run of one byte compresses well.
			c := byte('a' + rng.IntN(26))
			for j := rng.IntN(32); j >= 0 && len(v) < n; j-- {
				v = append(v, c)
			}
			continue
		}
		v = binary.LittleEndian.AppendUint64(v, rng.Uint64())
	}
	return v
}

// Describe summarizes a value for failure messages: its length and a
// prefix, since values can be 100 KiB.
func Describe(v []byte) string {
	if v == nil {
		return "<nil>"
	}
	const show = 40
	if len(v) <= show {
		return fmt.Sprintf("%q (%d bytes)", v, len(v))
	}
	return fmt.Sprintf("%q... (%d bytes)", v[:show], len(v))
}
