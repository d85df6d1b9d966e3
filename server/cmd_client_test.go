package server

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestRedisDiffClientReply sends random runs of CLIENT REPLY ON|OFF|SKIP
// among other commands, pipelined, to both servers, and compares every
// frame each sends back (RESP2 and RESP3, with a subscription now and
// then, whose frames CLIENT REPLY does not silence).
func TestRedisDiffClientReply(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 60 {
		proto := 2 + round%2
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		var cmds [][]string
		for i := range 12 {
			switch rng.IntN(6) {
			case 0, 1:
				cmds = append(cmds, []string{"CLIENT", "REPLY", []string{"ON", "OFF", "SKIP", "MAYBE"}[rng.IntN(4)]})
			case 2:
				cmds = append(cmds, []string{"INCR", "replyctr"})
			case 3:
				if proto == 3 {
					cmds = append(cmds, []string{"SUBSCRIBE", "ch"}, []string{"PUBLISH", "ch", "m"}, []string{"UNSUBSCRIBE", "ch"})
					continue
				}
				cmds = append(cmds, []string{"GET", "nokey"})
			case 4:
				cmds = append(cmds, []string{"NOSUCHCMD"})
			default:
				cmds = append(cmds, []string{"PING", "p" + string(rune('a'+i))})
			}
		}
		cmds = append(cmds, []string{"CLIENT", "REPLY", "ON"}, []string{"PING", "end"})
		got, want := replyFrames(t, ours, cmds), replyFrames(t, theirs, cmds)
		if got != want {
			t.Fatalf("round %d, RESP%d, %q:\n lsmgo: %s\n redis: %s", round, proto, cmds, got, want)
		}
		for _, d := range []*diffConn{ours, theirs} {
			d.nc.Close()
		}
	}
}

// replyFrames sends cmds and renders every frame received up to the
// "end" PING's answer.
func replyFrames(t *testing.T, d *diffConn, cmds [][]string) string {
	t.Helper()
	for _, c := range cmds {
		d.send(c)
	}
	d.nc.SetDeadline(time.Now().Add(10 * time.Second))
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
		r := render(v, exact)
		b.WriteString(r + "\n")
		if strings.Contains(r, `"end"`) {
			return b.String()
		}
	}
}
