package server

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestSortRedis sends seeded random SORT and SORT_RO commands, with every
// option, over lists, sets and sorted sets, to redis-server and this
// server, and compares the replies and the lists STORE leaves. Where
// Redis' order depends on its hash tables (a set not sorted, BY a
// constant), the replies are compared as multisets; ALPHA BY on a set or
// sorted set sorts by keys unique to each element ("u_*"), since ties
// there keep Redis' table order.
func TestSortRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	theirs := testutil.Dial(t, "unix", sock)
	ours := testutil.Dial(t, "tcp", s.Addr().String())
	both := func(args ...string) {
		mustDo(t, theirs, args...)
		mustDo(t, ours, args...)
	}
	total := 0
	for seed := range int64(4) {
		rng := newRand(seed)
		both("FLUSHALL")
		pool := []string{"0", "1", "2", "10", "-3", "1.5", "007", "1e3", "apple", "Banana", "cherry", "b", "a b", ""}
		elem := func() string { return pool[rng.IntN(len(pool))] }
		numeric := func() string { return pool[rng.IntN(7)] }
		var list, set []string
		for range 5 + rng.IntN(20) {
			list = append(list, elem())
		}
		both(append([]string{"RPUSH", "L", "9"}, list...)...)
		for range 5 + rng.IntN(20) {
			set = append(set, numeric())
		}
		both(append([]string{"SADD", "N", "8"}, set...)...)
		both(append([]string{"SADD", "S"}, pool...)...)
		zadd := []string{"ZADD", "Z"}
		for i, p := range pool {
			zadd = append(zadd, strconv.Itoa(rng.IntN(5)), p)
			both("SET", "u_"+p, fmt.Sprintf("%03d", (i*5)%len(pool))) // 5 and 14 are coprime: unique
			if rng.IntN(3) > 0 {
				both("SET", "w_"+p, strconv.Itoa(rng.IntN(1000)-500))
			}
			if rng.IntN(3) > 0 {
				both("HSET", "h_"+p, "f", strconv.Itoa(rng.IntN(100)), "g", "G"+p)
			}
			if rng.IntN(2) > 0 {
				both("SET", "n_"+p, "name-"+p)
			}
		}
		both(zadd...)
		both("SET", "str", "x")
		both("SETBIT", "n_apple", "600000", "1") // past 64 KiB: fragments here
		both("HSET", "h_x", "f", "1")
		both("SET", "w_9", "not a number")

		for range 150 {
			key := []string{"L", "N", "S", "Z", "missing", "str"}[rng.IntN(6)]
			cmd := []string{"SORT", key}
			if rng.IntN(5) == 0 {
				cmd[0] = "SORT_RO"
			}
			alpha := key == "S" || key == "L" && slices.ContainsFunc(list, func(e string) bool { _, err := strconv.ParseFloat(e, 64); return err != nil }) || rng.IntN(3) == 0
			if alpha && rng.IntN(5) > 0 {
				cmd = append(cmd, "ALPHA")
			}
			limited := rng.IntN(3) == 0
			if limited {
				cmd = append(cmd, "LIMIT", strconv.Itoa(rng.IntN(8)-2), strconv.Itoa(rng.IntN(10)-2))
			}
			unordered := false
			if rng.IntN(2) == 0 {
				by := []string{"w_*", "h_*->f", "nosort", "h_*->", "w_*->f", "u_*"}[rng.IntN(6)]
				if slices.Contains(cmd, "ALPHA") && (key != "L" || limited) && by != "nosort" {
					by = "u_*"
				}
				cmd = append(cmd, "BY", by)
				unordered = by == "nosort" && (key == "S" || key == "N")
			}
			for range rng.IntN(3) {
				cmd = append(cmd, "GET", []string{"#", "n_*", "h_*->g", "h_*->f", "nokey_*", "nostar"}[rng.IntN(6)])
			}
			if rng.IntN(2) == 0 {
				cmd = append(cmd, []string{"ASC", "DESC", "desc"}[rng.IntN(3)])
			}
			store := cmd[0] == "SORT" && rng.IntN(4) == 0
			if store {
				cmd = append(cmd, "STORE", []string{"dst", "L2", "str2"}[rng.IntN(3)])
				unordered = false // Redis sorts a set it stores
			}
			if rng.IntN(25) == 0 {
				cmd = append(cmd, []string{"LIMIT", "BY", "BOGUS", "STORE", "GET"}[rng.IntN(5)])
			}
			want, got := sortReply(t, theirs, cmd, unordered), sortReply(t, ours, cmd, unordered)
			if want != got {
				t.Fatalf("seed %d: %q\nredis %s\nlsmgo %s", seed, cmd, want, got)
			}
			if store {
				dst := cmd[len(cmd)-1]
				want, got := readBack(t, theirs, dst), readBack(t, ours, dst)
				if want != got {
					t.Fatalf("seed %d: %q stored\nredis %s\nlsmgo %s", seed, cmd, want, got)
				}
			}
			total++
		}
	}
	t.Logf("%d SORT commands compared", total)
}

// sortReply renders a SORT reply, its items sorted when unordered.
func sortReply(t *testing.T, c *testutil.Client, cmd []string, unordered bool) string {
	v := doStrings(t, c, cmd)
	if v.Type != '*' {
		return fmt.Sprintf("%c%q%s%d", v.Type, v.Str, v.Err, v.Int)
	}
	items := make([]string, len(v.Array))
	for i, it := range v.Array {
		items[i] = fmt.Sprintf("%q%v", it.Str, it.Null)
	}
	if unordered {
		slices.Sort(items)
		if slices.Contains(cmd, "LIMIT") {
			// Redis cuts the range from its table order: only the
			// count is comparable.
			return fmt.Sprint(len(items))
		}
	}
	return fmt.Sprint(items)
}
