package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// The tests here put three `lsmgo serve` behind twemproxy (nutcracker), the
// set-up doc/scale-out.md describes, and check what that document promises.

// shardNames are the server names in the proxy's configuration, the
// fourth for the shard added later. Ketama places keys by name, not by
// address, so a shard keeps its keys when it moves to another host:port.
var shardNames = []string{"shard1", "shard2", "shard3", "shard4"}

// proxy is a running nutcracker in front of some shards.
type proxy struct {
	addr   string
	conf   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// needNutcracker returns the nutcracker binary's path. Without one the test
// is skipped, except in CI (the CI variable set), whose .ci/run installs it:
// there a missing proxy is a failure, not a silent skip.
func needNutcracker(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("nutcracker")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("nutcracker (Debian package nutcracker) is missing under CI: %v", err)
		}
		t.Skipf("nutcracker not installed (apt-get install nutcracker): %v", err)
	}
	return path
}

// proxyConfig is the nutcracker pool of doc/scale-out.md with the given
// listen address and shard addresses.
func proxyConfig(listen string, shards []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lsmgo:\n  listen: %s\n  hash: fnv1a_64\n  hash_tag: \"{}\"\n  distribution: ketama\n", listen)
	b.WriteString("  redis: true\n  auto_eject_hosts: false\n  timeout: 2000\n  servers:\n")
	for i, addr := range shards {
		fmt.Fprintf(&b, "   - %s:1 %s\n", addr, shardNames[i])
	}
	return b.String()
}

// startProxy writes the configuration into dir and starts nutcracker on
// it, waiting until its port answers. Cleanup kills it by PID. nutcracker
// takes no port 0, so it is given free ports, and started again on others
// when one was taken before it bound it.
func startProxy(t *testing.T, bin, dir string, shards []string) *proxy {
	t.Helper()
	try := 0
	return testutil.StartRetrying(t, "nutcracker", func() (*proxy, error) {
		try++
		return tryStartProxy(t, bin, filepath.Join(dir, strconv.Itoa(try)), shards)
	})
}

// tryStartProxy is one try of startProxy, in a new directory under dir.
// It fails with the log of a nutcracker that exited before it served.
func tryStartProxy(t *testing.T, bin, dir string, shards []string) (*proxy, error) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &proxy{
		addr:   fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)),
		conf:   filepath.Join(dir, "nutcracker.yml"),
		log:    filepath.Join(dir, "nutcracker.log"),
		exited: make(chan struct{}),
	}
	if err := os.WriteFile(p.conf, []byte(proxyConfig(p.addr, shards)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "-c", p.conf, "-o", p.log, "-p", filepath.Join(dir, "nutcracker.pid"),
		"-a", "127.0.0.1", "-s", fmt.Sprint(testutil.FreePort(t)))
	out := &testutil.SyncBuffer{}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-p.exited:
			logText, _ := os.ReadFile(p.log)
			return nil, fmt.Errorf("nutcracker exited at start: %s\n%s", out, logText)
		default:
		}
		if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("nutcracker did not listen on %s", p.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills this nutcracker (its PID only) and waits for it.
func (p *proxy) stop() {
	p.cmd.Process.Kill()
	<-p.exited
}

// newClient is a go-redis client for nutcracker. go-redis v9 opens every
// connection with HELLO, which nutcracker 0.5 does not know and answers by
// closing the connection (go-redis issue 2616), so the client dials through
// helloShim; with RESP2 and no identity it sends nothing else on connect.
func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4,
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &helloShim{Conn: c}, nil
		},
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// helloShim answers a HELLO written as the connection's first command with
// an error reply itself instead of sending it, which go-redis takes as a
// server without HELLO and goes on in RESP2.
type helloShim struct {
	net.Conn
	started bool
	reply   []byte
}

