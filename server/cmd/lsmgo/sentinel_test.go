package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// The test here runs a primary and two replicas (`lsmgo serve`) under
// three Redis Sentinels, the set-up doc/replication.md describes
// ("Running under Sentinel"), and kills the primary.

const sentinelMaster = "lsmgo"

// needRedisServer returns the redis-server binary, which runs Sentinel
// (--sentinel). Without one the test is skipped, except in CI, whose
// .ci/run installs it.
func needRedisServer(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server (Debian package redis-server) is missing under CI: %v", err)
		}
		t.Skipf("redis-server not installed (apt-get install redis-server), which runs Sentinel: %v", err)
	}
	return path
}

// startSentinel runs `redis-server conf --sentinel` watching the primary
// at primary, and waits until it serves; cleanup kills it. Sentinel
// takes no port 0, so it is given a free one, and started again on
// another when that one was taken before it bound it.
func startSentinel(t *testing.T, bin, primary string) string {
	t.Helper()
	return testutil.StartRetrying(t, "Sentinel", func() (string, error) { return tryStartSentinel(t, bin, primary) })
}

// tryStartSentinel is one try of startSentinel, in a new directory. It
// fails with the log of a Sentinel that exited before it served.
func tryStartSentinel(t *testing.T, bin, primary string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	port := testutil.FreePort(t)
	host, pport, _ := strings.Cut(primary, ":")
	conf := filepath.Join(dir, "sentinel.conf")
	logFile := filepath.Join(dir, "sentinel.log")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
		"sentinel monitor %s %s %s 2\n"+
		"sentinel down-after-milliseconds %[4]s 1000\nsentinel failover-timeout %[4]s 10000\n",
		port, dir, logFile, sentinelMaster, host, pport)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // only this sentinel's PID
		<-exited
		if t.Failed() {
			log, _ := os.ReadFile(logFile)
			t.Logf("sentinel on port %d:\n%s", port, log)
		}
	})
	// Sentinel logs its ID once it listens, and exits if it cannot.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		log, _ := os.ReadFile(logFile)
		select {
		case <-exited:
			return "", fmt.Errorf("the Sentinel exited at start:\n%s", log)
		default:
		}
		if bytes.Contains(log, []byte("Sentinel ID is")) {
			return "127.0.0.1:" + strconv.Itoa(port), nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sentinel on port %d did not start:\n%s", port, log)
		}
	}
}

// startNode runs `lsmgo serve` on dir with a config file (which CONFIG
// REWRITE, sent by Sentinel, rewrites), following replicaOf if set.
func startNode(t *testing.T, dir, addr, replicaOf string) *child {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "lsmgo.toml")
	text := fmt.Sprintf("addr = %q\nhttp = \"\"\ndir = %q\nreplicaof = %q\nappendfsync = \"no\"\n",
		addr, dir, strings.Replace(replicaOf, ":", " ", 1))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return startChild(t, "--config", conf)
}

func plainClient(t *testing.T, addr string) *redis.Client {
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// waitUntil polls cond every 50 ms for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// dumpAll is every key of a server with its DUMP payload.
func dumpAll(t *testing.T, ctx context.Context, rc *redis.Client) map[string]string {
	t.Helper()
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		v, err := rc.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// sameContent fails unless got, the content of the replica named what,
// is want's.
func sameContent(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s holds %d keys, the new primary %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %q differs on %s", k, what)
		}
	}
}

