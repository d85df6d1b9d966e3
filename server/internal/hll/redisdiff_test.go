package hll

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// redisHLL runs HLL commands on a real redis-server and mirrors them with
// this package, comparing every reply and value byte for byte.
type redisHLL struct {
	t      *testing.T
	c      *testutil.Client
	ours   map[string][]byte
	sparse int
	// seen counts outcomes (error texts, dense values) so the test can
	// require that it exercised each.
	seen map[string]int
}

func newRedisHLL(t *testing.T) *redisHLL {
	c := testutil.Dial(t, "unix", testutil.StartRedis(t))
	return &redisHLL{t: t, c: c, ours: map[string][]byte{}, seen: map[string]int{}, sparse: DefaultSparseMaxBytes}
}

func (r *redisHLL) do(args ...string) resp.Value {
	r.t.Helper()

	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return r.c.Do(r.t, bs...)
}

// reply renders what this package answered in Redis' terms.
func reply(n int64, err error) string {
	if err != nil {
		return "-" + err.Error()
	}
	return ":" + strconv.FormatInt(n, 10)
}

// errText is a reply's error text, or "ok".
func errText(reply string) string {
	if reply[0] == '-' {
		return reply[1:]
	}
	return "ok"
}

func theirs(v resp.Value) string {
	switch v.Type {
	case '-':
		return "-" + v.Err
	case ':':
		return ":" + strconv.FormatInt(v.Int, 10)
	case '+':
		return "+" + string(v.Str)
	}
	return fmt.Sprintf("%c%q", v.Type, v.Str)
}

func (r *redisHLL) pfadd(key string, elems ...string) {
	r.t.Helper()
	want := theirs(r.do(append([]string{"PFADD", key}, elems...)...))
	bs := make([][]byte, len(elems))
	for i, e := range elems {
		bs[i] = []byte(e)
	}
	got := reply(r.ourAdd(key, bs))
	r.seen["PFADD "+errText(want)]++
	if got != want {
		r.t.Fatalf("PFADD %s %q: ours %s, redis %s", key, elems, got, want)
	}
	r.compareValue(key, want[0] == '-')
}

// ourAdd is PFADD over the package: create, check, add.
func (r *redisHLL) ourAdd(key string, elems [][]byte) (int64, error) {
	v, exists := r.ours[key]
	if !exists {
		v = New()
	} else if err := Check(v); err != nil {
		return 0, err
	}
	out, changed, err := Add(v, elems, r.sparse)
	if err != nil {
		return 0, err
	}
	if !exists {
		changed = true
	}
	r.ours[key] = out
	if changed {
		return 1, nil
	}
	return 0, nil
}

func (r *redisHLL) pfcount(keys ...string) {
	r.t.Helper()
	want := theirs(r.do(append([]string{"PFCOUNT"}, keys...)...))
	got := reply(r.ourCount(keys))
	r.seen[fmt.Sprintf("PFCOUNT(%d) %s", min(len(keys), 2), errText(want))]++
	if got != want {
		for _, k := range keys {
			r.t.Logf("%s: % x", k, r.ours[k])
		}
		r.t.Fatalf("PFCOUNT %q: ours %s, redis %s", keys, got, want)
	}
	for _, k := range keys {
		r.compareValue(k, false)
	}
}

func (r *redisHLL) ourCount(keys []string) (int64, error) {
	if len(keys) == 1 {
		v, ok := r.ours[keys[0]]
		if !ok {
			return 0, nil
		}
		if err := Check(v); err != nil {
			return 0, err
		}
		card, updated, err := Count(v)
		if updated != nil {
			r.ours[keys[0]] = updated
		}
		return int64(card), err
	}
	var u Union
	for _, k := range keys {
		if v, ok := r.ours[k]; ok {
			if err := Check(v); err != nil {
				return 0, err
			}
			if err := u.Merge(v); err != nil {
				return 0, err
			}
		}
	}
	return int64(u.Count()), nil
}

func (r *redisHLL) pfmerge(dest string, srcs ...string) {
	r.t.Helper()
	want := theirs(r.do(append([]string{"PFMERGE", dest}, srcs...)...))
	got := "+OK"
	if err := r.ourMerge(dest, srcs); err != nil {
		got = "-" + err.Error()
	}
	r.seen["PFMERGE "+errText(want)]++
	if got != want {
		r.t.Fatalf("PFMERGE %s %q: ours %s, redis %s", dest, srcs, got, want)
	}
	if want[0] != '-' {
		r.compareValue(dest, false)
	}
}

func (r *redisHLL) ourMerge(dest string, srcs []string) error {
	var u Union
	for _, k := range append([]string{dest}, srcs...) {
		if v, ok := r.ours[k]; ok {
			if err := Check(v); err != nil {
				return err
			}
			if err := u.Merge(v); err != nil {
				return err
			}
		}
	}
	out, err := u.Store(r.ours[dest], r.sparse)
	if err != nil {
		return err
	}
	r.ours[dest] = out
	return nil
}

// compareValue compares the key's value in both. After an error on a
// corrupt value Redis may have kept part of a PFADD; this package keeps
// nothing, so the value is then copied from Redis instead.
func (r *redisHLL) compareValue(key string, afterError bool) {
	r.t.Helper()
	v := r.do("GET", key)
	if afterError {
		if v.Null {
			delete(r.ours, key)
		} else {
			r.ours[key] = v.Str
		}
		return
	}
	ours, ok := r.ours[key]
	if ok && Check(ours) == nil {
		r.seen[fmt.Sprintf("encoding %d", ours[4])]++
	}
	if v.Null != !ok || !bytes.Equal(v.Str, ours) {
		r.t.Fatalf("GET %s:\nours  % x\nredis % x", key, ours, v.Str)
	}
}

