package server

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// blockStep is one step of a blocking scenario: client sends args. With
// blocks, the step waits until the server counts one more blocked client
// instead of reading the reply, which is read at the end (with timesOut,
// it does not wait: the timeout may pass first); with close, the
// client disconnects instead and the step waits until the server counts
// one blocked client fewer.
type blockStep struct {
	client   int
	args     []string
	blocks   bool
	timesOut bool
	close    bool
}

// blockScenarios run against lsmgo and redis-server alike; every client's
// replies must match.
var blockScenarios = map[string][]blockStep{
	"fairness in arrival order": {
		{client: 0, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 1, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 2, args: []string{"BRPOP", "k", "0"}, blocks: true},
		{client: 3, args: []string{"RPUSH", "k", "a", "b", "c", "d"}},
		{client: 3, args: []string{"LRANGE", "k", "0", "-1"}},
	},
	"fewer elements than waiters": {
		{client: 0, args: []string{"BRPOP", "k", "0"}, blocks: true},
		{client: 1, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 2, args: []string{"LPUSH", "k", "a"}},
		{client: 2, args: []string{"LPUSH", "k", "b"}},
	},
	"several keys": {
		{client: 0, args: []string{"BLPOP", "k1", "0"}, blocks: true},
		{client: 1, args: []string{"BLPOP", "k2", "0"}, blocks: true},
		{client: 2, args: []string{"BLPOP", "k1", "k2", "0"}, blocks: true},
		{client: 3, args: []string{"RPUSH", "k2", "x", "y"}},
		{client: 3, args: []string{"RPUSH", "k1", "z"}},
		{client: 3, args: []string{"EXISTS", "k1", "k2"}},
	},
	"BLMOVE chain": {
		{client: 0, args: []string{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"}, blocks: true},
		{client: 1, args: []string{"BLPOP", "b", "0"}, blocks: true},
		{client: 2, args: []string{"RPUSH", "a", "v", "w"}},
		{client: 2, args: []string{"LRANGE", "a", "0", "-1"}},
		{client: 2, args: []string{"LRANGE", "b", "0", "-1"}},
	},
	"BLMOVE onto a wrong type": {
		{client: 0, args: []string{"BLMOVE", "a", "b", "LEFT", "LEFT", "0"}, blocks: true},
		{client: 1, args: []string{"SET", "b", "string"}},
		{client: 1, args: []string{"RPUSH", "a", "v"}},
		{client: 1, args: []string{"LLEN", "a"}},
	},
	"BRPOPLPUSH rotation": {
		{client: 0, args: []string{"BRPOPLPUSH", "k", "k", "0"}, blocks: true},
		{client: 1, args: []string{"RPUSH", "k", "a"}},
		{client: 1, args: []string{"LRANGE", "k", "0", "-1"}},
	},
	"BLMPOP with COUNT": {
		{client: 0, args: []string{"BLMPOP", "0", "2", "k1", "k2", "RIGHT", "COUNT", "2"}, blocks: true},
		{client: 1, args: []string{"RPUSH", "k2", "a", "b", "c"}},
		{client: 1, args: []string{"LRANGE", "k2", "0", "-1"}},
	},
	"RENAME onto a watched key": {
		{client: 0, args: []string{"BLPOP", "dst", "0"}, blocks: true},
		{client: 1, args: []string{"RPUSH", "src", "x", "y"}},
		{client: 1, args: []string{"RENAME", "src", "dst"}},
		{client: 1, args: []string{"LRANGE", "dst", "0", "-1"}},
	},
	"another type does not wake": {
		{client: 0, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 1, args: []string{"SADD", "s", "m"}},
		{client: 1, args: []string{"RENAME", "s", "k"}},
		{client: 1, args: []string{"TYPE", "k"}},
		{client: 1, args: []string{"DEL", "k"}},
		{client: 1, args: []string{"RPUSH", "k", "x"}},
	},
	"timeouts": {
		{client: 0, args: []string{"BLPOP", "k", "0.1"}, timesOut: true},
		{client: 1, args: []string{"BLMOVE", "k", "d", "LEFT", "LEFT", "0.1"}, timesOut: true},
		{client: 2, args: []string{"BLMPOP", "0.1", "1", "k", "LEFT"}, timesOut: true},
		{client: 3, args: []string{"BRPOPLPUSH", "k", "d", "0.1"}, timesOut: true},
	},
	"inside MULTI": {
		{client: 0, args: []string{"MULTI"}},
		{client: 0, args: []string{"BLPOP", "k", "0"}},
		{client: 0, args: []string{"BLMOVE", "k", "d", "LEFT", "LEFT", "0"}},
		{client: 0, args: []string{"BLMPOP", "0", "1", "k", "LEFT"}},
		{client: 0, args: []string{"RPUSH", "k", "a"}},
		{client: 0, args: []string{"BRPOPLPUSH", "k", "d", "0"}},
		{client: 0, args: []string{"EXEC"}},
	},
	"EXEC wakes once committed": {
		{client: 0, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 1, args: []string{"MULTI"}},
		{client: 1, args: []string{"RPUSH", "k", "a"}},
		{client: 1, args: []string{"LPUSH", "k", "b"}},
		{client: 1, args: []string{"EXEC"}},
		{client: 1, args: []string{"LRANGE", "k", "0", "-1"}},
	},
	"disconnect while blocked": {
		{client: 0, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 1, args: []string{"BLPOP", "k", "0"}, blocks: true},
		{client: 0, close: true},
		{client: 2, args: []string{"RPUSH", "k", "a", "b"}},
		{client: 2, args: []string{"LRANGE", "k", "0", "-1"}},
	},
}

// TestBlockingDiff runs blockScenarios against redis-server and lsmgo,
// each on fresh connections, and compares every client's replies. Steps
// wait on INFO's blocked_clients, never on time.
func TestBlockingDiff(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for name, steps := range blockScenarios {
		t.Run(name, func(t *testing.T) {
			for _, proto := range []int{2, 3} {
				want := runBlockScenario(t, "unix", redisSock, proto, steps)
				got := runBlockScenario(t, "tcp", s.Addr().String(), proto, steps)
				t.Logf("RESP%d: %q", proto, want)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("RESP%d client %d:\n lsmgo: %s\n redis: %s", proto, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// runBlockScenario runs steps on fresh connections after a FLUSHALL and
// returns each client's replies, rendered.
func runBlockScenario(t *testing.T, network, addr string, proto int, steps []blockStep) []string {
	t.Helper()
	ctl := dialDiff(t, network, addr, 2)
	ctl.do(t, "FLUSHALL")
	conns := map[int]*diffConn{}
	pending := map[int]int{}
	replies := map[int][]string{}
	clients := 0
	for _, st := range steps {
		clients = max(clients, st.client+1)
	}
	for i := range clients {
		conns[i] = dialDiff(t, network, addr, proto)
	}
	for _, st := range steps {
		d := conns[st.client]
		before := blockedClients(t, ctl)
		switch {
		case st.close:
			d.nc.Close()
			waitBlocked(t, ctl, before-1)
		case st.blocks || st.timesOut:
			d.send(st.args)
			if _, err := d.flushRead(0); err != nil {
				t.Fatal(err)
			}
			pending[st.client]++
			if st.blocks {
				waitBlocked(t, ctl, before+1)
			}
		default:
			d.send(st.args)
			v, err := d.flushRead(1)
			if err != nil {
				t.Fatal(err)
			}
			replies[st.client] = append(replies[st.client], render(v[0], exact))
		}
	}
	out := make([]string, clients)
	for i := range clients {
		if n := pending[i]; n > 0 && !stepsClose(steps, i) {
			vs, err := conns[i].flushRead(n)
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			for _, v := range vs {
				replies[i] = append(replies[i], render(v, exact))
			}
		}
		out[i] = fmt.Sprint(replies[i])
	}
	return out
}

func stepsClose(steps []blockStep, client int) bool {
	for _, st := range steps {
		if st.close && st.client == client {
			return true
		}
	}
	return false
}

var blockedRe = regexp.MustCompile(`blocked_clients:(\d+)`)

// blockedClients reads INFO's blocked_clients through d.
func blockedClients(t *testing.T, d *diffConn) int {
	t.Helper()
	d.send([]string{"INFO", "clients"})
	v, err := d.flushRead(1)
	if err != nil {
		t.Fatal(err)
	}
	m := blockedRe.FindSubmatch(v[0].Str)
	if m == nil {
		t.Fatalf("no blocked_clients in %q", v[0].Str)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// waitBlocked waits until the server counts n blocked clients; the
// deadline is generous, for a loaded machine.
func waitBlocked(t *testing.T, d *diffConn, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); blockedClients(t, d) != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d blocked clients", n)
		}
	}
}

// TestBlockingShutdown: a client blocked forever is woken by shutdown,
// gets an error, and shutdown does not wait for it.
func TestBlockingShutdown(t *testing.T) {
	s := startServer(t, nil)
	d := dialDiff(t, "tcp", s.Addr().String(), 2)
	ctl := dialDiff(t, "tcp", s.Addr().String(), 2)
	d.send([]string{"BLPOP", "k", "0"})
	if _, err := d.flushRead(0); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	v, err := d.flushRead(1)
	if err != nil {
		t.Fatal(err)
	}
	if v[0].Err != "ERR server is shutting down" {
		t.Errorf("blocked client got %s, want the shutdown error", render(v[0], exact))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.blocked.blocked.Load() != 0 {
		t.Errorf("%d clients still counted blocked", s.blocked.blocked.Load())
	}
}

// TestBlockingPipelineAfterBlock: commands pipelined behind a blocking one
// run after it is served, in order, and a client that half-closes after
// sending them is released.
func TestBlockingPipelineAfterBlock(t *testing.T) {
	s := startServer(t, nil)
	d := dialDiff(t, "tcp", s.Addr().String(), 2)
	ctl := dialDiff(t, "tcp", s.Addr().String(), 2)
	d.send([]string{"BLPOP", "k", "0"})
	d.send([]string{"LPUSH", "k", "again"})
	d.send([]string{"LPOP", "k"})
	if _, err := d.flushRead(0); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	ctl.do(t, "RPUSH", "k", "first")
	vs, err := d.flushRead(3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, render(v, exact))
	}
	want := []string{`*[2:$"k",$"first"]`, ":1", `$"again"`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}

	// A client that sends BLPOP and more, then shuts its side, is
	// released and closed, as Redis closes a client on EOF.
	d.send([]string{"BLPOP", "k", "0"})
	d.send([]string{"PING"})
	if _, err := d.flushRead(0); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	d.nc.(*net.TCPConn).CloseWrite()
	waitBlocked(t, ctl, 0)
	if _, err := d.rd.ReadValue(); err == nil {
		t.Error("the half-closed client got a reply; want the connection closed")
	}
}

// TestBlockingConcurrent: producers push distinct elements while
// consumers pop them with BLPOP, BRPOP, BLMOVE and BLMPOP and short or
// infinite timeouts; every element must arrive exactly once (none lost
// to a missed wake-up, none twice) and no client may stay blocked.
func TestBlockingConcurrent(t *testing.T) {
	s := startServer(t, nil)
	producers, perProducer, consumers := 4, 300, 4
	if testing.Short() {
		perProducer = 100
	}
	total := producers * perProducer
	keys := []string{"q0", "q1", "q2"}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := dialDiff(t, "tcp", s.Addr().String(), 2)
			rng := newRand(int64(p))
			for i := range perProducer {
				d.send([]string{"RPUSH", keys[rng.IntN(len(keys))], fmt.Sprintf("p%d-%d", p, i)})
				if _, err := d.flushRead(1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	collected := make(chan struct{})
	for cn := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := dialDiff(t, "tcp", s.Addr().String(), 2+cn%2)
			rng := newRand(int64(100 + cn))
			for {
				select {
				case <-collected:
					return
				default:
				}
				timeout := []string{"0.05", "0.2", "1"}[rng.IntN(3)]
				var args []string
				switch rng.IntN(4) {
				case 0:
					args = []string{"BLPOP", "q0", "q1", "q2", timeout}
				case 1:
					args = []string{"BRPOP", keys[rng.IntN(3)], timeout}
				case 2:
					// Moves onto a key no producer writes, whose
					// elements are collected with the others.
					args = []string{"BLMOVE", keys[rng.IntN(3)], "q2", "LEFT", "LEFT", timeout}
				default:
					args = []string{"BLMPOP", timeout, "3", "q0", "q1", "q2", "RIGHT", "COUNT", "2"}
				}
				d.send(args)
				v, err := d.flushRead(1)
				if err != nil {
					t.Error(err)
					return
				}
				var got [][]byte
				switch {
				case v[0].Null || v[0].Type == '_':
				case v[0].Type == '-':
					t.Errorf("%q: %s", args, v[0].Err)
					return
				case args[0] == "BLMOVE":
					// Counted when popped from q2 later.
				case args[0] == "BLMPOP":
					for _, e := range v[0].Array[1].Array {
						got = append(got, e.Str)
					}
				default:
					got = append(got, v[0].Array[1].Str)
				}
				mu.Lock()
				for _, e := range got {
					seen[string(e)]++
				}
				if len(seen) == total {
					select {
					case <-collected:
					default:
						close(collected)
					}
				}
				mu.Unlock()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("%d of %d elements arrived in 2 minutes", n, total)
	}
	for e, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", e, n)
		}
	}
	if len(seen) != total {
		t.Errorf("%d of %d elements arrived", len(seen), total)
	}
	ctl := dialDiff(t, "tcp", s.Addr().String(), 2)
	waitBlocked(t, ctl, 0)
	ctl.send([]string{"EXISTS", "q0", "q1", "q2"})
	if v, err := ctl.flushRead(1); err != nil || v[0].Int != 0 {
		t.Errorf("lists left behind: %v %v", render(v[0], exact), err)
	}
}

// TestBlockingRandomDiff runs seeded random scenarios on redis-server and
// lsmgo: clients block on random keys (BLPOP, BRPOP, BLMOVE, BLMPOP)
// while a pusher pushes and moves elements, and every reply, the blocked
// clients' included, must match. A client blocks only when all its keys
// are empty, which the harness reads before sending, so both servers see
// the same steps; at the end the pusher fills every key until no client
// is left blocked.
func TestBlockingRandomDiff(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	scenarios := 40
	if testing.Short() {
		scenarios = 15
	}
	for seed := range scenarios {
		proto := 2 + seed%2
		want := runRandomBlocking(t, "unix", redisSock, proto, uint64(seed))
		got := runRandomBlocking(t, "tcp", s.Addr().String(), proto, uint64(seed))
		if got != want {
			t.Fatalf("seed %d:\n lsmgo: %s\n redis: %s", seed, got, want)
		}
	}
}

// runRandomBlocking runs the scenario of seed and returns every client's
// replies and the keys' final contents, rendered.
func runRandomBlocking(t *testing.T, network, addr string, proto int, seed uint64) string {
	t.Helper()
	rng := newRand(int64(seed))
	keys := []string{"a", "b", "c"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	ctl := dialDiff(t, network, addr, 2)
	ctl.do(t, "FLUSHALL")
	const waiters = 6
	conns := make([]*diffConn, waiters)
	for i := range conns {
		conns[i] = dialDiff(t, network, addr, proto)
	}
	pusher := dialDiff(t, network, addr, proto)
	var log []string
	doPush := func(args ...string) {
		pusher.send(args)
		v, err := pusher.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, fmt.Sprintf("%q=%s", args, render(v[0], exact)))
	}
	empty := func(ks ...string) bool {
		ctl.send(append([]string{"EXISTS"}, ks...))
		v, err := ctl.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		return v[0].Int == 0
	}
	next := 0 // clients before next are blocked or were served since
	for range 40 {
		if next == waiters || rng.IntN(2) == 0 {
			switch rng.IntN(3) {
			case 0, 1:
				args := []string{[]string{"RPUSH", "LPUSH"}[rng.IntN(2)], key()}
				for range 1 + rng.IntN(3) {
					args = append(args, strconv.Itoa(rng.IntN(100)))
				}
				doPush(args...)
			default:
				doPush("LMOVE", key(), key(), "LEFT", "RIGHT")
			}
			continue
		}
		var args, sources []string
		k1, k2, timeout := key(), key(), "0"
		switch rng.IntN(4) {
		case 0:
			args, sources = []string{"BLPOP", k1, k2, timeout}, []string{k1, k2}
		case 1:
			args, sources = []string{"BRPOP", k1, timeout}, []string{k1}
		case 2:
			args, sources = []string{"BLMOVE", k1, k2, "RIGHT", "LEFT", timeout}, []string{k1}
		default:
			args, sources = []string{"BLMPOP", timeout, "2", k1, k2, "LEFT", "COUNT", "2"}, []string{k1, k2}
		}
		d := conns[next]
		before := blockedClients(t, ctl)
		willBlock := empty(sources...)
		d.send(args)
		if !willBlock {
			// Served at once: read the reply before the next step, which
			// could otherwise reach the server first.
			v, err := d.flushRead(1)
			if err != nil {
				t.Fatal(err)
			}
			log = append(log, fmt.Sprintf("%q=%s", args, render(v[0], exact)))
			continue
		}
		if _, err := d.flushRead(0); err != nil {
			t.Fatal(err)
		}
		log = append(log, fmt.Sprintf("client %d %q", next, args))
		waitBlocked(t, ctl, before+1)
		next++
	}
	for n := blockedClients(t, ctl); n > 0; n = blockedClients(t, ctl) {
		for _, k := range keys {
			doPush("RPUSH", k, "end")
		}
	}
	for i, d := range conns[:next] {
		v, err := d.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, fmt.Sprintf("client %d: %s", i, render(v[0], exact)))
	}
	for _, k := range keys {
		doPush("LRANGE", k, "0", "-1")
	}
	return fmt.Sprint(log)
}
