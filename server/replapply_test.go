package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReplicaServesBlockedClients checks that a batch a replica applies
// does what the primary's write would do there, as Redis' replica does
// after its master's command: it serves an XREAD BLOCK, and a BLPOP on a
// replica with replica-read-only no (on a read-only one BLPOP is a write,
// refused with READONLY); it sends a tracking client its invalidation; and
// it fails a WATCH of the key.
func TestReplicaServesBlockedClients(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	do(ctx, pc, "set", "seed", "v")
	replica, rc := startReplica(t, primary)

	if _, msg := do(ctx, rc, "blpop", "l", 0); msg != msgReadOnlyReplica {
		t.Fatalf("BLPOP on a read-only replica: %q", msg)
	}

	// A tracking client and a WATCH on the replica.
	trk := dialRaw(t, replica)
	trk.send("HELLO 3\r\n")
	trk.reply()
	trk.send("CLIENT TRACKING on\r\n")
	eq(t, "CLIENT TRACKING on", trk.reply(), "+OK\r\n")
	trk.send("GET tk\r\n")
	eq(t, "GET tk", trk.reply(), "_\r\n")
	watcher := dialRaw(t, replica)
	watcher.send("WATCH wk\r\n")
	eq(t, "WATCH", watcher.reply(), "+OK\r\n")

	xread := make(chan []any, 1)
	go func() {
		v, msg := do(ctx, newClient(t, replica, 2, nil), "xread", "block", 0, "streams", "st", "$")
		xread <- []any{v, msg}
	}()
	waitFor(t, "XREAD to block", func() bool { return replica.blocked.blocked.Load() == 1 })

	id, msg := do(ctx, pc, "xadd", "st", "*", "f", "v")
	if msg != "" {
		t.Fatal(msg)
	}
	select {
	case got := <-xread:
		eq(t, "XREAD BLOCK on the replica", fmt.Sprint(got), fmt.Sprintf("[[[st [[%s [f v]]]]] ]", id))
	case <-time.After(10 * time.Second):
		t.Fatal("XREAD BLOCK on the replica was not served by the primary's XADD")
	}

	do(ctx, pc, "set", "tk", "1")
	eq(t, "invalidation on the replica", trk.reply(), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ntk\r\n")
	do(ctx, pc, "set", "wk", "1")
	if v, _ := do(ctx, pc, "wait", 1, 5000); v != int64(1) {
		t.Fatalf("WAIT 1: %v", v)
	}
	watcher.send("MULTI\r\nGET wk\r\nEXEC\r\n")
	watcher.reply()
	watcher.reply()
	eq(t, "EXEC after the primary wrote a watched key", watcher.reply(), "*-1\r\n")

	do(ctx, rc, "config", "set", "replica-read-only", "no")
	blpop := make(chan []any, 1)
	go func() {
		v, msg := do(ctx, newClient(t, replica, 2, nil), "blpop", "l", 0)
		blpop <- []any{v, msg}
	}()
	waitFor(t, "BLPOP to block", func() bool { return replica.blocked.blocked.Load() == 1 })
	do(ctx, pc, "lpush", "l", "a")
	select {
	case got := <-blpop:
		eq(t, "BLPOP on the replica", fmt.Sprint(got), "[[l a] ]")
	case <-time.After(10 * time.Second):
		t.Fatal("BLPOP on the replica was not served by the primary's LPUSH")
	}
}

// TestClientKillMaster lists a replica's link to its primary with flag M
// in CLIENT LIST (and alone under TYPE master), and kills it with CLIENT
// KILL TYPE master: the replica reconnects and resumes without a copy.
func TestClientKillMaster(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	do(ctx, pc, "set", "x", "v")
	replica, rc := startReplica(t, primary)

	line := regexp.MustCompile(`(?m)^id=\d+ addr=` + regexp.QuoteMeta(primary.Addr().String()) + ` .* flags=M `)
	list, _ := do(ctx, rc, "client", "list", "type", "master")
	if !line.MatchString(list.(string)) || regexp.MustCompile(`\n.`).MatchString(list.(string)) {
		t.Fatalf("CLIENT LIST TYPE master on the replica:\n%s", list)
	}
	list, _ = do(ctx, rc, "client", "list")
	if !line.MatchString(list.(string)) {
		t.Fatalf("CLIENT LIST lacks the master link:\n%s", list)
	}
	if list, _ := do(ctx, rc, "client", "list", "type", "normal"); line.MatchString(list.(string)) {
		t.Fatalf("CLIENT LIST TYPE normal holds the master link:\n%s", list)
	}
	if list, _ := do(ctx, pc, "client", "list", "type", "replica"); !regexp.MustCompile(`flags=S `).MatchString(list.(string)) {
		t.Fatalf("CLIENT LIST TYPE replica on the primary:\n%s", list)
	}
	if v, _ := do(ctx, rc, "client", "kill", "type", "normal"); v != int64(0) {
		t.Fatalf("CLIENT KILL TYPE normal killed %v", v)
	}
	full, downs := primary.repl.fullSyncs.Load(), replica.repl.linkDown.Load()
	if v, _ := do(ctx, rc, "client", "kill", "type", "master"); v != int64(1) {
		t.Fatalf("CLIENT KILL TYPE master killed %v", v)
	}
	waitFor(t, "the link to break", func() bool { return replica.repl.linkDown.Load() > downs })
	waitFor(t, "the link to come back", func() bool { return replica.repl.linkUp.Load() })
	do(ctx, pc, "set", "y", "v")
	if v, _ := do(ctx, pc, "wait", 1, 5000); v != int64(1) {
		t.Fatalf("WAIT after the reconnection: %v", v)
	}
	eq(t, "full syncs after CLIENT KILL TYPE master", primary.repl.fullSyncs.Load(), full)
	if v, _ := do(ctx, rc, "get", "y"); v != "v" {
		t.Fatalf("GET y on the replica: %v", v)
	}
}

// TestReplicaAnnounce checks replica-announce-ip and -port, which the
// primary shows for the replica in INFO and ROLE once the replica
// reconnects, and replica-announced, INFO's replica_announced.
func TestReplicaAnnounce(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	do(ctx, pc, "set", "x", "v")
	replica, rc := startReplica(t, primary)
	_, rport, _ := strings.Cut(replica.Addr().String(), ":")
	info, _ := do(ctx, pc, "info", "replication")
	if !strings.Contains(info.(string), "slave0:ip=127.0.0.1,port="+rport+",") {
		t.Fatalf("INFO replication on the primary before announcing:\n%s", info)
	}
	info, _ = do(ctx, rc, "info", "replication")
	if !strings.Contains(info.(string), "replica_announced:1\r\n") {
		t.Fatalf("INFO replication on the replica:\n%s", info)
	}

	if _, msg := do(ctx, rc, "config", "set", "replica-announce-ip", "10.1.2.3", "replica-announce-port", "7777", "replica-announced", "no"); msg != "" {
		t.Fatal(msg)
	}
	if _, msg := do(ctx, rc, "config", "set", "replica-announce-ip", "a b"); msg == "" {
		t.Fatal("replica-announce-ip took an address with a space")
	}
	v, _ := do(ctx, rc, "config", "get", "slave-announce-*")
	eq(t, "CONFIG GET slave-announce-*", fmt.Sprint(v), "[slave-announce-ip 10.1.2.3 slave-announce-port 7777]")
	do(ctx, rc, "client", "kill", "type", "master") // announced at the next connection
	waitFor(t, "the announced address on the primary", func() bool {
		info, _ := do(ctx, pc, "info", "replication")
		return strings.Contains(info.(string), "slave0:ip=10.1.2.3,port=7777,state=online,")
	})
	// The killed link's stream leaves the primary's list.
	waitFor(t, "ROLE on the primary to show the one replica", func() bool {
		role, _ := do(ctx, pc, "role")
		r := role.([]any)[2].([]any)
		return len(r) == 1 && fmt.Sprint(r[0].([]any)[:2]) == "[10.1.2.3 7777]"
	})
	info, _ = do(ctx, rc, "info", "replication")
	if !strings.Contains(info.(string), "replica_announced:0\r\n") {
		t.Fatalf("INFO replication on the replica with replica-announced no:\n%s", info)
	}
}
