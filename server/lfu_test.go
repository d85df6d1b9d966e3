package server

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestLFULikeRedis compares OBJECT FREQ with redis-server's under
// allkeys-lfu with lfu-log-factor 0, where every access increments the
// counter (p = 1), so both servers' counters are exact: new keys (SET,
// RESTORE with and without FREQ) and seeded random accesses through
// commands that use a key (GET, SETRANGE, APPEND, MGET, TOUCH) and that do
// not (EXISTS, TYPE, TTL, OBJECT). Keys are only
// used while they exist and never re-created: lsmgo's counters live in
// slots that outlive a key (lfu.go), where Redis starts a re-created key
// afresh. Also Redis' errors: OBJECT FREQ under another policy, OBJECT
// IDLETIME under LFU.
func TestLFULikeRedis(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	rng := newRand(3)
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	add("FLUSHALL")
	add("SET", "dumped", "10")
	add("CONFIG", "SET", "maxmemory-policy", "noeviction")
	add("OBJECT", "FREQ", "dumped")
	add("CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LFU")
	add("CONFIG", "GET", "maxmemory-policy")
	add("CONFIG", "SET", "maxmemory-policy", "lfu")
	add("CONFIG", "SET", "lfu-log-factor", "0")
	add("CONFIG", "SET", "lfu-decay-time", "0")
	add("OBJECT", "IDLETIME", "dumped")
	add("OBJECT", "FREQ", "nosuch")
	var live []string
	for i := range 400 {
		switch n := rng.IntN(10); {
		case n == 0 || len(live) == 0:
			k := "k" + strconv.Itoa(i)
			// Not an integer: Redis would share the object of a small one.
			add("SET", k, "v"+strconv.Itoa(i))
			live = append(live, k)
		case n == 1:
			k := "r" + strconv.Itoa(i)
			args := []string{"RESTORE", k, "0", "\x00\x05hello\n\x00cr\xdfve4 \n"}
			if rng.IntN(2) == 0 {
				args = append(args, "FREQ", strconv.Itoa(rng.IntN(256)))
			}
			add(args...)
			live = append(live, k)
		default:
			k := live[rng.IntN(len(live))]
			switch rng.IntN(9) {
			case 0:
				add("GET", k)
			case 1:
				add("SETRANGE", k, "1", "x")
			case 2:
				add("APPEND", k, "1")
			case 3:
				add("MGET", k, live[rng.IntN(len(live))])
			case 4:
				add("TOUCH", k)
			case 5:
				add(pick(rng.IntN(3), "EXISTS", "TYPE", "TTL"), k)
			default:
				add("OBJECT", "FREQ", k)
			}
		}
	}
	for _, k := range live {
		add("OBJECT", "FREQ", k)
	}
	add("CONFIG", "SET", "maxmemory-policy", "noeviction")
	diffSequence(t, ours, theirs, cmds, func(v resp.Value) string { return render(v, exact) })
}

// diffSequence sends cmds one at a time to both servers and fails at the
// first reply whose rendering differs.
func diffSequence(t *testing.T, ours, theirs *diffConn, cmds [][]string, show func(resp.Value) string) {
	t.Helper()
	for i, cmd := range cmds {
		ours.send(cmd)
		theirs.send(cmd)
		got, err := ours.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		want, err := theirs.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := show(got[0]), show(want[0]); g != w {
			t.Fatalf("command %d %q:\n lsmgo: %s\n redis: %s", i, cmd, g, w)
		}
	}
}

func pick(i int, s ...string) string { return s[i] }

// TestLFUNoTouch: under CLIENT NO-TOUCH only TOUCH counts an access.
func TestLFUNoTouch(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu")
	c.ConfigSet(ctx, "lfu-log-factor", "0")
	c.Set(ctx, "k", "v", 0)
	freq := func() int64 { return c.ObjectFreq(ctx, "k").Val() }
	eq(t, "after SET", freq(), int64(lfuInitVal))
	c.Do(ctx, "CLIENT", "NO-TOUCH", "ON")
	c.Get(ctx, "k")
	eq(t, "after GET, no-touch", freq(), int64(lfuInitVal))
	c.Touch(ctx, "k")
	eq(t, "after TOUCH, no-touch", freq(), int64(lfuInitVal+1))
	c.Do(ctx, "CLIENT", "NO-TOUCH", "OFF")
	c.Get(ctx, "k")
	eq(t, "after GET", freq(), int64(lfuInitVal+2))
}

// TestLFUCounter: Redis' logarithmic counter grows as Redis documents
// for lfu-log-factor 10 (100 accesses: 10, 100,000: 142, a million: 255)
// and loses one per lfu-decay-time minutes.
func TestLFUCounter(t *testing.T) {
	var lc lfuClock
	key := []byte("k")
	const now = 1_000_000
	counts := map[int]uint32{}
	for i := 1; i <= 1_000_000; i++ {
		lc.touch(key, now, 10, 1)
		if i == 100 || i == 100_000 || i == 1_000_000 {
			counts[i] = lc.freq(key, now, 1)
		}
	}
	if c := counts[100]; c < 7 || c > 15 {
		t.Errorf("after 100 accesses: %d", c)
	}
	if c := counts[100_000]; c < 120 || c > 165 {
		t.Errorf("after 100,000 accesses: %d", c)
	}
	eq(t, "after a million accesses", counts[1_000_000], uint32(255))
	c := counts[100_000]
	lc.set(key, now, c)
	eq(t, "after 5 idle minutes", lc.freq(key, now+5*60, 1), c-5)
	eq(t, "after 5 idle minutes, decay 2", lc.freq(key, now+5*60, 2), c-2)
	eq(t, "decay off", lc.freq(key, now+5*60, 0), c)
	eq(t, "after days", lc.freq(key, now+86400*2, 1), uint32(0))
	lc.set(key, now, 200)
	eq(t, "set", fmt.Sprint(lc.freq(key, now, 1)), "200")
}
