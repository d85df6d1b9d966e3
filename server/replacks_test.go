package server

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// startReplica starts a replica of primary seeded from its checkpoint and
// waits for its link to come up.
func startReplica(t *testing.T, primary *Server) (*Server, *redis.Client) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "replica")
	if err := primary.db.Checkpoint(dir); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(primary.Addr().String(), ":")
	r := startServer(t, func(c *Config) { c.Dir = dir; c.ReplicaOf = host + " " + port })
	waitFor(t, "the replica's link", func() bool { return r.repl.linkUp.Load() })
	return r, newClient(t, r, 2, nil)
}

// startReplicaBehindProxy starts an empty server and makes it a replica
// of primary through a loopback proxy that the test can cut or delay; it
// does not wait for the link. opts adjusts the client of the replica it
// returns.
func startReplicaBehindProxy(t *testing.T, primary *Server, opts func(*redis.Options)) (*Server, *redis.Client, *testutil.Proxy) {
	t.Helper()
	proxy := testutil.NewProxy(t, primary.Addr().String())
	replica := startServer(t, nil)
	rc := newClient(t, replica, 2, opts)
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	if _, msg := do(context.Background(), rc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	return replica, rc, proxy
}

var slaveLine = regexp.MustCompile(`slave0:ip=127\.0\.0\.1,port=(\d+),state=online,offset=(\d+),lag=(\d+)\r\n`)

// TestReplicaAcks checks that the primary learns each replica's applied
// position from its acknowledgements: INFO's slaveN lines and ROLE show
// it, WAIT counts the replicas that acknowledged the caller's write, and
// a replica that stops acknowledging stops counting.
func TestReplicaAcks(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 11, 50)
	replica, rc := startReplica(t, primary)

	for i := range 20 {
		randomReplWrites(t, ctx, pc, int64(100+i), 5)
		v, msg := do(ctx, pc, "wait", 1, 5000)
		if msg != "" || v != int64(1) {
			t.Fatalf("WAIT 1 5000 after a write: %v %s", v, msg)
		}
		// Acknowledged means applied: the replica has every write.
		if got, want := replica.db.LastSeq(), primary.db.LastSeq(); got < want {
			t.Fatalf("WAIT answered 1 with the replica at %d, the primary at %d", got, want)
		}
	}
	info, _ := do(ctx, pc, "info", "replication")
	m := slaveLine.FindStringSubmatch(info.(string))
	if m == nil {
		t.Fatalf("INFO replication on the primary:\n%s", info)
	}
	_, rport, _ := strings.Cut(replica.Addr().String(), ":")
	eq(t, "slave0 port", m[1], rport)
	eq(t, "slave0 offset", m[2], strconv.FormatUint(primary.db.LastSeq(), 10))
	if m[3] != "0" && m[3] != "1" {
		t.Fatalf("slave0 lag %s", m[3])
	}
	role, _ := do(ctx, pc, "role")
	eq(t, "ROLE's replicas", fmt.Sprint(role.([]any)[2]),
		fmt.Sprintf("[[127.0.0.1 %s %d]]", rport, primary.db.LastSeq()))

	// Two replicas are asked for, one exists: WAIT waits out its
	// timeout and answers 1.
	start := time.Now()
	v, _ := do(ctx, pc, "wait", 2, 200)
	if v != int64(1) || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("WAIT 2 200 answered %v after %v", v, time.Since(start))
	}
	// Inside MULTI it answers at once.
	tx := pc.TxPipeline()
	tx.Set(ctx, "in-tx", "v", 0)
	w := tx.Do(ctx, "wait", 5, 0)
	if _, err := tx.Exec(ctx); err != nil || w.Val() != int64(1) {
		t.Fatalf("WAIT inside MULTI: %v %v", w.Val(), err)
	}
	_, msg := do(ctx, rc, "wait", 1, 10)
	if !strings.HasPrefix(msg, "ERR WAIT cannot be used with replica instances") {
		t.Fatalf("WAIT on a replica: %q", msg)
	}

	// The replica says how long its link has been down, which Sentinel
	// reads to pass over a stale replica.
	if v, _ := do(ctx, rc, "info", "replication"); strings.Contains(v.(string), "master_link_down_since_seconds") {
		t.Fatalf("INFO replication on a connected replica:\n%s", v)
	}
	hostp, portp, _ := strings.Cut(primary.Addr().String(), ":")
	do(ctx, rc, "replicaof", hostp, "1")
	waitFor(t, "the link to be down", func() bool {
		v, _ := do(ctx, rc, "info", "replication")
		return strings.Contains(v.(string), "master_link_down_since_seconds:")
	})
	do(ctx, rc, "replicaof", hostp, portp)
	waitFor(t, "the link to come back", func() bool { return replica.repl.linkUp.Load() })

	// Closed, the replica acknowledges nothing more.
	shutdown(t, replica)
	waitFor(t, "the primary to drop the replica", func() bool {
		v, _ := do(ctx, pc, "info", "replication")
		return strings.Contains(v.(string), "connected_slaves:0\r\n")
	})
	do(ctx, pc, "set", "after", "v")
	if v, _ := do(ctx, pc, "wait", 1, 50); v != int64(0) {
		t.Fatalf("WAIT without replicas: %v", v)
	}
}

