package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestRedisDiffNotify runs the differential test's seeded random commands
// over every type (the diffGroups, MULTI/EXEC included) against lsmgo and
// redis-server with every keyspace event on, and compares, after each
// pipelined round, the replies and the exact sequence of events a
// subscriber to '__key*__:*' received: channel, payload and order.
func TestRedisDiffNotify(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	perSeed := 6000
	if testing.Short() {
		perSeed = 3000
	}
	for seed := range uint64(3) {
		proto := 2 + int(seed%2)
		t.Run(fmt.Sprintf("seed=%d/resp%d", seed, proto), func(t *testing.T) {
			ours := dialDiff(t, "tcp", s.Addr().String(), proto)
			theirs := dialDiff(t, "unix", redisSock, proto)
			flags := []string{"KEAn", "Kg$lszhn", "Elh"}[seed%3]
			for _, d := range []*diffConn{ours, theirs} {
				d.do(t, "FLUSHALL")
				d.do(t, "CONFIG", "SET", "notify-keyspace-events", flags)
			}
			t.Cleanup(func() {
				for _, d := range []*diffConn{ours, theirs} {
					d.do(t, "CONFIG", "SET", "notify-keyspace-events", "")
				}
			})
			subOurs := dialDiff(t, "tcp", s.Addr().String(), 2)
			subTheirs := dialDiff(t, "unix", redisSock, 2)
			for _, d := range []*diffConn{subOurs, subTheirs} {
				d.do(t, "PSUBSCRIBE", "__key*__:*")
			}
			g := &diffGen{rng: rand.New(rand.NewPCG(seed, 0x6e07)), proto: proto}
			compareEventRounds(t, g, seed, perSeed, ours, theirs, func(round int) (string, string) {
				token := fmt.Sprint(round)
				return keyEvents(t, subOurs, token), keyEvents(t, subTheirs, token)
			})
		})
	}
}

// compareEventRounds runs runDiffWith's rounds of g's commands on ours
// and theirs and, after each, compares the events both sides fired,
// which events(round) returns; it fails at the first round that differs,
// or when too few events were compared to tell anything.
func compareEventRounds(t *testing.T, g *diffGen, seed uint64, perSeed int, ours, theirs *diffConn, events func(round int) (ours, theirs string)) {
	t.Helper()
	n := 0
	runDiffWith(t, g, seed, perSeed, ours, theirs, func(round int) {
		evOurs, evTheirs := events(round)
		if evOurs != evTheirs {
			a, b := strings.Split(evOurs, "\n"), strings.Split(evTheirs, "\n")
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Fatalf("seed %d, round %d: events differ from line %d\n lsmgo:\n%s\n redis:\n%s", seed, round, i, evOurs, evTheirs)
		}
		n += strings.Count(evOurs, "\n")
	})
	if n < perSeed/50 {
		t.Fatalf("only %d events for %d commands: the test sees too few to compare", n, perSeed)
	}
	t.Logf("%d events compared", n)
}

// keyEvents returns the events a subscriber has received, one
// "channel payload" line each, in order: the frames before the answer to
// a PING carrying token.
func keyEvents(t *testing.T, d *diffConn, token string) string {
	t.Helper()
	d.send([]string{"PING", token})
	d.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := d.nc.Write(d.out); err != nil {
		t.Fatal(err)
	}
	d.out = d.out[:0]
	var b strings.Builder
	for {
		v, err := d.rd.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Array) == 2 && string(v.Array[0].Str) == "pong" {
			if string(v.Array[1].Str) != token {
				t.Fatalf("pong %q, want %q", v.Array[1].Str, token)
			}
			return b.String()
		}
		if len(v.Array) != 4 || string(v.Array[0].Str) != "pmessage" {
			t.Fatalf("unexpected frame %s", render(v, exact))
		}
		fmt.Fprintf(&b, "%s %s\n", v.Array[2].Str, v.Array[3].Str)
	}
}
