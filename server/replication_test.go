package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// randomReplWrites runs n seeded random writes of every type.
func randomReplWrites(t *testing.T, ctx context.Context, c *redis.Client, seed int64, n int) {
	t.Helper()
	rng := newRand(seed)
	for range n {
		args := randomWriteArgs(rng)
		if _, msg := do(ctx, c, args...); msg != "" {
			t.Fatalf("%v: %s", args, msg)
		}
	}
}

// lastSeq is s's DB position as reads see it (a commit in progress is
// not counted until visible), read as a full sync's swap allows.
func lastSeq(s *Server) uint64 {
	s.repl.swapMu.RLock()
	defer s.repl.swapMu.RUnlock()
	return s.db.VisibleSeq()
}

// waitReplicated waits until the replica is at the primary's position
// and then compares their whole content. The wait is long: a full sync
// just begun took 32 s under -race on a loaded 2-core machine.
func waitReplicated(t *testing.T, primary, replica *Server) {
	t.Helper()
	waitForWithin(t, time.Minute, "the replica to catch up", func() bool { return lastSeq(replica) == lastSeq(primary) })
	p, r := fullContent(t, primary), fullContent(t, replica)
	if len(p) != len(r) || len(p) == 0 {
		t.Fatalf("replica holds %d keys, primary %d", len(r), len(p))
	}
	for k, v := range p {
		if r[k] != v {
			t.Fatalf("key %q differs on the replica", k)
		}
	}
}

// TestReplication seeds a replica from the primary's checkpoint, makes it
// follow with REPLICAOF, and checks, under seeded random writes of several
// types, that it converges to the primary's exact content, refuses
// writes, reports its role, and resumes after a restart.
func TestReplication(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 1, 200)

	dir := filepath.Join(t.TempDir(), "replica")
	if err := primary.db.Checkpoint(dir); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(primary.Addr().String(), ":")
	// The first start follows by REPLICAOF, the restart by the
	// replicaof setting.
	start := func(byCommand bool) (*Server, *redis.Client) {
		r := startServer(t, func(c *Config) {
			c.Dir = dir
			if !byCommand {
				c.ReplicaOf = host + " " + port
			}
		})
		rc := newClient(t, r, 2, nil)
		if byCommand {
			if _, msg := do(ctx, rc, "replicaof", host, port); msg != "" {
				t.Fatal(msg)
			}
		}
		v, _ := do(ctx, rc, "config", "get", "replicaof")
		eq(t, "CONFIG GET replicaof", fmt.Sprint(v), fmt.Sprintf("[replicaof %s %s]", host, port))
		return r, rc
	}
	replica, rc := start(true)
	randomReplWrites(t, ctx, pc, 2, 300)
	waitReplicated(t, primary, replica)
	// The primary's backlog began with this first replica: it resumed if
	// it connected before the next write, else it took a full copy.
	fullSyncs := primary.repl.fullSyncs.Load()
	if fullSyncs > 1 {
		t.Fatalf("%d full syncs for one replica", fullSyncs)
	}

	v, _ := do(ctx, rc, "get", "s:k1")
	w, _ := do(ctx, pc, "get", "s:k1")
	eq(t, "GET on the replica", v, w)
	_, msg := do(ctx, rc, "set", "x", "1")
	eq(t, "write on the replica", msg, "READONLY You can't write against a read only replica.")
	_, msg = do(ctx, rc, "eval", "return redis.call('set', 'x', '1')", 0)
	if !strings.Contains(msg, "READONLY") {
		t.Fatalf("write in a script on the replica: %q", msg)
	}
	role, _ := do(ctx, rc, "role")
	if r := role.([]any); r[0] != "slave" || r[3] != "connected" {
		t.Fatalf("ROLE on the replica: %v", role)
	}
	role, _ = do(ctx, pc, "role")
	if r := role.([]any); r[0] != "master" || len(r[2].([]any)) != 1 {
		t.Fatalf("ROLE on the primary: %v", role)
	}
	info, _ := do(ctx, rc, "info", "replication")
	for _, f := range []string{"role:slave", "master_link_status:up", "master_host:127.0.0.1"} {
		if !strings.Contains(info.(string), f+"\r\n") {
			t.Fatalf("INFO replication on the replica lacks %q:\n%s", f, info)
		}
	}
	info, _ = do(ctx, pc, "info", "replication")
	if !strings.Contains(info.(string), "connected_slaves:1\r\n") || !strings.Contains(info.(string), "slave0:ip=127.0.0.1,") {
		t.Fatalf("INFO replication on the primary:\n%s", info)
	}
	_, msg = do(ctx, pc, "psync", "?", "-1")
	if !strings.Contains(msg, "lsmgo does not send RDB") {
		t.Fatalf("PSYNC: %q", msg)
	}

	// A restart resumes from where the replica stopped.
	shutdown(t, replica)
	randomReplWrites(t, ctx, pc, 3, 200)
	replica, rc = start(false)
	randomReplWrites(t, ctx, pc, 4, 100)
	waitReplicated(t, primary, replica)
	eq(t, "full syncs after the restart", primary.repl.fullSyncs.Load(), fullSyncs)

	// Promoted, it takes writes; the old primary's data is intact.
	if _, msg := do(ctx, rc, "replicaof", "no", "one"); msg != "" {
		t.Fatal(msg)
	}
	if _, msg := do(ctx, rc, "hset", "h:new", "f", "v"); msg != "" {
		t.Fatalf("write after REPLICAOF NO ONE: %s", msg)
	}
	// Its history now differs from the old primary's: demoted, the old
	// primary takes a full copy of it, and keeps its own data aside.
	rhost, rport, _ := strings.Cut(replica.Addr().String(), ":")
	if _, msg := do(ctx, pc, "replicaof", rhost, rport); msg != "" {
		t.Fatal(msg)
	}
	if _, msg := do(ctx, rc, "set", "s:after", "v"); msg != "" {
		t.Fatal(msg)
	}
	waitReplicated(t, replica, primary)
	eq(t, "full syncs from the promoted replica", replica.repl.fullSyncs.Load(), int64(1))
	if kept, _ := filepath.Glob(filepath.Clean(primary.config().Dir) + ".discarded-*"); len(kept) != 1 {
		t.Fatalf("the demoted primary's data was not kept aside: %v", kept)
	}
}

