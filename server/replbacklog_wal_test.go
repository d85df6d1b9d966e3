package server

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestReplicationRetainedWAL cuts a replica off while its primary (small
// memtables, a ring of 32 KiB) takes far more writes than the ring holds:
// the replica resumes from the retained WAL files without a full copy and
// converges. Cut off again, with one of the retained files it needs
// then damaged: the stream stops at the damage (logged), the replica
// takes a full copy, and converges; no batch past the damage reaches it
// (the replica refuses gaps, and the content compare would show one).
func TestReplicationRetainedWAL(t *testing.T) {
	ctx := context.Background()
	log := &testutil.SyncBuffer{}
	primary := startServer(t, func(c *Config) {
		c.MemTableSize = 64 << 10
		c.LogOutput = io.MultiWriter(c.LogOutput, log)
	})
	primary.repl.backlog.mu.Lock()
	primary.repl.backlog.limit = 32 << 10
	primary.repl.backlog.mu.Unlock()
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 31, 100)
	proxy := testutil.NewProxy(t, primary.Addr().String())
	replica := startServer(t, nil)
	rc := newClient(t, replica, 2, nil)
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	if _, msg := do(ctx, rc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	waitReplicated(t, primary, replica)
	eq(t, "full syncs", primary.repl.fullSyncs.Load(), int64(1))

	// cutAndWrite cuts the replica off and writes until the WAL files
	// written since fill at least three retained files.
	dir := primary.config().Dir
	cutAndWrite := func(seed int64) []string {
		t.Helper()
		proxy.Down.Store(true)
		proxy.Cut()
		waitFor(t, "the link to go down", func() bool { return !replica.repl.linkUp.Load() })
		before := retainedWALs(t, dir)
		for i := int64(0); ; i++ {
			randomReplWrites(t, ctx, pc, seed+i, 200)
			if after := retainedWALs(t, dir); len(after) >= 3 && !slices.Contains(before, after[len(after)-3]) {
				return after[len(after)-3:]
			}
			if i > 200 {
				t.Fatal("the WAL files are not retained")
			}
		}
	}
	cutAndWrite(100)
	proxy.Down.Store(false)
	waitReplicated(t, primary, replica)
	eq(t, "full syncs after a resume from the retained WAL", primary.repl.fullSyncs.Load(), int64(1))

	newer := cutAndWrite(1000)
	damage(t, filepath.Join(dir, newer[1]))
	proxy.Down.Store(false)
	waitFor(t, "a full sync after the damage", func() bool { return primary.repl.fullSyncs.Load() == 2 })
	randomReplWrites(t, ctx, pc, 5000, 50)
	waitReplicated(t, primary, replica)
	if !strings.Contains(log.String(), "the retained WAL cannot serve a replica") {
		t.Fatalf("the damage was not logged; log:\n%s", log)
	}
}

// retainedWALs lists the retained WAL files in dir, oldest first.
func retainedWALs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.rlog"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	slices.Sort(names)
	return names
}

// damage flips bytes at 40, 50 and 60% of the data of file name (one
// might fall in a block's zero padding, which no checksum covers).
func damage(t *testing.T, name string) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	end := len(bytes.TrimRight(data, "\x00"))
	for _, at := range []int{40, 50, 60} {
		data[end*at/100] ^= 0x5a
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
