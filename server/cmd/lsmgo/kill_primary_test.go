package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestKill9PrimaryResume kills a primary with SIGKILL while clients
// write and its replica is cut off (so the replica is well behind the
// primary's end), restarts the primary, and lets the replica back
// through the same proxy: it resumes from the primary's retained WAL,
// which holds its position, with no full copy (the restarted primary's
// sync_full stays 0, its sync_partial_ok counts the resume), and
// converges to the primary's exact content (every key's DUMP), writes
// after the restart included.
func TestKill9PrimaryResume(t *testing.T) {
	pargs := []string{"--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", "everysec", "--loglevel", "warning"}
	primary := startChild(t, pargs...)
	pc := primary.client(t)
	proxy := testutil.NewProxy(t, primary.addr)
	host, pport, _ := strings.Cut(proxy.Addr(), ":")
	replica := startChild(t, "--dir", filepath.Join(t.TempDir(), "replica"), "--addr", "127.0.0.1:0", "--http", "",
		"--loglevel", "warning", "--replicaof", host+" "+pport)
	rc := replica.client(t)
	w := newTypedWriter(pc, 0)
	for range 50 {
		if _, err := w.step(); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, pc, rc)

	// Cut the replica off, then write and kill the primary mid-writes.
	proxy.Down.Store(true)
	proxy.Cut()
	primary.killMidWrites(t, 4, 1500, func(i int) func() (int64, error) {
		return newTypedWriter(primary.client(t), uint64(i+1)).step
	})
	before := replOffset(t, rc, "slave_repl_offset")

	// The restarted primary listens on a new port: the killed one's may
	// be taken meanwhile. The replica knows only the proxy's address.
	primary = startChild(t, pargs...)
	proxy.Retarget(primary.addr)
	pc = primary.client(t)
	if end := replOffset(t, pc, "master_repl_offset"); end <= before {
		t.Fatalf("the replica is at %d, the restarted primary at %d: the test needs the replica behind", before, end)
	}
	proxy.Down.Store(false)
	w = newTypedWriter(pc, 9)
	for range 100 {
		if _, err := w.step(); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, pc, rc)
	if got := syncFull(t, pc); got != "0" {
		t.Fatalf("the replica took a full copy from the restarted primary (sync_full %s)", got)
	}
	if got := infoField(t, pc, "stats", "sync_partial_ok"); got == "0" {
		t.Fatal("the restarted primary counts no resume (sync_partial_ok 0)")
	}
}

// typedWriter writes seeded random pipelines of strings (some with an
// expiry), hashes, lists, sets, sorted sets, counters and deletes, each
// type on keys of its own so that no write is refused.
type typedWriter struct {
	c   *redis.Client
	rng *rand.Rand
}

func newTypedWriter(c *redis.Client, seed uint64) *typedWriter {
	return &typedWriter{c: c, rng: rand.New(rand.NewPCG(seed, 23))}
}

// step sends one pipeline of 8 writes and returns how many were
// acknowledged.
func (w *typedWriter) step() (int64, error) {
	ctx := context.Background()
	pipe := w.c.Pipeline()
	for range 8 {
		k := w.rng.IntN(200)
		v := strings.Repeat(string(rune('a'+w.rng.IntN(26))), 1+w.rng.IntN(300))
		switch w.rng.IntN(8) {
		case 0:
			pipe.Set(ctx, fmt.Sprint("s:", k), v, 0)
		case 1:
			pipe.Set(ctx, fmt.Sprint("s:", k), v, time.Hour)
		case 2:
			pipe.HSet(ctx, fmt.Sprint("h:", k%40), fmt.Sprint("f", k), v)
		case 3:
			pipe.RPush(ctx, fmt.Sprint("l:", k%30), v)
		case 4:
			pipe.SAdd(ctx, fmt.Sprint("set:", k%30), k)
		case 5:
			pipe.ZAdd(ctx, fmt.Sprint("z:", k%30), redis.Z{Score: float64(w.rng.IntN(1000)), Member: k})
		case 6:
			pipe.Incr(ctx, fmt.Sprint("n:", k%10))
		default:
			pipe.Del(ctx, fmt.Sprint("s:", k))
		}
	}
	cmds, err := pipe.Exec(ctx)
	var acked int64
	for _, c := range cmds {
		if c.Err() == nil {
			acked++
		}
	}
	return acked, err
}

// infoField reads one field of an INFO section.
func infoField(t *testing.T, c *redis.Client, section, name string) string {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s lacks %s", section, name)
	return ""
}

// replOffset reads an offset field of INFO replication.
func replOffset(t *testing.T, c *redis.Client, name string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(infoField(t, c, "replication", name), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
