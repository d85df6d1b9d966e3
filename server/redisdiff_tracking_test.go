package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// trackingSide is one server's connections in TestTrackingRedis: 0 and 1
// track (or not), 2 is the RESP2 redirect target subscribed to
// __redis__:invalidate, 3 the RESP3 redirect target, 4 writes.
type trackingSide struct {
	conns []*diffConn
	ids   []string
}

func newTrackingSide(t *testing.T, network, addr string) *trackingSide {
	side := &trackingSide{}
	for i, proto := range []int{3, 2, 2, 3, 2} {
		d := dialDiff(t, network, addr, proto)
		v, err := d.roundTrip("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		side.conns = append(side.conns, d)
		side.ids = append(side.ids, strconv.FormatInt(v[0].Int, 10))
		if i == 2 {
			d.do(t, "SUBSCRIBE", trackingChannel)
		}
	}
	return side
}

// roundTrip sends one command and reads its reply, and before it any
// pushes, until the reply: a push is a '>' frame or, on a subscribed
// RESP2 connection, a "message" array.
func (d *diffConn) roundTrip(args ...string) ([]resp.Value, error) {
	d.send(args)
	d.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.nc.Write(d.out); err != nil {
		return nil, err
	}
	d.out = d.out[:0]
	var frames []resp.Value
	for {
		v, err := d.rd.ReadValue()
		if err != nil {
			return nil, err
		}
		v = testutil.CloneValue(v)
		frames = append(frames, v)
		isMsg := v.Type == '>' || v.Type == '*' && len(v.Array) == 3 && string(v.Array[0].Str) == "message"
		if !isMsg {
			return frames, nil
		}
	}
}

// drain collects the pushes waiting on every connection: a PING (answered
// after every push queued before it) on each.
func (side *trackingSide) drain(t *testing.T) string {
	var b strings.Builder
	for i, d := range side.conns {
		frames, err := d.roundTrip("PING")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames[:len(frames)-1] {
			fmt.Fprintf(&b, "conn%d<%s ", i, render(f, exact))
		}
	}
	return b.String()
}

// TestTrackingRedis runs client-side caching scenarios, and then seeded
// random reads and writes, on redis-server and this server, and compares
// every reply and every invalidation message each connection gets. An
// argument "$redir2" or "$redir3" stands for the id of that server's
// RESP2 or RESP3 redirect target.
func TestTrackingRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	theirs := newTrackingSide(t, "unix", sock)
	ours := newTrackingSide(t, "tcp", s.Addr().String())
	type step struct {
		conn int
		args []string
	}
	st := func(conn int, args ...string) step { return step{conn, args} }
	scenarios := [][]step{
		{ // default mode, RESP3, own connection
			st(0, "CLIENT", "TRACKING", "ON"), st(4, "SET", "a", "1"), st(0, "GET", "a"), st(0, "MGET", "b", "c"),
			st(4, "SET", "a", "2"), st(4, "SET", "a", "3"), st(0, "GET", "a"), st(0, "SET", "a", "4"),
			st(0, "HGET", "h", "f"), st(4, "HSET", "h", "f", "v"), st(0, "CLIENT", "TRACKINGINFO"),
			st(0, "CLIENT", "GETREDIR"), st(4, "MSET", "b", "1", "c", "2"), st(0, "CLIENT", "TRACKING", "OFF"),
			st(0, "CLIENT", "GETREDIR"), st(0, "CLIENT", "TRACKINGINFO"),
		},
		{ // RESP2 redirect to a subscribed connection, NOLOOP
			st(1, "CLIENT", "TRACKING", "ON", "REDIRECT", "$redir2", "NOLOOP"), st(1, "MGET", "x", "y", "z"),
			st(4, "SET", "x", "1"), st(1, "SET", "y", "1"), st(4, "DEL", "z"), st(4, "DEL", "z"),
			st(1, "CLIENT", "GETREDIR"), st(1, "CLIENT", "TRACKINGINFO"), st(1, "GET", "x"), st(4, "FLUSHALL"),
			st(1, "CLIENT", "TRACKING", "OFF"),
		},
		{ // BCAST with prefixes, MULTI/EXEC, redirect to RESP3
			st(1, "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", "$redir3", "PREFIX", "a:", "PREFIX", "b:"),
			st(4, "MULTI"), st(4, "INCR", "a:1"), st(4, "INCR", "b:2"), st(4, "INCR", "a:0"), st(4, "INCR", "c:1"), st(4, "EXEC"),
			st(1, "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", "$redir3", "PREFIX", "c:"), st(4, "SET", "c:9", "1"),
			st(1, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"), st(1, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "xy"),
			st(1, "CLIENT", "TRACKING", "ON"), st(1, "CLIENT", "TRACKINGINFO"), st(1, "CLIENT", "TRACKING", "OFF"),
			st(0, "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"), st(0, "SET", "k", "1"), st(4, "SET", "k2", "1"),
			st(4, "MSET", "m2", "1", "m1", "2"), st(0, "FLUSHDB"), st(0, "CLIENT", "TRACKING", "OFF"),
		},
		{ // OPTIN, OPTOUT, CACHING, scripts
			st(0, "CLIENT", "CACHING", "YES"), st(0, "CLIENT", "TRACKING", "ON", "OPTIN"), st(0, "GET", "p"),
			st(4, "SET", "p", "1"), st(0, "CLIENT", "CACHING", "NO"), st(0, "CLIENT", "CACHING", "YES"), st(0, "CLIENT", "TRACKINGINFO"),
			st(0, "GET", "p"), st(0, "GET", "q"), st(4, "SET", "p", "2"), st(4, "SET", "q", "2"),
			st(0, "CLIENT", "TRACKING", "ON", "OPTOUT"), st(0, "CLIENT", "TRACKING", "OFF"),
			st(0, "CLIENT", "TRACKING", "ON", "OPTOUT"), st(0, "CLIENT", "CACHING", "NO"), st(0, "GET", "p"), st(0, "GET", "q"),
			st(4, "SET", "p", "3"), st(4, "SET", "q", "3"), st(0, "EVAL", "return redis.call('get', KEYS[1])", "1", "s"),
			st(0, "EVAL_RO", "return 1", "1", "s2"), st(4, "MSET", "s", "1", "s2", "1"),
			st(0, "EVAL", "redis.call('get', 'g3')", "2", "g1", "g2"), st(4, "MSET", "g1", "1", "g2", "1", "g3", "1"),
			st(0, "CLIENT", "TRACKING", "OFF"),
		},
		{ // errors
			st(0, "CLIENT", "TRACKING", "MAYBE"), st(0, "CLIENT", "TRACKING", "ON", "PREFIX", "a"),
			st(0, "CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"), st(0, "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
			st(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "999999"), st(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
			st(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "$redir2", "REDIRECT", "$redir2"), st(0, "CLIENT", "TRACKING", "ON", "NOPE"),
			st(0, "CLIENT", "CACHING", "YES"), st(0, "CLIENT", "TRACKING", "ON", "OPTIN"), st(0, "CLIENT", "CACHING", "MAYBE"),
			st(0, "CLIENT", "TRACKING", "ON", "OPTOUT"), st(0, "CLIENT", "TRACKING", "ON", "BCAST"), st(0, "CLIENT", "TRACKING", "OFF"),
		},
	}
	run := func(what string, sp step) {
		want, errT := theirs.conns[sp.conn].roundTrip(substitute(sp.args, theirs.ids)...)
		got, errO := ours.conns[sp.conn].roundTrip(substitute(sp.args, ours.ids)...)
		if errT != nil || errO != nil {
			t.Fatalf("%s conn%d %q: redis %v, lsmgo %v", what, sp.conn, sp.args, errT, errO)
		}
		getRedir := len(sp.args) == 2 && sp.args[1] == "GETREDIR"
		w, g := renderFrames(want, theirs.ids, getRedir), renderFrames(got, ours.ids, getRedir)
		if w != g {
			t.Errorf("%s conn%d %q:\n lsmgo: %s\n redis: %s", what, sp.conn, sp.args, g, w)
		}
		if w, g := theirs.drain(t), ours.drain(t); w != g {
			t.Errorf("%s after conn%d %q, pushes:\n lsmgo: %s\n redis: %s", what, sp.conn, sp.args, g, w)
		}
	}
	for i, sc := range scenarios {
		for _, sp := range sc {
			run(fmt.Sprintf("scenario %d", i), sp)
		}
	}
	// Seeded random reads and writes over a few keys: conn 0 tracks in
	// RESP3, conn 1 redirects to the RESP2 target, with NOLOOP.
	run("random", st(0, "CLIENT", "TRACKING", "ON"))
	run("random", st(1, "CLIENT", "TRACKING", "ON", "REDIRECT", "$redir2", "NOLOOP"))
	rng := newRand(1)
	keys := []string{"k1", "k2", "k3", "k4"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	for range 300 {
		conn := []int{0, 1, 4}[rng.IntN(3)]
		var args []string
		switch rng.IntN(8) {
		case 0:
			args = []string{"GET", key()}
		case 1:
			args = []string{"MGET", key(), key()}
		case 2:
			args = []string{"SET", key(), strconv.Itoa(rng.IntN(9))}
		case 3:
			args = []string{"DEL", key()}
		case 4:
			args = []string{"EXISTS", key()}
		case 5:
			args = []string{"APPEND", key(), "x"}
		case 6:
			args = []string{"STRLEN", key()}
		default:
			args = []string{"MSET", key(), "1", key(), "2"}
		}
		run("random", st(conn, args...))
	}
}

func substitute(args, ids []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch a {
		case "$redir2":
			a = ids[2]
		case "$redir3":
			a = ids[3]
		}
		out[i] = a
	}
	return out
}

// renderFrames renders replies with the redirect targets' ids named, as
// the two servers number their clients differently.
func renderFrames(frames []resp.Value, ids []string, getRedir bool) string {
	var parts []string
	for _, f := range frames {
		parts = append(parts, render(f, exact))
	}
	s := strings.Join(parts, " ")
	s = strings.ReplaceAll(s, ":"+ids[2]+",", ":$redir2,")
	s = strings.ReplaceAll(s, ":"+ids[3]+",", ":$redir3,")
	if getRedir && (s == ":"+ids[2] || s == ":"+ids[3]) {
		s = ":$redir"
	}
	return s
}
