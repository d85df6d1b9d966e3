package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/redis/go-redis/v9"
)

// TestKill9Replica kills a replica (a real `lsmgo serve`) with SIGKILL
// in the middle of a full sync, slowed by a delaying proxy, and again
// while it streams under writes. Each time it restarts and converges to
// the primary's exact content (every key's DUMP); after the streaming
// kill it resumes without a new full copy.
func TestKill9Replica(t *testing.T) {
	ctx := context.Background()
	primary := startChild(t, "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--loglevel", "warning")
	pc := primary.client(t)
	// About 8 MiB of incompressible values: a full sync through the
	// proxy's delay takes about a second.
	pipe := pc.Pipeline()
	for i := range 2000 {
		v := make([]byte, 4096)
		rand.Read(v)
		pipe.Set(ctx, fmt.Sprint("big:", i), v, 0)
		pipe.HSet(ctx, fmt.Sprint("h:", i%50), fmt.Sprint("f", i), i)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	proxy := testutil.NewProxy(t, primary.addr)
	proxy.Delay.Store(int64(4 * time.Millisecond))
	dir := filepath.Join(t.TempDir(), "replica")
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "", "--loglevel", "warning", "--replicaof", host + " " + port}

	replica := startChild(t, args...)
	waitPath(t, dir+".fullsync-tmp")
	time.Sleep(200 * time.Millisecond)
	kill(t, replica)
	if _, err := os.Stat(dir + ".fullsync-ready"); err == nil {
		t.Log("killed after the copy was whole")
	}
	proxy.Delay.Store(0)
	replica = startChild(t, args...)
	converged(t, pc, replica.client(t))

	// Streaming: writes go on while the replica is killed and restarts.
	fullBefore := syncFull(t, pc)
	var writes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if pc.Incr(ctx, "counter").Err() != nil || pc.RPush(ctx, fmt.Sprint("l:", i%20), i).Err() != nil {
				return
			}
			writes.Add(1)
		}
	})
	replica.killAfter(t, &writes, writes.Load()+300)
	replica = startChild(t, args...)
	for n := writes.Load() + 300; writes.Load() < n; {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	converged(t, pc, replica.client(t))
	if got := syncFull(t, pc); got != fullBefore {
		t.Fatalf("the replica restarted after a streaming kill took a new full copy (sync_full %s -> %s)", fullBefore, got)
	}
}

func waitPath(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func kill(t *testing.T, c *child) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.exited
}

// syncFull is the primary's INFO stats sync_full.
func syncFull(t *testing.T, pc *redis.Client) string {
	t.Helper()
	return infoField(t, pc, "stats", "sync_full")
}

// converged waits until the replica holds every key of the primary with
// the same DUMP, and no other.
func converged(t *testing.T, pc, rc *redis.Client) {
	t.Helper()
	ctx := context.Background()
	dumps := func(c *redis.Client) (map[string]string, error) {
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, k := range keys {
			if out[k], err = c.Dump(ctx, k).Result(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var diff string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		p, err := dumps(pc)
		if err != nil {
			t.Fatal(err)
		}
		r, err := dumps(rc)
		if err != nil {
			diff = err.Error()
			continue
		}
		diff = ""
		if len(p) != len(r) {
			diff = fmt.Sprintf("the replica holds %d keys, the primary %d", len(r), len(p))
		}
		for k, v := range p {
			if r[k] != v {
				diff = fmt.Sprintf("key %q differs", k)
				break
			}
		}
		if diff == "" {
			return
		}
	}
	t.Fatalf("the replica did not converge: %s", diff)
}