func (c *helloShim) Write(b []byte) (int, error) {
	if !c.started {
		c.started = true
		if bytes.HasPrefix(bytes.ToUpper(b), []byte("*2\r\n$5\r\nHELLO\r\n")) {
			c.reply = []byte("-ERR unknown command 'HELLO'\r\n")
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}

func (c *helloShim) Read(b []byte) (int, error) {
	if len(c.reply) > 0 {
		n := copy(b, c.reply)
		c.reply = c.reply[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// ketama predicts the shard twemproxy's ketama distribution sends a key to,
// from the published algorithm: each of n equally weighted servers gets 160
// points on a 32-bit circle, four per MD5 digest of "name-i" (i from 0),
// each point the digest's bytes 4j..4j+3 read little-endian; a key goes to
// the first point at or after its hash, wrapping around. The key hash is
// FNV-1a as twemproxy's fnv1a_64 computes it (32-bit arithmetic on the low
// halves of the 64-bit offset basis and prime), over the text inside the
// first {...} when the key has one (hash_tag "{}").
type ketama struct {
	points []ketamaPoint
}

type ketamaPoint struct {
	value uint32
	shard int
}

func newKetama(names []string) *ketama {
	// With equal weights every server's share is 1/n of n*160 points.
	perServer := int(math.Floor(1.0/float64(len(names))*160/4*float64(len(names))+1e-10)) * 4
	k := &ketama{}
	for s, name := range names {
		for i := range perServer / 4 {
			d := md5.Sum([]byte(fmt.Sprintf("%s-%d", name, i)))
			for j := range 4 {
				k.points = append(k.points, ketamaPoint{binary.LittleEndian.Uint32(d[4*j:]), s})
			}
		}
	}
	sort.Slice(k.points, func(i, j int) bool { return k.points[i].value < k.points[j].value })
	return k
}

func (k *ketama) shard(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	h := uint32(0x84222325)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 0x1b3
	}
	i := sort.Search(len(k.points), func(i int) bool { return k.points[i].value >= h })
	if i == len(k.points) {
		i = 0
	}
	return k.points[i].shard
}

// TestShardsBehindTwemproxy starts three `lsmgo serve` and nutcracker in
// front of them, on loopback, and checks what doc/scale-out.md says: the
// commands the proxy forwards reply as one server would, every key lives
// on the one shard ketama names (and stays there across a proxy restart),
// a fourth shard takes only the keys ketama moves to it (and nutcracker
// copies none), the commands the document lists as unsupported are
// refused, and a killed shard fails only its own keys.
func TestShardsBehindTwemproxy(t *testing.T) {
	bin := needNutcracker(t)
	ctx := context.Background()
	var shards []*child
	var addrs []string
	for range 3 {
		c := startChild(t, "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--loglevel", "warning")
		shards = append(shards, c)
		addrs = append(addrs, c.addr)
	}
	p := startProxy(t, bin, t.TempDir(), addrs)
	pc := newClient(t, p.addr)

	t.Run("SameRepliesAsOneServer", func(t *testing.T) {
		// The same script against the proxy and against a lone server.
		single := startChild(t, "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--loglevel", "warning")
		sc := newClient(t, single.addr)
		for _, step := range proxyScript() {
			got, gotErr := pc.Do(ctx, step.args...).Result()
			want, wantErr := sc.Do(ctx, step.args...).Result()
			if errText(gotErr) != errText(wantErr) || !step.same(got, want) {
				t.Errorf("%v: proxy %#v, %v; one server %#v, %v", step.args, got, gotErr, want, wantErr)
			}
		}
	})

	// Keys written through the proxy, some sharing a hash tag.
	ring := newKetama(shardNames[:3])
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("key:%d", i))
	}
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("user:{%d}:name", i%5), fmt.Sprintf("user:{%d}:mail:%d", i%5, i))
	}
	for _, k := range keys {
		if err := pc.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
			t.Fatalf("SET %s through the proxy: %v", k, err)
		}
	}

	// placement asks every shard directly for every key.
	placement := func(t *testing.T) {
		t.Helper()
		var direct []*redis.Client
		for _, c := range shards {
			direct = append(direct, newClient(t, c.addr))
		}
		perShard := make([]int, len(shards))
		for _, k := range keys {
			var on []int
			for s, rc := range direct {
				n, err := rc.Exists(ctx, k).Result()
				if err != nil {
					t.Fatalf("EXISTS %s on %s: %v", k, shardNames[s], err)
				}
				if n == 1 {
					on = append(on, s)
				}
			}
			if want := ring.shard(k); len(on) != 1 || on[0] != want {
				t.Errorf("%s is on shards %v, ketama says %s", k, on, shardNames[want])
				continue
			}
			perShard[on[0]]++
		}
		for s, n := range perShard {
			// About a third each; a shard holding none means no sharding.
			if n < len(keys)/10 {
				t.Errorf("%s holds %d of %d keys", shardNames[s], n, len(keys))
			}
		}
		t.Logf("keys per shard: %v", perShard)
	}
	t.Run("KeysOnKetamaShard", placement)

	outer := t // the new proxy and its client outlive the subtest
	t.Run("SamePlacementAfterProxyRestart", func(t *testing.T) {
		p.stop()
		p = startProxy(outer, bin, outer.TempDir(), addrs)
		pc = newClient(outer, p.addr)
		for _, k := range keys {
			if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v-"+k {
				t.Fatalf("GET %s through the new proxy: %q, %v", k, v, err)
			}
		}
		placement(t)
	})

	t.Run("AddedShardTakesOnlyMovedKeys", func(t *testing.T) {
		// doc/scale-out.md: a fourth named server takes about a quarter
		// of the keys from the others and moves nothing among them, and
		// the proxy does not copy data: until the moved keys are copied
		// to the new shard, reads of them miss.
		extra := startChild(t, "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--loglevel", "warning")
		p4 := startProxy(t, bin, t.TempDir(), append(addrs[:3:3], extra.addr))
		c4 := newClient(t, p4.addr)
		ring4 := newKetama(shardNames)
		moved := 0
		for _, k := range keys {
			v, err := c4.Get(ctx, k).Result()
			switch before, after := ring.shard(k), ring4.shard(k); {
			case after == before:
				if err != nil || v != "v-"+k {
					t.Errorf("GET %s, which stays on %s: %q, %v", k, shardNames[after], v, err)
				}
			case after != 3:
				t.Errorf("%s moves from %s to %s, not to the new shard", k, shardNames[before], shardNames[after])
			default:
				moved++
				if !errors.Is(err, redis.Nil) {
					t.Errorf("GET %s, moved to the empty new shard: %q, %v", k, v, err)
				}
			}
		}
		if moved < len(keys)/10 || moved > len(keys)/2 {
			t.Errorf("%d of %d keys moved to the fourth shard", moved, len(keys))
		}
		t.Logf("adding %s moved %d of %d keys", shardNames[3], moved, len(keys))
	})

	t.Run("UnsupportedCommandsRefused", func(t *testing.T) {
		for _, args := range [][]any{
			{"KEYS", "*"}, {"SCAN", "0"}, {"MULTI"}, {"FLUSHALL"}, {"FLUSHDB"}, {"DBSIZE"},
			{"RANDOMKEY"}, {"RENAME", "key:1", "key:2"}, {"MSETNX", "a", "1", "b", "2"},
			{"INFO"}, {"SELECT", "1"}, {"CONFIG", "GET", "maxmemory"},
		} {
			// nutcracker answers an unsupported command by closing the
			// connection, so each one gets a fresh client.
			rc := newClient(t, p.addr)
			if v, err := rc.Do(ctx, args...).Result(); err == nil {
				t.Errorf("%v through the proxy: %#v, want an error", args, v)
			}
			rc.Close()
		}
		if v, err := pc.Get(ctx, "key:1").Result(); err != nil || v != "v-key:1" {
			t.Errorf("after the refusals GET key:1 = %q, %v", v, err)
		}
	})

	t.Run("KilledShardFailsOnlyItsKeys", func(t *testing.T) {
		const dead = 1
		if err := shards[dead].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-shards[dead].exited
		failed, served := 0, 0
		var sample error
		for _, k := range keys {
			v, err := pc.Get(ctx, k).Result()
			if ring.shard(k) == dead {
				if err == nil || errors.Is(err, redis.Nil) {
					t.Errorf("GET %s, whose shard is dead: %q, %v", k, v, err)
				}
				sample = err
				failed++
				continue
			}
			if err != nil || v != "v-"+k {
				t.Errorf("GET %s, whose shard is alive: %q, %v", k, v, err)
			}
			served++
		}
		if failed == 0 || served == 0 {
			t.Errorf("%d keys failed, %d served: the check did not cover both", failed, served)
		}
		t.Logf("with %s killed: %d keys failed (%v), %d served", shardNames[dead], failed, sample, served)
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// scriptStep is one command of proxyScript and how to compare its replies.
type scriptStep struct {
	args []any
	same func(proxy, single any) bool
}

// proxyScript exercises every command that nutcracker 0.5 forwards and
// lsmgo implements. Multi-key commands name keys spread over the shards,
// which the proxy splits and merges; EXISTS takes one key, because
// nutcracker 0.5 sends a multi-key EXISTS whole to its first key's shard
// (doc/scale-out.md). Time-dependent replies (TTL, PTTL)
// are compared with a tolerance.
func proxyScript() []scriptStep {
	exact := func(a, b any) bool { return reflect.DeepEqual(a, b) }
	within := func(d int64) func(a, b any) bool {
		return func(a, b any) bool {
			x, ok1 := a.(int64)
			y, ok2 := b.(int64)
			return ok1 && ok2 && x >= 0 && y >= 0 && x-y <= d && y-x <= d
		}
	}
	var steps []scriptStep
	add := func(same func(a, b any) bool, args ...any) {
		steps = append(steps, scriptStep{args, same})
	}
	var mset, mget, del []any
	mset = append(mset, "MSET")
	mget = append(mget, "MGET")
	del = append(del, "DEL")
	for i := range 12 {
		mset = append(mset, fmt.Sprintf("m%d", i), fmt.Sprintf("v%d", i))
		mget = append(mget, fmt.Sprintf("m%d", i))
		if i%2 == 0 {
			del = append(del, fmt.Sprintf("m%d", i))
		}
	}
	mget = append(mget, "missing")
	del = append(del, "missing")

	add(exact, "PING")
	add(exact, "SET", "s", "hello")
	add(exact, "GET", "s")
	add(exact, "GET", "nothing")
	add(exact, "SET", "s", "again", "NX")
	add(exact, "SET", "s", "world", "XX", "GET")
	add(exact, "SETNX", "s", "x")
	add(exact, "SETNX", "n1", "x")
	add(exact, "GETSET", "s", "third")
	add(exact, "APPEND", "s", "-tail")
	add(exact, "STRLEN", "s")
	add(exact, "GETRANGE", "s", "1", "4")
	add(exact, "SETRANGE", "s", "2", "XY")
	add(exact, "GET", "s")
	add(exact, "INCR", "c")
	add(exact, "INCRBY", "c", "41")
	add(exact, "DECR", "c")
	add(exact, "DECRBY", "c", "10")
	add(exact, "INCRBYFLOAT", "f", "1.5")
	add(exact, "INCR", "s")
	add(exact, "TYPE", "c")
	add(exact, "TYPE", "nothing")
	add(exact, mset...)
	add(exact, mget...)
	add(exact, "EXISTS", "m5")
	add(exact, "EXISTS", "missing")
	add(exact, del...)
	add(exact, mget...)
	add(exact, "UNLINK", "m1", "m3", "m5", "m7", "missing")
	add(exact, mget...)
	add(exact, "SETEX", "e1", "100", "v")
	add(within(1), "TTL", "e1")
	add(exact, "PSETEX", "e2", "100000", "v")
	add(within(1000), "PTTL", "e2")
	add(exact, "EXPIRE", "c", "200")
	add(within(1), "TTL", "c")
	add(exact, "PEXPIRE", "c", "300000")
	add(within(1000), "PTTL", "c")
	add(exact, "PERSIST", "c")
	add(exact, "TTL", "c")
	add(exact, "EXPIREAT", "n1", "4102444800")
	add(within(1), "TTL", "n1")
	add(exact, "PEXPIREAT", "n1", "4102444800000")
	add(exact, "EXPIRE", "nothing", "10")
	add(exact, "TTL", "nothing")
	add(exact, "GETEX", "s", "EX", "50")
	add(within(1), "TTL", "s")
	add(exact, "GETDEL", "s")
	add(exact, "GET", "s")
	add(exact, "DEL", "e1", "e2", "n1", "c", "f")
	add(exact, "EXISTS", "e1")
	return steps
}
