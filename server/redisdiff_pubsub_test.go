package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestRedisDiffPubsub sends the same seeded random Pub/Sub commands to
// lsmgo and to redis-server over three connections each (RESP2 and RESP3
// mixed), and compares every frame each connection receives: subscribe
// and unsubscribe confirmations, message and pmessage frames, PUBSUB
// counts, the subscribed-mode errors and PING replies. After each command
// every connection gets a PING with a fresh token, and the frames before
// its answer are that step's; they are compared as a multiset, since
// Redis lists channels, patterns and the messages of several matching
// patterns in its dict order.
func TestRedisDiffPubsub(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	steps := 3000
	if testing.Short() {
		steps = 1500
	}
	total := 0
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			var ours, theirs []*diffConn
			protos := []int{2, 3, 2 + int(seed%2)}
			for _, proto := range protos {
				ours = append(ours, dialDiff(t, "tcp", s.Addr().String(), proto))
				theirs = append(theirs, dialDiff(t, "unix", redisSock, proto))
			}
			rng := rand.New(rand.NewPCG(seed, 0x9b5))
			for step := range steps {
				who := rng.IntN(len(protos))
				args := pubsubCmd(rng)
				for i := range protos {
					var a []string
					if i == who {
						a = args
					}
					got := pubsubStep(t, ours[i], a, step)
					want := pubsubStep(t, theirs[i], a, step)
					if got != want {
						t.Fatalf("seed %d step %d: connection %d (RESP%d) after %q on connection %d:\n lsmgo: %s\n redis: %s",
							seed, step, i, protos[i], args, who, got, want)
					}
				}
				total++
			}
			for _, d := range append(ours, theirs...) {
				d.send([]string{"RESET"})
				d.flushRead(1)
			}
		})
	}
	t.Logf("%d Pub/Sub commands compared", total)
}

// pubsubCmd generates one Pub/Sub command over small pools of channels,
// patterns and messages, and now and then another command (refused in
// RESP2 subscribed mode) or a RESET.
func pubsubCmd(rng *rand.Rand) []string {
	pick := func(pool ...string) string { return pool[rng.IntN(len(pool))] }
	channel := func() string { return pick("c0", "c1", "c2", "news.x", "news.y", "h*") }
	pattern := func() string { return pick("c*", "news.*", "?1", "[cn]*", "h\\*", "*", "news.[xz]") }
	some := func(gen func() string, min int) []string {
		var out []string
		for range min + rng.IntN(3) {
			out = append(out, gen())
		}
		return out
	}
	switch rng.IntN(14) {
	case 0, 1:
		return append([]string{"SUBSCRIBE"}, some(channel, 1)...)
	case 2:
		return append([]string{"PSUBSCRIBE"}, some(pattern, 1)...)
	case 3:
		return append([]string{"UNSUBSCRIBE"}, some(channel, 0)...)
	case 4:
		return append([]string{"PUNSUBSCRIBE"}, some(pattern, 0)...)
	case 5, 6, 7:
		return []string{"PUBLISH", channel(), pick("hello", "", "x\r\ny", "42")}
	case 8:
		if rng.IntN(2) == 0 {
			return []string{"PUBSUB", "CHANNELS"}
		}
		return []string{"PUBSUB", "CHANNELS", pattern()}
	case 9:
		return append([]string{"PUBSUB", "NUMSUB"}, some(channel, 0)...)
	case 10:
		return []string{"PUBSUB", pick("NUMPAT", "NOSUCH")}
	case 11:
		return []string{"PING", pick("x", "")}[:1+rng.IntN(2)]
	case 12:
		return []string{pick("GET", "PUBLISH", "SUBSCRIBE", "ECHO"), "c0", "x", "y"}[:1+rng.IntN(3)]
	}
	if rng.IntN(4) == 0 {
		return []string{"RESET"}
	}
	return []string{"PUBLISH", channel(), "m" + strconv.Itoa(rng.IntN(10))}
}

// pubsubStep sends args (if any) on d, then a PING with a token, and
// returns the frames received before the PING's answer, rendered and
// sorted.
func pubsubStep(t *testing.T, d *diffConn, args []string, step int) string {
	t.Helper()
	if args != nil {
		d.send(args)
	}
	token := "sync-" + strconv.Itoa(step)
	d.send([]string{"PING", token})
	if _, err := d.nc.Write(d.out); err != nil {
		t.Fatal(err)
	}
	d.out = d.out[:0]
	// UNSUBSCRIBE without names goes through the channels in Redis' dict
	// order, which the counts in its confirmations follow: compare the
	// names, and the counts as a multiset.
	unsubAll := len(args) == 1 && (strings.EqualFold(args[0], "UNSUBSCRIBE") || strings.EqualFold(args[0], "PUNSUBSCRIBE"))
	var frames, counts []string
	for {
		v, err := d.rd.ReadValue()
		if err != nil {
			t.Fatalf("step %d: %v after %q", step, err, frames)
		}
		v = testutil.CloneValue(v)
		if isPong(v, token) {
			break
		}
		n := exact
		kind := ""
		if len(v.Array) > 0 {
			kind = string(v.Array[0].Str)
		}
		switch kind {
		case "message", "pmessage", "subscribe", "psubscribe", "pong":
		case "unsubscribe", "punsubscribe":
			if unsubAll && len(v.Array) == 3 {
				counts = append(counts, render(v.Array[2], exact))
				v.Array = v.Array[:2]
			}
		default:
			if v.Type == '*' || v.Type == '~' {
				n = unordered // PUBSUB CHANNELS
			}
		}
		frames = append(frames, render(v, n))
		if len(frames) > 1000 {
			t.Fatalf("step %d: no answer to PING", step)
		}
	}
	slices.Sort(frames)
	slices.Sort(counts)
	return strings.Join(frames, " ") + " counts " + strings.Join(counts, " ")
}

// isPong reports whether v answers PING token: the bulk string, or in
// RESP2 subscribed mode the array "pong", token.
func isPong(v resp.Value, token string) bool {
	if v.Type == '$' && string(v.Str) == token {
		return true
	}
	return v.Type == '*' && len(v.Array) == 2 && string(v.Array[0].Str) == "pong" && string(v.Array[1].Str) == token
}
