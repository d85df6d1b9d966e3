package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
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
	setRingLimit(primary, 32<<10)
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 31, 100)
	replica, _, proxy := startReplicaBehindProxy(t, primary, nil)
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

// lsmsyncRaw asks s, as a replica would, for the batches from position
// from on (LSMSYNC, version 3, announcing no event classes) over a
// connection of its own, and returns the answer and a reader of what
// follows.
func lsmsyncRaw(t *testing.T, s *Server, from uint64) (resp.Value, *resp.Reader) {
	t.Helper()
	rc := dialRaw(t, s)
	rc.nc.SetDeadline(time.Now().Add(time.Minute))
	rc.send(string(resp.AppendCommand(nil, []byte("LSMSYNC"), []byte("3"), []byte(s.repl.datasetID()),
		strconv.AppendUint(nil, from, 10), []byte("0"), []byte("?"))))
	rd := resp.NewReader(rc.nc, resp.Limits{MaxBulkLen: 1 << 30})
	v, err := rd.ReadValue()
	if err != nil {
		t.Fatal(err)
	}
	return v, rd
}

// syncRaw is lsmsyncRaw that checks that s resumes at from.
func syncRaw(t *testing.T, s *Server, from uint64) *resp.Reader {
	t.Helper()
	v, rd := lsmsyncRaw(t, s, from)
	if want := fmt.Sprintf("STREAM %d ", from); v.Type != '+' || !strings.HasPrefix(string(v.Str), want) {
		t.Fatalf("LSMSYNC from %d: %c %q %q, want +%s…", from, v.Type, v.Str, v.Err, want)
	}
	return rd
}

// readStream reads the batches of a stream from position from up to
// last, checking that they follow one another; a PING before the last
// one fails the test (the primary is idle: see TestReplicationWALToRing).
func readStream(t *testing.T, rd *resp.Reader, from, last uint64) {
	t.Helper()
	for next := from; next <= last; {
		v, err := rd.ReadValue()
		if err != nil {
			t.Fatalf("at %d of %d: %v", next, last, err)
		}
		switch {
		case v.Type == '$':
			seq, count, err := lsmgo.ReplicatedSeq(v.Str)
			if err != nil || seq != next {
				t.Fatalf("batch at %d (%v), want %d", seq, err, next)
			}
			next += uint64(count)
		case v.Type == '+' && string(v.Str) == "PING":
			t.Fatalf("a PING at %d, before the batches up to %d", next, last)
		default:
			t.Fatalf("unexpected %c %q %q on the stream", v.Type, v.Str, v.Err)
		}
	}
}

// outgrowRing activates s's ring, sized 32 KiB, and SETs value (under
// 500 keys, no expiry) until the ring no longer holds the first position
// written and a WAL file is retained; it returns that position and the
// last one written.
func outgrowRing(t *testing.T, s *Server, value string) (from, last uint64) {
	t.Helper()
	setRingLimit(s, 32<<10)
	s.repl.backlog.activate()
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	from = lastSeq(s) + 1
	for i := 0; s.repl.backlog.holds(from) || len(retainedWALs(t, s.config().Dir)) == 0; i++ {
		if err := c.Set(ctx, fmt.Sprintf("k%d", i%500), value, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if i > 100000 {
			t.Fatal("the ring still holds the first position, or no WAL file is retained")
		}
	}
	return from, lastSeq(s)
}

// TestReplicationWALToRing: a stream that resumes from the retained WAL
// goes on from the ring as soon as the ring holds its position. With the
// primary idle (plain SETs without expiry: no new batch wakes the
// stream), every batch up to the primary's last must arrive before the
// stream's first PING: the switch used to wait for that PING, up to a
// second of lag.
func TestReplicationWALToRing(t *testing.T) {
	primary := startServer(t, func(c *Config) { c.MemTableSize = 64 << 10 })
	from, last := outgrowRing(t, primary, strings.Repeat("v", 300))
	readStream(t, syncRaw(t, primary, from), from, last)
}

// TestReplicationRetainedWALTransient: a blob read that fails once while
// a stream reads the retained WAL (separated values, read back from the
// blob files) ends that stream with NOBACKLOG, but once reads work again
// a replica at that position resumes from the WAL, with every batch, and
// no full copy. While the reads keep failing, it takes a full copy,
// logged.
func TestReplicationRetainedWALTransient(t *testing.T) {
	log := &testutil.SyncBuffer{}
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpRead}, ".blob")
	primary := startServer(t, func(c *Config) {
		c.MemTableSize = 64 << 10
		c.FS = errorfs.Wrap(vfs.Default, toggle)
		c.LogOutput = io.MultiWriter(c.LogOutput, log)
	})
	from, last := outgrowRing(t, primary, strings.Repeat("b", 8<<10))
	failOnce := func() {
		t.Helper()
		toggle.Enable()
		v, _ := syncRaw(t, primary, from).ReadValue()
		if v.Type != '-' || !strings.HasPrefix(v.Err, "NOBACKLOG") {
			t.Fatalf("a stream whose blob reads fail: %c %q %q, want NOBACKLOG", v.Type, v.Str, v.Err)
		}
	}
	failOnce()
	toggle.Disable()
	readStream(t, syncRaw(t, primary, from), from, last)
	if !strings.Contains(log.String(), "reads again") {
		t.Fatalf("the recovery was not logged; log:\n%s", log)
	}
	eq(t, "full syncs", primary.repl.fullSyncs.Load(), int64(0))

	failOnce()
	if v, _ := lsmsyncRaw(t, primary, from); v.Type != '+' || !strings.HasPrefix(string(v.Str), "FULLSYNC ") {
		t.Fatalf("while the blob reads fail: %c %q %q, want +FULLSYNC", v.Type, v.Str, v.Err)
	}
	if !strings.Contains(log.String(), "still fails") {
		t.Fatalf("the full copy was not logged; log:\n%s", log)
	}
	toggle.Disable()
}