func (r *redisHLL) set(key string, val []byte) {
	r.t.Helper()
	r.c.Do(r.t, []byte("SET"), []byte(key), val)
	r.ours[key] = bytes.Clone(val)
}

// TestRedisDiffHLL runs seeded random PFADD/PFCOUNT/PFMERGE sequences on
// redis-server and on this package, over keys that grow from sparse past
// promotion to dense, with corrupted values written by SET among them.
func TestRedisDiffHLL(t *testing.T) {
	r := newRedisHLL(t)
	keys := []string{"a", "b", "c", "d"}
	ops := 0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 0x4c4c))
		r.do("FLUSHALL")
		clear(r.ours)
		r.sparse = []int{DefaultSparseMaxBytes, 64, 500, 3000}[seed]
		r.do("CONFIG", "SET", "hll-sparse-max-bytes", strconv.Itoa(r.sparse))
		universe := 10 + rng.IntN(5000)
		for range 2500 {
			key := keys[rng.IntN(len(keys))]
			ops++
			switch n := rng.IntN(100); {
			case n < 60:
				elems := make([]string, rng.IntN(1+rng.IntN(40)))
				for i := range elems {
					elems[i] = strconv.Itoa(rng.IntN(universe))
				}
				r.pfadd(key, elems...)
			case n < 75:
				r.pfcount(key)
			case n < 82:
				r.pfcount(keys[:1+rng.IntN(len(keys))]...)
			case n < 90:
				r.pfmerge(key, keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))])
			case n < 93:
				if v, ok := r.ours[key]; ok {
					r.set(key, corrupt(rng, v))
				}
			default:
				r.do("DEL", key)
				delete(r.ours, key)
			}
		}
	}
	t.Logf("%d operations compared; outcomes %v", ops, r.seen)
	for _, cmd := range []string{"PFADD", "PFCOUNT(1)", "PFCOUNT(2)", "PFMERGE"} {
		for _, outcome := range []string{"ok", ErrNotHLL.Error(), ErrCorrupt.Error()} {
			if r.seen[cmd+" "+outcome] == 0 {
				t.Errorf("no %s answered %q: the sequence no longer covers it", cmd, outcome)
			}
		}
	}
	if r.seen["encoding 0"] == 0 || r.seen["encoding 1"] == 0 {
		t.Error("the sequence did not compare both dense and sparse values")
	}
}

// corrupt returns a damaged copy of an HLL value: a flipped byte, a
// truncation, extra bytes, or a wrong header byte.
func corrupt(rng *rand.Rand, v []byte) []byte {
	out := bytes.Clone(v)
	switch rng.IntN(5) {
	case 0:
		if len(out) > 0 {
			out[rng.IntN(len(out))] ^= byte(1 + rng.IntN(255))
		}
	case 1:
		out = out[:rng.IntN(len(out)+1)]
	case 2:
		out = append(out, byte(rng.IntN(256)))
	case 3:
		if len(out) > 4 {
			out[4] = byte(rng.IntN(3))
		}
	default:
		// A body byte in the sparse region, where the runs live.
		if len(out) > headerSize {
			out[headerSize+rng.IntN(len(out)-headerSize)] = byte(rng.IntN(256))
		}
	}
	return out
}

// TestRedisDiffHLLHandmade compares Redis' and this package's answers on
// hand-built sparse bodies at the edges of validity: runs that overflow
// the register count in each opcode, a truncated XZERO, a body that ends
// early, and values that need promotion.
func TestRedisDiffHLLHandmade(t *testing.T) {
	r := newRedisHLL(t)
	hdr := []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80")
	bodies := map[string][]byte{
		"empty":           {0x7f, 0xff},
		"val after full":  {0x7f, 0xff, 0x80},
		"zero after full": {0x7f, 0xff, 0x00},
		"xzero overflow":  {0x7f, 0xff, 0x40, 0x00},
		"val at end":      {0x7f, 0xfe, 0x80},
		"short":           {0x7f, 0xfd},
		"long":            {0x40, 0x00, 0x7f, 0xff},
		"truncated xzero": {0x7f, 0xfe, 0x7f},
		"only xzero byte": {0x7f},
		"no body":         {},
		"vals":            {0x80, 0xfb, 0x7f, 0xf0, 0x00, 0xff, 0x80, 0x84, 0x88, 0x8c},
		"split vals":      {0x83, 0x7f, 0xfb},
	}
	for name, body := range bodies {
		for _, op := range []string{"pfadd", "pfadd many", "pfcount", "pfcount2", "pfmerge"} {
			r.do("FLUSHALL")
			clear(r.ours)
			r.set("k", append(append([]byte(nil), hdr...), body...))
			t.Logf("%s: %s", name, op)
			switch op {
			case "pfadd":
				r.pfadd("k", "a")
			case "pfadd many":
				var elems []string
				for i := range 200 {
					elems = append(elems, strconv.Itoa(i))
				}
				r.pfadd("k", elems...)
			case "pfcount":
				r.pfcount("k")
			case "pfcount2":
				r.pfadd("j", "x", "y")
				r.pfcount("k", "j")
			case "pfmerge":
				r.pfmerge("j", "k")
			}
		}
	}
}
