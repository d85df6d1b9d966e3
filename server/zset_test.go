package server

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
	"github.com/redis/go-redis/v9"
)

// scoresInOrder are distinct scores in ascending order, from one infinity
// to the other through the subnormals and both zeros' neighbours.
var scoresInOrder = []float64{
	math.Inf(-1), -math.MaxFloat64, -1e300, -2.5, -1, -math.SmallestNonzeroFloat64 * 4,
	-math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 1e-310, 1e-300,
	0.25, 1, 1.5, math.Nextafter(1.5, 2), 1 << 53, 1e300, math.MaxFloat64, math.Inf(1),
}

// TestScoreEncoding checks that the score index's encoding orders bytes
// as the scores' numbers, reads back to the same score, and makes -0 and
// 0 one score.
func TestScoreEncoding(t *testing.T) {
	for i, a := range scoresInOrder {
		enc := encodeScore(nil, a)
		if got := decodeScore(enc); got != a {
			t.Errorf("decode(encode(%g)) = %g", a, got)
		}
		for _, b := range scoresInOrder[i+1:] {
			if bytes.Compare(enc, encodeScore(nil, b)) >= 0 {
				t.Errorf("encode(%g) >= encode(%g)", a, b)
			}
		}
	}
	if !bytes.Equal(encodeScore(nil, math.Copysign(0, -1)), encodeScore(nil, 0)) {
		t.Error("-0 and 0 encode differently")
	}
}

// FuzzScoreEncoding checks the order and the round trip for any two
// scores but NaN, which no sorted set holds.
func FuzzScoreEncoding(f *testing.F) {
	for i := 1; i < len(scoresInOrder); i++ {
		f.Add(scoresInOrder[i-1], scoresInOrder[i])
	}
	f.Fuzz(func(t *testing.T, a, b float64) {
		if math.IsNaN(a) || math.IsNaN(b) {
			return
		}
		ea, eb := encodeScore(nil, a), encodeScore(nil, b)
		if got, want := bytes.Compare(ea, eb), cmp.Compare(a, b); got != want {
			t.Errorf("compare(encode(%g), encode(%g)) = %d, want %d", a, b, got, want)
		}
		if got := decodeScore(ea); got != a {
			t.Errorf("decode(encode(%g)) = %g", a, got)
		}
	})
}

// TestParseScore checks score parsing against what Redis 7 answers for
// the same arguments (ZADD for scores, ZCOUNT for range bounds).
func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {"-2.5", -2.5, true}, {"+3", 3, true}, {".5", 0.5, true}, {"1e3", 1000, true},
		{"inf", math.Inf(1), true}, {"+inf", math.Inf(1), true}, {"-Inf", math.Inf(-1), true},
		{"INFINITY", math.Inf(1), true}, {"0x10", 16, true}, {"0x1p-2", 0.25, true}, {"-0", 0, true},
		{"1e-310", 1e-310, true}, {"0e-500", 0, true},
		{"", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"nan", 0, false}, {"x", 0, false},
		{"1e400", 0, false}, {"1e-400", 0, false}, {"1_0", 0, false}, {"(1", 0, false}, {"0x", 0, false},
	} {
		got, ok := parseScore([]byte(tc.in))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseScore(%q) = %g, %v; want %g, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in     string
		want   float64
		ex, ok bool
	}{
		{"1", 1, false, true}, {"(1", 1, true, true}, {"", 0, false, true}, {"(", 0, true, true},
		{" 2", 2, false, true}, {"1e400", math.Inf(1), false, true}, {"(-inf", math.Inf(-1), true, true},
		{"1\x00junk", 1, false, true},
		{"x", 0, false, false}, {"((1", 0, false, false}, {"  ", 0, false, false}, {"nan", 0, false, false}, {"1 ", 0, false, false},
	} {
		got, ex, ok := parseScoreBound([]byte(tc.in))
		if ok != tc.ok || ok && (got != tc.want || ex != tc.ex) {
			t.Errorf("parseScoreBound(%q) = %g, %v, %v; want %g, %v, %v", tc.in, got, ex, ok, tc.want, tc.ex, tc.ok)
		}
	}
}