// TestReplicaOfUnrelatedData makes a server with data of its own follow
// an unrelated primary: it takes a full copy, which replaces its data
// (kept aside, since it held keys), and converges.
func TestReplicaOfUnrelatedData(t *testing.T) {
	ctx := context.Background()
	primary, other := startServer(t, nil), startServer(t, nil)
	oc := newClient(t, other, 2, nil)
	if _, msg := do(ctx, oc, "set", "mine", "1"); msg != "" {
		t.Fatal(msg)
	}
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 5, 20)
	host, port, _ := strings.Cut(primary.Addr().String(), ":")
	if _, msg := do(ctx, oc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 6, 20)
	waitReplicated(t, primary, other)
	eq(t, "full syncs", primary.repl.fullSyncs.Load(), int64(1))
	kept, _ := filepath.Glob(filepath.Clean(other.config().Dir) + ".discarded-*")
	if len(kept) != 1 {
		t.Fatalf("the replaced data was not kept aside: %v", kept)
	}
}

// TestReplicationPrimaryRestart restarts the primary: after a clean
// shutdown its replica resumes; from a primary that comes back behind
// its replica without its saved stream id (what a power loss that cut
// the WAL's tail leaves, made here from a checkpoint) the replica takes a
// full copy instead.
func TestReplicationPrimaryRestart(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pdir := primary.config().Dir
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 6, 50)
	dir := filepath.Join(t.TempDir(), "replica")
	if err := primary.db.Checkpoint(dir); err != nil {
		t.Fatal(err)
	}
	replica := startServer(t, func(c *Config) { c.Dir = dir })
	rc := newClient(t, replica, 2, nil)
	follow := func(p *Server) {
		host, port, _ := strings.Cut(p.Addr().String(), ":")
		if _, msg := do(ctx, rc, "replicaof", host, port); msg != "" {
			t.Fatal(msg)
		}
	}
	follow(primary)
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 7, 100)
	waitReplicated(t, primary, replica)

	shutdown(t, primary)
	primary = startServer(t, func(c *Config) { c.Dir = pdir })
	follow(primary)
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 8, 100)
	waitReplicated(t, primary, replica)

	// A copy of the primary now, without the writes that follow, is
	// what a power loss that cut the WAL's tail leaves: same dataset,
	// behind its replica, and the stream file of a crash (the running
	// stream's id, no end): the restarted primary's stream continues
	// that one only up to its own end, which the replica is past.
	lost := filepath.Join(t.TempDir(), "lost-tail")
	if err := primary.db.Checkpoint(lost); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(lost, streamFile), *primary.repl.stream.Load()+" -\n")
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 10, 50)
	waitReplicated(t, primary, replica)
	shutdown(t, primary)
	primary = startServer(t, func(c *Config) { c.Dir = lost })
	resumes := primary.repl.resumes.Load()
	// New writes past the replica's position, one sequence number each,
	// so that the backlog holds it: only the continued stream's end
	// tells the replica's history from the primary's.
	pc := newClient(t, primary, 2, nil)
	for i := 0; lastSeq(primary) <= lastSeq(replica)+5; i++ {
		if _, msg := do(ctx, pc, "set", fmt.Sprint("past:", i), "v"); msg != "" {
			t.Fatal(msg)
		}
	}
	follow(primary)
	randomReplWrites(t, ctx, newClient(t, primary, 2, nil), 9, 200)
	// The replica's history is not the primary's: it takes a full copy.
	waitReplicated(t, primary, replica)
	eq(t, "full syncs", primary.repl.fullSyncs.Load(), int64(1))
	eq(t, "resumes", primary.repl.resumes.Load(), resumes)
}

