package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestBlockedClientBuffersRedisDiff blocks clients in BLPOP, XREAD,
// BZPOPMIN and BLMOVE on lsmgo and on redis-server, one with a command
// pipelined behind its blocking one, and compares their CLIENT LIST
// fields: cmd, flags, qbuf, argv-mem and the output buffers.
func TestBlockedClientBuffersRedisDiff(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	blocking := []struct {
		args   []string
		behind string // sent after the blocking command
	}{
		{[]string{"BLPOP", "mylist", "0"}, ""},
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "s1", "$"}, ""},
		{[]string{"BZPOPMIN", "zset-key", "other", "0"}, ""},
		{[]string{"BLPOP", "l2", "0"}, "*1\r\n$4\r\nPING\r\n"},
		{[]string{"BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"}, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
	}
	fields := []string{"flags", "cmd", "qbuf", "argv-mem", "multi-mem", "obl", "oll", "omem"}
	observe := func(network, addr string) []string {
		admin := dialDiff(t, network, addr, 2)
		list := func(id int64) string {
			admin.send([]string{"CLIENT", "LIST", "ID", strconv.FormatInt(id, 10)})
			r, err := admin.flushRead(1)
			if err != nil {
				t.Fatal(err)
			}
			return string(r[0].Str)
		}
		var out []string
		for _, b := range blocking {
			d := dialDiff(t, network, addr, 2)
			d.send([]string{"CLIENT", "ID"})
			r, err := d.flushRead(1)
			if err != nil {
				t.Fatal(err)
			}
			id := r[0].Int
			args := make([][]byte, len(b.args))
			for i, a := range b.args {
				args[i] = []byte(a)
			}
			if _, err := d.nc.Write(append(resp.AppendCommand(nil, args...), b.behind...)); err != nil {
				t.Fatal(err)
			}
			// Blocked, with what was sent behind the command read.
			var l string
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				l = list(id)
				// redis-server, on a unix socket, adds U to the flags.
				l = strings.Replace(l, " flags=bU ", " flags=b ", 1)
				if clientField(l, "flags") == "b" && clientField(l, "qbuf") == strconv.Itoa(len(b.behind)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s %q: not blocked with qbuf %d: %s", addr, b.args, len(b.behind), l)
				}
			}
			var got []string
			for _, f := range fields {
				got = append(got, f+"="+clientField(l, f))
			}
			out = append(out, strings.Join(got, " "))
		}
		return out
	}
	ours, theirs := observe("tcp", s.Addr().String()), observe("unix", sock)
	for i := range blocking {
		if ours[i] != theirs[i] {
			t.Errorf("%q blocked:\n lsmgo %s\n redis %s", blocking[i].args, ours[i], theirs[i])
		}
	}
}

// clientField returns the value of name in a CLIENT LIST line.
func clientField(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return "<none>"
}
