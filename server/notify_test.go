package server

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRedisDiffNotifyConfig sets notify-keyspace-events to random strings
// of Redis' letters (and a few others) on both servers and compares the
// replies of CONFIG SET and the canonical string CONFIG GET returns.
func TestRedisDiffNotifyConfig(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	rng := rand.New(rand.NewPCG(7, 11))
	const letters = "AKEg$lshzxetmdnAKE"
	var rounds [][]string
	for range 400 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		if rng.IntN(20) == 0 {
			b.WriteByte("Qa1 "[rng.IntN(4)])
		}
		rounds = append(rounds, []string{"CONFIG", "SET", "notify-keyspace-events", b.String()},
			[]string{"CONFIG", "GET", "notify-keyspace-events"})
	}
	rounds = append(rounds, []string{"CONFIG", "SET", "notify-keyspace-events", ""})
	diffRound(t, 0, rounds, ours, theirs)
}

// TestRedisDiffNotifyExpired compares the "expired" events of both
// servers: keys whose expiry passes (set before and after the events are
// turned on), and keys whose expiry a command removed or replaced first,
// which must not be announced. Redis' active expiry works in cycles, so
// the events are compared as a set, collected until every key that
// expires has been announced and the keys that must not expire are past
// the expiry they had.
//
// The keys a later command must still find (before, persisted, deleted,
// moved, later) have 1.5 s, so that a loaded machine's delay between two
// commands cannot let them expire first.
func TestRedisDiffNotifyExpired(t *testing.T) {
	const window = 1500 // ms
	const expired = 6   // before, str, psetex, hash, list, renamed
	redisSock := startRedis(t)
	s := startServer(t, nil)
	var got [2][]string
	for i, d := range []*diffConn{
		dialDiff(t, "tcp", s.Addr().String(), 2),
		dialDiff(t, "unix", redisSock, 2),
	} {
		network, addr := "tcp", s.Addr().String()
		if i == 1 {
			network, addr = "unix", redisSock
		}
		sub := dialDiff(t, network, addr, 2)
		sub.do(t, "PSUBSCRIBE", "__key*__:*")
		px := strconv.Itoa(window)
		for _, cmd := range [][]string{
			{"FLUSHALL"},
			{"CONFIG", "SET", "notify-keyspace-events", ""},
			{"SET", "before", "1", "PX", px},
			{"CONFIG", "SET", "notify-keyspace-events", "Ex"},
			{"SET", "str", "1", "PX", "100"},
			{"PSETEX", "psetex", "200", "1"},
			{"HSET", "hash", "f", "v"},
			{"PEXPIRE", "hash", "150"},
			{"RPUSH", "list", "a"},
			{"PEXPIRE", "list", "50"},
			{"SET", "persisted", "1", "PX", px},
			{"PERSIST", "persisted"},
			{"SET", "deleted", "1", "PX", px},
			{"DEL", "deleted"},
			{"SET", "moved", "1", "PX", px},
			{"RENAME", "moved", "renamed"},
			{"SET", "later", "1", "PX", px},
			{"PEXPIRE", "later", "100000"},
		} {
			d.do(t, cmd...)
		}
		// A key wrongly left to expire would have by window after the
		// last command, and Redis' active expiry (10 cycles a second)
		// announces it within a few cycles.
		quiet := time.Now().Add(window*time.Millisecond + 500*time.Millisecond)
		var events []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if e := strings.TrimSpace(keyEvents(t, sub, "x")); e != "" {
				events = append(events, strings.Split(e, "\n")...)
			}
			if len(events) >= expired && time.Now().After(quiet) || time.Now().After(deadline) {
				break
			}
		}
		slices.Sort(events)
		got[i] = events
		d.do(t, "CONFIG", "SET", "notify-keyspace-events", "")
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("expired events differ:\n lsmgo: %q\n redis: %q", got[0], got[1])
	}
	if len(got[0]) != expired {
		t.Fatalf("want %d expired keys, got %q", expired, got[0])
	}
}
