package server

import (
	"math/rand/v2"
	"strconv"
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
				if rng.IntN(8) == 0 {
					cmds = append(cmds, []string{"RESET"})
				}
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

// TestRedisDiffClientKillErrors compares CLIENT KILL, NO-EVICT and WAIT
// replies (NO-TOUCH is Redis 7.2's, newer than the redis-server here) that do not depend on which clients are connected.
func TestRedisDiffClientKillErrors(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	diffRound(t, 0, [][]string{
		{"CLIENT", "KILL", "1.2.3.4:5"},
		{"CLIENT", "KILL", "ID", "0"},
		{"CLIENT", "KILL", "ID", "x"},
		{"CLIENT", "KILL", "ID", "999999"},
		{"CLIENT", "KILL", "TYPE", "bogus"},
		{"CLIENT", "KILL", "TYPE", "master"},
		{"CLIENT", "KILL", "TYPE", "replica", "SKIPME", "no"},
		{"CLIENT", "KILL", "USER", "nobody"},
		{"CLIENT", "KILL", "SKIPME", "maybe"},
		{"CLIENT", "KILL", "ADDR", "1.2.3.4:5", "ID"},
		{"CLIENT", "KILL", "BOGUS", "1"},
		{"CLIENT", "NO-EVICT", "on"},
		{"CLIENT", "NO-EVICT", "off"},
		{"CLIENT", "NO-EVICT", "x"},
		{"WAIT", "0", "0"},
		{"WAIT", "1", "-1"},
		{"WAIT", "x", "0"},
		{"WAIT", "0", "x"},
		{"WAIT", "1", "20"},
	}, ours, theirs)
}

// TestClientListFlagsAndKill follows clients through CLIENT LIST's flags
// and counts (MULTI, blocked, subscribed, NO-EVICT) and kills them by
// each filter.
func TestClientListFlagsAndKill(t *testing.T) {
	s := startServer(t, nil)
	admin := dialRaw(t, s)
	do := func(r *rawConn, cmd string) string {
		t.Helper()
		r.send(cmd + "\r\n")
		return strings.TrimSpace(r.reply())
	}
	line := func(id string) string {
		r := do(admin, "CLIENT LIST ID "+id)
		if !strings.Contains(r, "id="+id+" ") {
			return ""
		}
		return r
	}
	field := func(l, name string) string {
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, name+"="); ok {
				return v
			}
		}
		return "<none>"
	}
	idOf := func(r *rawConn) string {
		return strings.TrimPrefix(do(r, "CLIENT ID"), ":")
	}
	tx, sub, blocked := dialRaw(t, s), dialRaw(t, s), dialRaw(t, s)
	txID, subID, blockedID := idOf(tx), idOf(sub), idOf(blocked)

	do(tx, "MULTI")
	do(tx, "INCR a")
	do(tx, "CLIENT NO-EVICT off")
	l := line(txID)
	eq(t, "MULTI client flags", field(l, "flags"), "x")
	eq(t, "MULTI client multi", field(l, "multi"), "2")
	do(tx, "EXEC")
	do(tx, "CLIENT NO-EVICT on")
	eq(t, "NO-EVICT flags", field(line(txID), "flags"), "e")
	eq(t, "NO-TOUCH bad", do(tx, "CLIENT NO-TOUCH maybe"), "-ERR syntax error")
	do(tx, "CLIENT NO-TOUCH on")
	eq(t, "NO-TOUCH flags", field(line(txID), "flags"), "eT")

	do(sub, "SUBSCRIBE c1 c2")
	sub.reply()
	do(sub, "PSUBSCRIBE p*")
	l = line(subID)
	eq(t, "subscriber flags", field(l, "flags"), "P")
	eq(t, "subscriber sub", field(l, "sub"), "2")
	eq(t, "subscriber psub", field(l, "psub"), "1")

	blocked.send("BLPOP nothing 0\r\n")
	waitFor(t, "client blocked", func() bool { return field(line(blockedID), "flags") == "b" })

	eq(t, "kill TYPE pubsub", do(admin, "CLIENT KILL TYPE pubsub"), ":1")
	sub.expectClosed("")
	eq(t, "kill ID", do(admin, "CLIENT KILL ID "+blockedID), ":1")
	blocked.expectClosed("")
	addr := field(line(txID), "addr")
	eq(t, "kill addr (old form)", do(admin, "CLIENT KILL "+addr), "+OK")
	tx.expectClosed("")
	adminID := idOf(admin)
	eq(t, "kill ID skips me", do(admin, "CLIENT KILL ID "+adminID), ":0")
	eq(t, "kill myself", do(admin, "CLIENT KILL ID "+adminID+" SKIPME no"), ":1")
	admin.expectClosed("")
}