// TestMinReplicasToWrite refuses writes, in commands, transactions and
// scripts, while fewer replicas than min-replicas-to-write acknowledged
// within min-replicas-max-lag, as Redis does, and lets reads through.
func TestMinReplicasToWrite(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	do(ctx, pc, "set", "x", "v")
	refused := func(what string, args ...any) {
		t.Helper()
		if _, msg := do(ctx, pc, args...); !strings.HasPrefix(msg, msgNoReplicas) {
			t.Fatalf("%s: %q, want %q", what, msg, msgNoReplicas)
		}
	}
	allowed := func(what string, args ...any) {
		t.Helper()
		if _, msg := do(ctx, pc, args...); msg != "" {
			t.Fatalf("%s: %q", what, msg)
		}
	}
	allowed("CONFIG SET", "config", "set", "min-replicas-to-write", "1")
	refused("SET", "set", "x", "w")
	refused("a write in a script", "eval", "return redis.call('set', 'x', 'w')", 0)
	refused("a script that may write", "eval", "#!lua\nreturn redis.call('get', 'x')", 0)
	allowed("a script flagged no-writes", "eval", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", 0)
	allowed("GET", "get", "x")
	// Writes queued before the refusal began are refused at EXEC.
	allowed("CONFIG SET", "config", "set", "min-replicas-to-write", "0")
	m := newClient(t, primary, 2, func(o *redis.Options) { o.PoolSize = 1 }) // MULTI holds to one connection
	do(ctx, m, "multi")
	do(ctx, m, "incr", "n")
	allowed("CONFIG SET", "config", "set", "min-replicas-to-write", "1")
	if _, msg := do(ctx, m, "exec"); msg != "EXECABORT Transaction discarded because of: "+msgNoReplicas {
		t.Fatalf("EXEC of queued writes: %q", msg)
	}
	if v, _ := do(ctx, pc, "exists", "n"); v != int64(0) {
		t.Fatal("a refused EXEC wrote")
	}
	if v, _ := do(ctx, pc, "info", "replication"); !strings.Contains(v.(string), "min_slaves_good_slaves:0\r\n") {
		t.Fatalf("INFO replication:\n%s", v)
	}

	replica, _ := startReplica(t, primary)
	allowed("SET with a replica", "set", "x", "w")
	allowed("CONFIG SET", "config", "set", "min-slaves-to-write", "2")
	refused("SET with one of two replicas", "set", "x", "w")
	allowed("CONFIG SET", "config", "set", "min-replicas-to-write", "1")
	allowed("CONFIG SET", "config", "set", "min-replicas-max-lag", "1")
	if v, _ := do(ctx, pc, "config", "get", "min-slaves-max-lag"); fmt.Sprint(v) != "[min-slaves-max-lag 1]" {
		t.Fatalf("CONFIG GET min-slaves-max-lag: %v", v)
	}
	// A replica that stops acknowledging stops counting once it lags.
	shutdown(t, replica)
	waitFor(t, "writes to be refused", func() bool {
		_, msg := do(ctx, pc, "set", "x", "w")
		return msg == msgNoReplicas
	})
	allowed("CONFIG SET", "config", "set", "min-replicas-to-write", "0")
	allowed("SET with the check off", "set", "x", "w")
}

// TestClientKillReplica lists the primary's side of a replica's link with
// flag S in CLIENT LIST and kills it with CLIENT KILL TYPE replica (or
// slave), never with TYPE normal; the replica then reconnects.
func TestClientKillReplica(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	do(ctx, pc, "set", "x", "v")
	replica, _ := startReplica(t, primary)

	list, _ := do(ctx, pc, "client", "list")
	if !regexp.MustCompile(`(?m)^id=\d+ .* flags=S `).MatchString(list.(string)) {
		t.Fatalf("CLIENT LIST lacks the replica:\n%s", list)
	}
	if v, _ := do(ctx, pc, "client", "kill", "type", "normal"); v != int64(0) {
		t.Fatalf("CLIENT KILL TYPE normal killed %v", v)
	}
	downs := replica.repl.linkDown.Load()
	if v, _ := do(ctx, pc, "client", "kill", "type", "replica"); v != int64(1) {
		t.Fatalf("CLIENT KILL TYPE replica killed %v", v)
	}
	waitFor(t, "the link to break", func() bool { return replica.repl.linkDown.Load() > downs })
	waitFor(t, "the link to come back", func() bool { return replica.repl.linkUp.Load() })
	do(ctx, pc, "set", "y", "v")
	if v, _ := do(ctx, pc, "wait", 1, 5000); v != int64(1) {
		t.Fatalf("WAIT after the reconnection: %v", v)
	}
	if v, _ := do(ctx, pc, "client", "kill", "type", "slave"); v != int64(1) {
		t.Fatalf("CLIENT KILL TYPE slave killed %v", v)
	}
}
