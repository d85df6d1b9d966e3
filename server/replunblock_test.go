package server

import (
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestUnblockOnReplicaOf checks, against redis-server, what the clients
// blocked on a primary get when REPLICAOF makes it a replica: every
// blocking command, the write-blocking pops and moves as well as XREAD
// and WAIT, replies -UNBLOCKED and its connection closes.
func TestUnblockOnReplicaOf(t *testing.T) {
	blockers := [][]string{
		{"BLPOP", "l", "0"},
		{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"},
		{"BLMPOP", "0", "1", "l2", "LEFT"},
		{"BZPOPMIN", "z", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "gs", ">"},
		{"WAIT", "1", "0"},
	}
	// A port nothing listens on: the new primary is never reached.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	run := func(network, addr string) []string {
		admin := dialDiff(t, network, addr, 2)
		admin.do(t, "XGROUP", "CREATE", "gs", "g", "$", "MKSTREAM")
		conns := make([]*diffConn, len(blockers))
		for i, args := range blockers {
			conns[i] = dialDiff(t, network, addr, 2)
			conns[i].send(args)
			if _, err := conns[i].nc.Write(conns[i].out); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "the clients to block", func() bool { return blockedClients(t, admin) == len(blockers) })
		admin.do(t, "REPLICAOF", "127.0.0.1", deadPort)
		var got []string
		for i, d := range conns {
			d.nc.SetDeadline(time.Now().Add(10 * time.Second))
			v, err := d.rd.ReadValue()
			if err != nil {
				t.Fatalf("%v: %v", blockers[i], err)
			}
			_, err = d.rd.ReadValue()
			got = append(got, render(v, exact)+" closed="+strconv.FormatBool(errors.Is(err, io.EOF)))
		}
		return got
	}
	want := run("unix", startRedis(t))
	s := startServer(t, nil)
	got := run("tcp", s.Addr().String())
	for i := range blockers {
		if got[i] != want[i] {
			t.Errorf("%v: lsmgo %s, redis %s", blockers[i], got[i], want[i])
		}
	}
	if want[0] != "-"+msgRoleChanged+" closed=true" {
		t.Errorf("redis answered BLPOP %s", want[0])
	}
}