// TestReplicaStreamCoalesces: while commits keep coming, a replica's
// stream writes at most once per send interval (20 ms here), so that the
// commits of that time go out together, and the replica still converges.
// The proxy's reads from the primary are at most its writes, so more of
// them than the intervals allow fails the test; a stream writing once per
// wake, as before, wrote 427 chunks where 29 were allowed (one run).
func TestReplicaStreamCoalesces(t *testing.T) {
	ctx := context.Background()
	const interval = 20 * time.Millisecond
	primary := startServer(t, nil)
	primary.repl.sendInterval.Store(int64(interval))
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 5, 20)
	replica, _, proxy := startReplicaBehindProxy(t, primary, nil)
	caughtUp := func() bool { return replica.repl.linkUp.Load() && lastSeq(replica) == lastSeq(primary) }
	waitFor(t, "the replica to catch up", caughtUp)

	chunks, seq, sent, start := proxy.Chunks.Load(), lastSeq(primary), primary.repl.committed.Load(), time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			c := newClient(t, primary, 2, nil)
			for i := range 500 {
				if err := c.Set(ctx, fmt.Sprintf("k%d:%d", w, i), i, 0).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, "the replica to catch up after the writes", caughtUp)
	elapsed := time.Since(start)
	chunks = proxy.Chunks.Load() - chunks
	commits := lastSeq(primary) - seq
	// One write per interval, a ping per second, one more of each at
	// the ends, and a chunk more per 32 KiB (the proxy's reads) sent.
	sent = primary.repl.committed.Load() - sent
	allowed := int64(elapsed/interval+elapsed/replPingInterval+4) + sent/(32<<10)
	t.Logf("%d commits, %d chunks in %v (allowed %d)", commits, chunks, elapsed, allowed)
	if chunks > allowed {
		t.Fatalf("the stream wrote %d chunks of %d commits in %v; at most %d allowed", chunks, commits, elapsed, allowed)
	}
	waitReplicated(t, primary, replica)
}
