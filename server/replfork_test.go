package server

import (
	"context"
	"strings"
	"testing"
)

// TestSiblingFollowsPromotedReplica is what Sentinel does after it loses
// a primary: one replica is promoted (REPLICAOF NO ONE) and the other is
// pointed at it. The other continues without a new copy when it is not
// ahead of the promoted one, takes its dataset id, and converges; one
// that holds batches past the fork point takes a full copy instead.
func TestSiblingFollowsPromotedReplica(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 21, 100)
	a, ac := startReplica(t, primary)
	b, bc := startReplica(t, primary)
	c, cc := startReplica(t, primary)
	randomReplWrites(t, ctx, pc, 22, 200)
	waitReplicated(t, primary, a)
	waitReplicated(t, primary, b)
	waitReplicated(t, primary, c)

	// c stops following, then the primary writes on to a and b: a and b
	// are ahead of c.
	if _, msg := do(ctx, cc, "replicaof", "127.0.0.1", "1"); msg != "" {
		t.Fatal(msg)
	}
	randomReplWrites(t, ctx, pc, 23, 50)
	waitReplicated(t, primary, a)
	waitReplicated(t, primary, b)
	shutdown(t, primary)

	if _, msg := do(ctx, ac, "replicaof", "no", "one"); msg != "" {
		t.Fatal(msg)
	}
	aFulls := a.repl.fullSyncs.Load()
	host, port, _ := strings.Cut(a.Addr().String(), ":")
	// b, level with a, continues.
	if _, msg := do(ctx, bc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	randomReplWrites(t, ctx, ac, 24, 200)
	waitReplicated(t, a, b)
	// After a reconnection it presents a's dataset id, which came with
	// a's batches, and resumes.
	downs := b.repl.linkDown.Load()
	if v, _ := do(ctx, newClient(t, a, 2, nil), "client", "kill", "type", "replica"); v != int64(1) {
		t.Fatalf("CLIENT KILL TYPE replica: %v", v)
	}
	waitFor(t, "b's link to break", func() bool { return b.repl.linkDown.Load() > downs })
	randomReplWrites(t, ctx, ac, 25, 100)
	waitReplicated(t, a, b)
	eq(t, "b's dataset id", b.repl.datasetID(), a.repl.datasetID())

	// c, behind a, continues too.
	if _, msg := do(ctx, cc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	waitReplicated(t, a, c)
	eq(t, "full copies a sent to its siblings", a.repl.fullSyncs.Load(), aFulls)

	// b promoted, then a writes once more to c: c is ahead of b's fork
	// point, so it cannot continue from b; it takes a full copy of b
	// (its own data set aside) and converges.
	if _, msg := do(ctx, bc, "replicaof", "no", "one"); msg != "" {
		t.Fatal(msg)
	}
	randomReplWrites(t, ctx, ac, 26, 20)
	waitFor(t, "c to catch up with a", func() bool { return c.db.LastSeq() == a.db.LastSeq() })
	fulls := b.repl.fullSyncs.Load()
	host, port, _ = strings.Cut(b.Addr().String(), ":")
	if _, msg := do(ctx, cc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	waitFor(t, "c to take a copy of b", func() bool { return b.repl.fullSyncs.Load() > fulls })
	randomReplWrites(t, ctx, bc, 27, 50)
	waitReplicated(t, b, c)
	eq(t, "c's dataset id", c.repl.datasetID(), b.repl.datasetID())
}
