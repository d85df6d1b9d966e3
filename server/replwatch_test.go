package server

import (
	"context"
	"testing"
	"time"
)

// TestReplicaWatchWindow interleaves, seeded at random, the primary's
// batches with the steps of WATCH k, GET k, MULTI, GET k, EXEC on a
// replica: a batch is held on the replica after it marked the WATCHes of
// its keys and before it commits (testApplyHook) while one step runs.
// Whatever the interleaving, an EXEC that runs saw k as GET did right
// after WATCH (the primary only ever increments k, so any change shows);
// one whose k was written after WATCH returned fails, and one whose round
// wrote another key, or wrote k before WATCH, runs.
func TestReplicaWatchWindow(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	for _, k := range []string{"k0", "k1"} {
		do(ctx, pc, "set", k, 0)
	}
	replica, _ := startReplica(t, primary)
	waitFor(t, "the replica to catch up", func() bool { return lastSeq(replica) == lastSeq(primary) })

	// The hook holds the next batch once armed: paused tells the test,
	// release lets it commit.
	armed, paused, release := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	hook := func() {
		select {
		case <-armed:
			paused <- struct{}{}
			<-release
		default:
		}
	}
	replica.repl.testApplyHook.Store(&hook)

	const (
		beforeWatch = iota // the batch commits before WATCH
		duringWatch        // WATCH and GET run while the batch is held
		duringGet          // GET after WATCH runs while it is held
		beforeMulti        // it commits after GET, before MULTI
		duringExec         // EXEC runs while it is held
		phases
	)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	ran, failed := 0, 0
	for round := range 150 {
		phase, key, written := rng.IntN(phases), "k0", "k0"
		if rng.IntN(3) == 0 {
			written = "k1"
		}
		// step runs one of the client's steps, while the round's batch
		// is held when phase says so. A step that waits for the batch's
		// commit is let through after a moment.
		step := func(at int, run func()) {
			if at != phase {
				run()
				return
			}
			armed <- struct{}{}
			if _, msg := do(ctx, pc, "incr", written); msg != "" {
				t.Fatal(msg)
			}
			<-paused
			done := make(chan struct{})
			go func() { defer close(done); run() }()
			select {
			case <-done:
			case <-time.After(time.Duration(rng.IntN(3)) * time.Millisecond):
			}
			release <- struct{}{}
			<-done
			waitFor(t, "the replica to catch up", func() bool { return lastSeq(replica) == lastSeq(primary) })
		}
		var atWatch, inExec string
		var execRan bool
		raw := dialRaw(t, replica)
		step(beforeWatch, func() {})
		watch := func() { raw.send("WATCH " + key + "\r\n"); eq(t, "WATCH", raw.reply(), "+OK\r\n") }
		get := func() { raw.send("GET " + key + "\r\n"); atWatch = raw.reply() }
		if phase == duringWatch {
			// GET right behind WATCH: a WATCH that missed the held
			// batch would let GET read k before it commits.
			step(duringWatch, func() { watch(); get() })
		} else {
			watch()
			step(duringGet, get)
		}
		step(beforeMulti, func() { raw.send("MULTI\r\nGET " + key + "\r\n"); raw.reply(); raw.reply() })
		step(duringExec, func() {
			raw.send("EXEC\r\n")
			r := raw.reply()
			if execRan = r != "*-1\r\n"; execRan {
				inExec = r[len("*1\r\n"):]
			}
		})
		raw.nc.Close()
		if execRan {
			ran++
			if inExec != atWatch {
				t.Fatalf("round %d (phase %d, wrote %s): EXEC ran and read %q, GET after WATCH %q", round, phase, written, inExec, atWatch)
			}
		} else {
			failed++
		}
		switch {
		case written != key || phase == beforeWatch:
			if !execRan {
				t.Fatalf("round %d (phase %d, wrote %s): EXEC failed though %s did not change after WATCH", round, phase, written, key)
			}
		case phase == duringGet || phase == beforeMulti:
			if execRan {
				t.Fatalf("round %d (phase %d): EXEC ran though %s changed after WATCH", round, phase, key)
			}
		}
	}
	if ran == 0 || failed == 0 {
		t.Fatalf("%d EXECs ran, %d failed: the rounds did not cover both", ran, failed)
	}
}