// TestSortedSets checks what TestRedisDiff does not: the key commands on
// sorted sets (RENAME copies both entries of each member under a new
// version), Redis 7.2's ZRANK WITHSCORE, which Debian's Redis 7.0 lacks,
// and sets larger than Redis' compact encoding.
func TestSortedSets(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	runSteps(t, c, []step{
		{args: []any{"ZADD", "z", "1", "a", "2", "b", "1.5", "c"}, want: int64(3)},
		{args: []any{"TYPE", "z"}, want: "zset"},
		{args: []any{"GET", "z"}, err: wrongType},
		{args: []any{"SADD", "z", "x"}, err: wrongType},
		{args: []any{"ZRANK", "z", "b", "WITHSCORE"}, want: []any{int64(2), "2"}},
		{args: []any{"ZREVRANK", "z", "a", "withscore"}, want: []any{int64(2), "1"}},
		{args: []any{"ZRANK", "z", "nope", "WITHSCORE"}, want: nil},
		{args: []any{"ZRANK", "z", "a", "WITHSCORES"}, err: "ERR syntax error"},
		{args: []any{"ZRANK", "z", "a", "WITHSCORE", "x"}, err: "ERR wrong number of arguments for 'zrank' command"},
		{args: []any{"EXPIRE", "z", "100"}, want: int64(1)},
		{args: []any{"RENAME", "z", "y"}, want: "OK"},
		{args: []any{"TTL", "y"}, want: int64(100)},
		{args: []any{"ZRANGE", "y", "0", "-1", "WITHSCORES"}, want: []any{"a", "1", "c", "1.5", "b", "2"}},
		{args: []any{"ZRANGEBYSCORE", "y", "(1", "+inf"}, want: []any{"c", "b"}},
		{args: []any{"ZADD", "z", "5", "e"}, want: int64(1)},
		{args: []any{"ZRANGE", "z", "0", "-1"}, want: []any{"e"}},
		{args: []any{"SCAN", "0", "TYPE", "zset"}, want: []any{"0", []any{"y", "z"}}},
		{args: []any{"DEL", "y"}, want: int64(1)},
		{args: []any{"ZADD", "y", "0", "q"}, want: int64(1)},
		{args: []any{"ZRANGE", "y", "0", "-1"}, want: []any{"q"}},
		{args: []any{"ZCARD", "y"}, want: int64(1)},
	})

	// Pops leave a pop mark; entries added outside it widen it.
	runSteps(t, c, []step{
		{args: []any{"ZADD", "q", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f"}, want: int64(6)},
		{args: []any{"ZPOPMIN", "q", "2"}, want: []any{"a", "1", "b", "2"}},
		{args: []any{"ZPOPMAX", "q"}, want: []any{"f", "6"}},
	})
	m, _, err := s.ks.getColl(s.db, new(keyBuf), []byte("q"), typeZSet)
	if err != nil {
		t.Fatal(err)
	}
	mark, err := s.ks.popMark(s.db, []byte("q"), m)
	if err != nil || mark.low == nil || mark.high == nil {
		t.Errorf("pop mark after ZPOPMIN and ZPOPMAX: %+v, %v; want both ends", mark, err)
	}
	runSteps(t, c, []step{
		{args: []any{"ZADD", "q", "0", "z", "9", "y"}, want: int64(2)},
		{args: []any{"ZRANGE", "q", "0", "-1"}, want: []any{"z", "c", "d", "e", "y"}},
		{args: []any{"ZRANK", "q", "y"}, want: int64(4)},
		{args: []any{"ZPOPMIN", "q"}, want: []any{"z", "0"}},
		{args: []any{"ZADD", "q", "2.5", "b"}, want: int64(1)},
		{args: []any{"ZRANGEBYSCORE", "q", "-inf", "+inf"}, want: []any{"b", "c", "d", "e", "y"}},
		{args: []any{"RENAME", "q", "q2"}, want: "OK"},
		{args: []any{"ZPOPMAX", "q2", "2"}, want: []any{"y", "9", "e", "5"}},
		{args: []any{"ZADD", "q2", "7", "x"}, want: int64(1)},
		{args: []any{"ZREVRANGE", "q2", "0", "0"}, want: []any{"x"}},
	})

	// A set past Redis' listpack size, with scores that tie.
	ctx := context.Background()
	const n = 300
	var members []redis.Z
	for i := range n {
		members = append(members, redis.Z{Score: float64(i / 3), Member: fmt.Sprintf("m%03d", i)})
	}
	if err := c.ZAdd(ctx, "big", members...).Err(); err != nil {
		t.Fatal(err)
	}
	runSteps(t, c, []step{
		{args: []any{"ZRANK", "big", "m000"}, want: int64(0)},
		{args: []any{"ZRANK", "big", "m299"}, want: int64(299)},
		{args: []any{"ZREVRANK", "big", "m150"}, want: int64(149)},
		{args: []any{"ZRANGE", "big", "-2", "-1"}, want: []any{"m298", "m299"}},
		{args: []any{"ZRANGE", "big", "1", "2", "REV"}, want: []any{"m298", "m297"}},
		{args: []any{"ZCOUNT", "big", "(10", "20"}, want: int64(30)},
		{args: []any{"ZRANGE", "big", "50", "(52", "BYSCORE", "LIMIT", "1", "2"}, want: []any{"m151", "m152"}},
	})
	var cursor uint64
	seen := map[string]bool{}
	for {
		page, next, err := c.ZScan(ctx, "big", cursor, "", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(page); i += 2 {
			seen[page[i]] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != n {
		t.Errorf("ZSCAN of %d members returned %d distinct", n, len(seen))
	}
}

// zmodel is a reference sorted set.
type zmodel map[string]float64

func (z zmodel) sorted() []zmember {
	var out []zmember
	for m, s := range z {
		out = append(out, zmember{member: []byte(m), score: s})
	}
	slices.SortFunc(out, compareZMembers)
	return out
}

func flatten(items []zmember, withScores bool) []any {
	out := []any{}
	for _, it := range items {
		out = append(out, string(it.member))
		if withScores {
			out = append(out, string(resp.AppendDouble(nil, it.score)))
		}
	}
	return out
}

// TestSortedSetAgainstModel runs seeded random writes on sorted sets of a
// few hundred members (past Redis' compact encoding, which TestRedisDiff
// never leaves) and checks ranks, ranges from both ends and lex ranges
// against a model; then again after a restart.
func TestSortedSetAgainstModel(t *testing.T) {
	const seed = 7
	rng := newRand(seed)
	dir := t.TempDir()
	s := startServer(t, func(cfg *Config) { cfg.Dir = dir })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	model := zmodel{}
	lex := zmodel{} // every score 0: the lex commands' intended use
	rounds := 1500
	if testing.Short() {
		rounds = 400
	}
	check := func(what string, got any, errText string, want any) {
		t.Helper()
		if errText != "" || !equalReply(got, want) {
			t.Fatalf("seed %d, %s: got %v %q, want %v", seed, what, got, errText, want)
		}
	}
	for round := range rounds {
		member := fmt.Sprintf("m%03d", rng.IntN(400))
		score := float64(rng.IntN(80)-40) / 4
		switch rng.IntN(6) {
		case 0, 1, 2:
			got, errText := do(ctx, c, "ZADD", "z", score, member)
			_, had := model[member]
			model[member] = score
			check("ZADD", got, errText, map[bool]int64{false: 1, true: 0}[had])
			do(ctx, c, "ZADD", "l", 0, member)
			lex[member] = 0
		case 3:
			got, errText := do(ctx, c, "ZINCRBY", "z", score, member)
			model[member] += score
			check("ZINCRBY", got, errText, string(resp.AppendDouble(nil, model[member])))
		case 4:
			got, errText := do(ctx, c, "ZREM", "z", member)
			_, had := model[member]
			delete(model, member)
			check("ZREM", got, errText, map[bool]int64{false: 0, true: 1}[had])
		default:
			if rng.IntN(10) == 0 {
				got, errText := do(ctx, c, "ZPOPMAX", "z", 2)
				sorted := model.sorted()
				popped := sorted[max(0, len(sorted)-2):]
				slices.Reverse(popped)
				for _, p := range popped {
					delete(model, string(p.member))
				}
				check("ZPOPMAX", got, errText, flatten(popped, true))
			}
		}
		if round%10 != 0 || len(model) == 0 {
			continue
		}
		sorted := model.sorted()
		n := len(sorted)
		i := rng.IntN(n)
		got, errText := do(ctx, c, "ZRANK", "z", sorted[i].member)
		check("ZRANK", got, errText, int64(i))
		got, errText = do(ctx, c, "ZREVRANK", "z", sorted[i].member)
		check("ZREVRANK", got, errText, int64(n-1-i))
		start, stop := rng.IntN(n+20)-n-10, rng.IntN(n+20)-n-10
		a, b, empty := listRange(int64(start), int64(stop), int64(n))
		want := []zmember{}
		if !empty {
			want = sorted[a : b+1]
		}
		got, errText = do(ctx, c, "ZRANGE", "z", start, stop, "WITHSCORES")
		check(fmt.Sprintf("ZRANGE %d %d", start, stop), got, errText, flatten(want, true))
		rev := slices.Clone(sorted)
		slices.Reverse(rev)
		want = []zmember{}
		if !empty {
			want = rev[a : b+1]
		}
		got, errText = do(ctx, c, "ZREVRANGE", "z", start, stop)
		check(fmt.Sprintf("ZREVRANGE %d %d", start, stop), got, errText, flatten(want, false))
		lo, hi := float64(rng.IntN(40)-20)/2, float64(rng.IntN(40)-20)/2
		want = []zmember{}
		for _, it := range sorted {
			if it.score > lo && it.score <= hi {
				want = append(want, it)
			}
		}
		got, errText = do(ctx, c, "ZCOUNT", "z", "("+strconv.FormatFloat(lo, 'g', -1, 64), hi)
		check("ZCOUNT", got, errText, int64(len(want)))
		slices.Reverse(want)
		got, errText = do(ctx, c, "ZRANGE", "z", hi, "("+strconv.FormatFloat(lo, 'g', -1, 64), "BYSCORE", "REV", "LIMIT", 1, 5)
		check("ZRANGE BYSCORE REV LIMIT", got, errText, flatten(want[min(1, len(want)):min(6, len(want))], false))
		from, to := fmt.Sprintf("m%03d", rng.IntN(400)), fmt.Sprintf("m%03d", rng.IntN(400))
		want = []zmember{}
		for _, it := range lex.sorted() {
			if string(it.member) >= from && string(it.member) < to {
				want = append(want, it)
			}
		}
		got, errText = do(ctx, c, "ZRANGEBYLEX", "l", "["+from, "("+to)
		check("ZRANGEBYLEX", got, errText, flatten(want, false))
		got, errText = do(ctx, c, "ZLEXCOUNT", "l", "["+from, "("+to)
		check("ZLEXCOUNT", got, errText, int64(len(want)))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, func(cfg *Config) { cfg.Dir = dir })
	c = newClient(t, s, 2, nil)
	got, errText := do(ctx, c, "ZRANGE", "z", 0, -1, "WITHSCORES")
	check("ZRANGE after restart", got, errText, flatten(model.sorted(), true))
	got, errText = do(ctx, c, "ZCARD", "l")
	check("ZCARD after restart", got, errText, int64(len(lex)))
}