// TestSentinelFailover is issue 23's Sentinel test: writes go through
// go-redis' failover client, each followed by WAIT 1; the primary is
// killed with SIGKILL; Sentinel promotes a replica and points the other
// at it; the client follows. Every write WAIT acknowledged before the
// kill is on the new primary, the other replica converges to it (every
// key's DUMP), and the old primary restarts as a replica.
func TestSentinelFailover(t *testing.T) {
	bin := needRedisServer(t)
	ctx := context.Background()

	// The replicas start from a copy of the primary's directory, taken
	// after a clean stop. The primary keeps its address across restarts,
	// by which Sentinel and the replicas know it, so it is given a port
	// (startChild starts it again if another process held that port for a
	// moment); the replicas listen on port 0 and tell the primary the
	// port they got.
	pdir := t.TempDir()
	paddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	seed := startNode(t, pdir, paddr, "")
	seed.cmd.Process.Signal(syscall.SIGTERM)
	<-seed.exited
	nodes := []*child{startNode(t, pdir, paddr, "")}
	addrs := []string{paddr}
	for range 2 {
		r := startNode(t, copyDir(t, pdir), "127.0.0.1:0", paddr)
		nodes = append(nodes, r)
		addrs = append(addrs, r.addr)
	}
	pc := plainClient(t, paddr)
	waitUntil(t, 10*time.Second, "both replicas to connect", func() bool {
		role, err := pc.Do(ctx, "role").Slice()
		return err == nil && len(role) == 3 && len(role[2].([]any)) == 2
	})

	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, startSentinel(t, bin, paddr))
	}
	for _, s := range sentinels {
		sc := plainClient(t, s)
		waitUntil(t, 15*time.Second, "each sentinel to know the replicas and the other sentinels", func() bool {
			r, err1 := sc.Do(ctx, "sentinel", "replicas", sentinelMaster).Slice()
			o, err2 := sc.Do(ctx, "sentinel", "sentinels", sentinelMaster).Slice()
			return err1 == nil && err2 == nil && len(r) == 2 && len(o) == 2
		})
	}

	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: sentinelMaster, SentinelAddrs: sentinels, Protocol: 2,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
	})
	defer fc.Close()

	// The writer: SET then WAIT 1 on one connection (a pipeline); a 1
	// means a replica applied the SET.
	var (
		mu       sync.Mutex
		acked    []int
		sinceRef = -1 // the first write acknowledged after the kill
		killed   bool
	)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pipe := fc.Pipeline()
			pipe.Set(ctx, fmt.Sprintf("k:%d", i), fmt.Sprintf("v:%d", i), 0)
			wait := pipe.Do(ctx, "wait", 1, 1000)
			if _, err := pipe.Exec(ctx); err != nil || wait.Val() != int64(1) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			mu.Lock()
			acked = append(acked, i)
			if killed && sinceRef < 0 {
				sinceRef = len(acked) - 1
			}
			mu.Unlock()
		}
	}()
	count := func() (all, after int) {
		mu.Lock()
		defer mu.Unlock()
		if sinceRef < 0 {
			return len(acked), 0
		}
		return len(acked), len(acked) - sinceRef
	}
	waitUntil(t, 10*time.Second, "200 acknowledged writes", func() bool { n, _ := count(); return n >= 200 })
	mu.Lock()
	killed = true
	mu.Unlock()
	if err := nodes[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-nodes[0].exited
	killedAt := time.Now()

	sc := plainClient(t, sentinels[0])
	var newPrimary string
	waitUntil(t, 15*time.Second, "Sentinel to promote a replica", func() bool {
		a, err := sc.Do(ctx, "sentinel", "get-master-addr-by-name", sentinelMaster).StringSlice()
		if err == nil && len(a) == 2 && a[0]+":"+a[1] != paddr {
			newPrimary = a[0] + ":" + a[1]
			return true
		}
		return false
	})
	// Acknowledged writes after the kill went to the new primary and
	// reached the other replica, which Sentinel pointed at it.
	waitUntil(t, 15*time.Second, "the client to write through the new primary", func() bool {
		_, after := count()
		return after >= 50
	})
	close(stop)
	<-writerDone
	t.Logf("failover: %s promoted, writes acknowledged again %v after the kill", newPrimary, time.Since(killedAt).Round(time.Millisecond))

	np := plainClient(t, newPrimary)
	role, err := np.Do(ctx, "role").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("ROLE on the promoted replica: %v %v", role, err)
	}
	mu.Lock()
	for _, i := range acked {
		v, err := np.Get(ctx, fmt.Sprintf("k:%d", i)).Result()
		if err != nil || v != fmt.Sprintf("v:%d", i) {
			mu.Unlock()
			t.Fatalf("write %d, acknowledged by WAIT 1, is %q (%v) on the new primary", i, v, err)
		}
	}
	t.Logf("%d acknowledged writes, all on the new primary", len(acked))
	mu.Unlock()

	other := addrs[1]
	if other == newPrimary {
		other = addrs[2]
	}
	oc := plainClient(t, other)
	if n, err := np.Do(ctx, "wait", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the new primary: %d %v", n, err)
	}
	sameContent(t, "the other replica", dumpAll(t, ctx, np), dumpAll(t, ctx, oc))

	// The old primary restarts as a replica of the new one (Sentinel
	// would reconfigure it too, some seconds after it reports itself a
	// primary). It may hold writes the new primary lacks: then it takes a
	// full copy, its own data set aside. Either way it catches up.
	startNode(t, pdir, paddr, newPrimary)
	oldc := plainClient(t, paddr)
	waitUntil(t, 20*time.Second, "the old primary to catch up as a replica", func() bool {
		info, err := oldc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
	if n, err := np.Do(ctx, "wait", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the new primary: %d %v", n, err)
	}
	sameContent(t, "the old primary", dumpAll(t, ctx, np), dumpAll(t, ctx, oldc))
}