// TestClientPause checks that CLIENT PAUSE WRITE holds writes but not
// reads, that ALL holds both, that CLIENT commands pass, and that
// UNPAUSE and the timeout release the held clients.
func TestClientPause(t *testing.T) {
	s := startServer(t, nil)
	admin, other := dialRaw(t, s), dialRaw(t, s)
	do := func(r *rawConn, cmd string) string {
		t.Helper()
		r.send(cmd + "\r\n")
		return strings.TrimSpace(r.reply())
	}
	eq(t, "pause write", do(admin, "CLIENT PAUSE 100000 WRITE"), "+OK")
	// A GET held for the 100 s pause would not answer before the
	// connection's deadline; waiting for its reply, however late a loaded
	// machine makes it, shows that it passed.
	eq(t, "GET", do(other, "GET k"), "$-1")
	// The SET must not answer while the pause lasts: no reply within
	// 150 ms (a slow machine can only make this check pass).
	other.send("SET k v\r\n")
	other.nc.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if _, err := other.br.Peek(1); err == nil {
		t.Fatal("SET not held by PAUSE WRITE")
	}
	other.nc.SetReadDeadline(time.Time{})
	eq(t, "CLIENT passes a pause", do(admin, "CLIENT ID") != "", true)
	eq(t, "unpause", do(admin, "CLIENT UNPAUSE"), "+OK")
	eq(t, "SET after unpause", strings.TrimSpace(other.reply()), "+OK")

	// The pause begins after start and lasts 300 ms: a GET sent during it
	// is answered no sooner than 300 ms after start. (One sent after it
	// ended, on a machine slow enough, is answered later still.)
	start := time.Now()
	eq(t, "pause all", do(admin, "CLIENT PAUSE 300 ALL"), "+OK")
	other.send("GET k\r\n")
	eq(t, "GET after the timeout", other.reply(), "$1\r\nv\r\n")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("released %v after the pause began, before its 300ms ended", d)
	}
	eq(t, "bad mode", do(admin, "CLIENT PAUSE 10 SOME"), "-ERR syntax error")
	eq(t, "negative", do(admin, "CLIENT PAUSE -1"), "-ERR timeout is negative")
}

// TestClientListBuffers checks CLIENT LIST's buffer and tracking fields
// against what each client holds: the running command (qbuf 26 and
// argv-mem 10 for CLIENT INFO alone, as Redis 7.0 reports), a command
// pipelined behind it, a half-sent command, a transaction's queued
// arguments, and the tracking, MONITOR and dirty-WATCH flags.
func TestClientListBuffers(t *testing.T) {
	s := startServer(t, nil)
	admin := dialRaw(t, s)
	do := func(r *rawConn, cmd string) string {
		t.Helper()
		r.send(cmd)
		return strings.TrimSpace(r.reply())
	}
	field := func(l, name string) string {
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, name+"="); ok {
				return v
			}
		}
		return "<none>"
	}
	num := func(l, name string) int {
		n, err := strconv.Atoi(field(l, name))
		if err != nil {
			t.Fatalf("%s in %q: %v", name, l, err)
		}
		return n
	}
	idOf := func(r *rawConn) string { return strings.TrimPrefix(do(r, "CLIENT ID\r\n"), ":") }
	ids := map[*rawConn]string{}
	dial := func() *rawConn {
		r := dialRaw(t, s)
		ids[r] = idOf(r)
		return r
	}
	line := func(r *rawConn) string { return do(admin, "CLIENT LIST ID "+ids[r]+"\r\n") }

	const info = "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n"
	self := do(admin, info)
	eq(t, "qbuf", field(self, "qbuf"), "26")
	eq(t, "argv-mem", field(self, "argv-mem"), "10")
	eq(t, "cmd", field(self, "cmd"), "client|info")
	for _, f := range []string{"multi-mem", "obl", "oll", "omem"} {
		eq(t, f, field(self, f), "0")
	}
	if num(self, "qbuf-free") <= 0 || num(self, "tot-mem") < num(self, "qbuf")+num(self, "qbuf-free") {
		t.Errorf("qbuf-free or tot-mem: %s", self)
	}
	// A command pipelined behind it is part of the query buffer.
	admin.send(info + "PING\r\n")
	eq(t, "qbuf with PING behind", field(strings.TrimSpace(admin.reply()), "qbuf"), strconv.Itoa(26+6))
	admin.reply()

	half := dial()
	const partial = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab"
	half.send(partial)
	waitFor(t, "half-sent command buffered", func() bool { return field(line(half), "qbuf") == strconv.Itoa(len(partial)) })
	eq(t, "half-sent argv-mem", field(line(half), "argv-mem"), "4")
	half.send("cde\r\n")
	eq(t, "SET completed", strings.TrimSpace(half.reply()), "+OK")
	waitFor(t, "drained", func() bool { return field(line(half), "qbuf") == "0" })
	eq(t, "argv-mem after", field(line(half), "argv-mem"), "0")

	tx := dial()
	do(tx, "MULTI\r\n")
	var want int64
	for _, cmd := range [][]string{{"SET", "a", "bbbbbbbbbb"}, {"GET", "a"}, {"INCR", "x"}} {
		do(tx, strings.Join(cmd, " ")+"\r\n")
		for _, a := range cmd {
			want += int64(len(a)) + queuedArgCost
		}
	}
	l := line(tx)
	eq(t, "multi", field(l, "multi"), "3")
	eq(t, "multi-mem", field(l, "multi-mem"), strconv.FormatInt(want, 10))
	do(tx, "DISCARD\r\n")
	eq(t, "multi-mem after DISCARD", field(line(tx), "multi-mem"), "0")

	// Flags: tracking (t, B), redirect target, MONITOR (O), dirty WATCH (d).
	bcast, redir, mon, watch := dial(), dial(), dial(), dial()
	do(bcast, "CLIENT TRACKING ON BCAST\r\n")
	l = line(bcast)
	eq(t, "BCAST flags", field(l, "flags"), "tB")
	eq(t, "BCAST redir", field(l, "redir"), "0")
	target := ids[tx]
	do(redir, "CLIENT TRACKING ON REDIRECT "+target+"\r\n")
	l = line(redir)
	eq(t, "redirect flags", field(l, "flags"), "t")
	eq(t, "redirect redir", field(l, "redir"), target)
	do(mon, "MONITOR\r\n")
	eq(t, "monitor flags", field(line(mon), "flags"), "O")
	do(watch, "WATCH w\r\n")
	eq(t, "watch flags", field(line(watch), "flags"), "N")
	do(admin, "SET w 1\r\n")
	eq(t, "dirty watch flags", field(line(watch), "flags"), "d")
}
