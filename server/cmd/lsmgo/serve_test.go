package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestServeChild is not a test: it is the server process the other tests
// start (the test binary re-executed), so that they can kill it.
func TestServeChild(t *testing.T) {
	args := os.Getenv("LSMGO_SERVE_CHILD_ARGS")
	if args == "" {
		t.Skip("runs only as a child of the serve tests")
	}
	argv := append([]string{"serve"}, strings.Split(args, "\n")...)
	if os.Getenv("LSMGO_EVENT_LOOP") == "yes" {
		// The switch of the server package's tests (helpers_test.go).
		argv = append(argv, "--event-loop", "yes")
	}
	os.Exit(runMain(argv, os.Stdout, os.Stderr))
}

// child is a running `lsmgo serve` subprocess.
type child struct {
	cmd    *exec.Cmd
	addr   string
	line   string // the startup line on stdout
	stderr *testutil.SyncBuffer
	exited chan struct{}
	err    error
}

// startChild runs the server in a subprocess and waits for its listening
// line. Cleanup kills it if it is still running. A child given a port
// (one restarted on its old address) may find it taken for a moment,
// and is started again (testutil.StartRetrying).
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return testutil.StartRetrying(t, "lsmgo serve", func() (*child, error) { return tryStartChild(t, args...) })
}

// tryStartChild is one try of startChild: it fails if the child exits
// before its listening line, with what the child wrote on stderr.
func tryStartChild(t *testing.T, args ...string) (*child, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(), "LSMGO_SERVE_CHILD_ARGS="+strings.Join(args, "\n"))
	c := &child{cmd: cmd, stderr: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // only this child's PID; harmless if it exited
		<-c.exited
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		c.line = l
		if _, err := fmt.Sscanf(l, "lsmgo serve: listening addr=%s", &c.addr); err != nil {
			if l == "" {
				<-c.exited // stdout closed: stderr is complete once it has exited
				return nil, fmt.Errorf("the child exited at start (%v); stderr:\n%s", c.err, c.stderr)
			}
			t.Fatalf("child said %q (%v); stderr:\n%s", l, err, c.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not start; stderr:\n%s", c.stderr)
	}
	return c, nil
}

// startFresh starts a child on a new directory under the given
// appendfsync mode; args start it again on that directory after a kill.
func startFresh(t *testing.T, mode string) (srv *child, args []string) {
	t.Helper()
	args = []string{"--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", mode, "--loglevel", "warning"}
	return startChild(t, args...), args
}

// killAfter sends SIGKILL to the child once acked reaches n, or after 20
// seconds whatever it is, and waits for the child to exit.
func (c *child) killAfter(t *testing.T, acked *atomic.Int64, n int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); acked.Load() < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.exited
}

// killMidWrites runs writers goroutines against the child and kills it
// with SIGKILL in the middle of their writes. newWriter(w) runs on the
// test's goroutine, so it may set up and t.Fatal; it returns writer w's
// step, which its goroutine calls until the step fails (the kill cut the
// connection; an error reply fails the test) or the writers are stopped. A step returns how many of its
// writes the server acknowledged; once they reach n in all, or after 20
// seconds (killAfter), the child is killed. killMidWrites returns when
// every writer has stopped, so their progress can then be read.
func (c *child) killMidWrites(t *testing.T, writers int, n int64, newWriter func(w int) (step func() (int64, error))) {
	t.Helper()
	var total atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		step := newWriter(w)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				acked, err := step()
				total.Add(acked)
				if err != nil {
					// The kill cuts the connection; an error reply is
					// the test's mistake, which would otherwise stop
					// the writer quietly and leave the kill to the
					// 20 s fallback with little written.
					var rerr redis.Error
					if errors.As(err, &rerr) {
						t.Errorf("writer %d: %v", w, err)
					}
					return
				}
			}
		})
	}
	c.killAfter(t, &total, n)
	close(stop)
	wg.Wait()
}

func (c *child) client(t *testing.T) *redis.Client {
	rc := redis.NewClient(&redis.Options{
		Addr: c.addr, Protocol: 2, MaxRetries: -1, PoolSize: 4,
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// TestKill9LosesNoAcknowledgedWrite kills the server with SIGKILL while
// clients write, then restarts it and checks that every acknowledged write
// survived, under each appendfsync mode. All three write the WAL before
// replying, so only a power loss, never a process crash, can lose writes.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	for _, mode := range []string{"always", "everysec", "no"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", mode, "--loglevel", "warning"}
			srv := startChild(t, args...)

			const writers = 6
			type acked struct {
				keys   map[string]string
				latest int // highest acknowledged SET of the writer's "latest" key
				count  int64
			}
			results := make([]acked, writers)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var ackCount atomic.Int64
			for w := range writers {
				wg.Add(1)
				rc := srv.client(t)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					r := acked{keys: map[string]string{}}
					defer func() { results[w] = r }()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						// Alternate single commands with pipelines, which the
						// server commits as one batch.
						if i%2 == 0 {
							k, v := fmt.Sprintf("w%d:k%d", w, i), fmt.Sprintf("v%d-%d", w, i)
							if rc.Set(ctx, k, v, 0).Err() != nil {
								return
							}
							r.keys[k] = v
							if n, err := rc.Incr(ctx, fmt.Sprintf("w%d:count", w)).Result(); err == nil {
								r.count = n
							} else {
								return
							}
						} else {
							pipe := rc.Pipeline()
							var cmds []*redis.StatusCmd
							for j := range 10 {
								cmds = append(cmds, pipe.Set(ctx, fmt.Sprintf("w%d:k%d:%d", w, i, j), j, 0))
							}
							latest := pipe.Set(ctx, fmt.Sprintf("w%d:latest", w), i, 0)
							pipe.Exec(ctx)
							for j, c := range cmds {
								if c.Err() == nil {
									r.keys[fmt.Sprintf("w%d:k%d:%d", w, i, j)] = fmt.Sprint(j)
								}
							}
							if latest.Err() != nil {
								return
							}
							r.latest = i
						}
						ackCount.Add(1)
					}
				}()
			}
			// Kill mid-stream, once a good number of writes are in.
			srv.killAfter(t, &ackCount, 600)
			close(stop)
			wg.Wait()

			srv2 := startChild(t, args...)
			rc := srv2.client(t)
			ctx := context.Background()
			checked := 0
			for w, r := range results {
				for k, v := range r.keys {
					got, err := rc.Get(ctx, k).Result()
					if err != nil || got != v {
						t.Fatalf("acknowledged %s=%s lost after kill -9: got %q, %v", k, v, got, err)
					}
					checked++
				}
				if n, _ := rc.Get(ctx, fmt.Sprintf("w%d:count", w)).Int64(); n < r.count {
					t.Fatalf("writer %d: counter %d after restart, %d acknowledged", w, n, r.count)
				}
				if r.latest > 0 {
					if n, _ := rc.Get(ctx, fmt.Sprintf("w%d:latest", w)).Int(); n < r.latest {
						t.Fatalf("writer %d: latest %d after restart, %d acknowledged", w, n, r.latest)
					}
				}
			}
			t.Logf("appendfsync %s: %d acknowledged writes all survived kill -9", mode, checked)
		})
	}
}

// TestServeSIGTERM checks the graceful path: SIGTERM stops the server with
// status 0 and the data is there after a restart.
func TestServeSIGTERM(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	srv := startChild(t, args...)
	rc := srv.client(t)
	ctx := context.Background()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop on SIGTERM")
	}
	if srv.err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", srv.err, srv.stderr)
	}
	if !strings.Contains(srv.stderr.String(), "lsmgo server stopped") {
		t.Errorf("stderr lacks the stop message:\n%s", srv.stderr)
	}
	if !strings.Contains(srv.stderr.String(), "lsmgo serve: received terminated;") {
		t.Errorf("stderr does not name the signal:\n%s", srv.stderr)
	}
	for _, want := range []string{fmt.Sprintf(" dir=%q ", dir), " version=(devel) commit=", " http=127.0.0.1:"} {
		if !strings.Contains(srv.line, want) {
			t.Errorf("startup line %q lacks %q", srv.line, want)
		}
	}
	again := startChild(t, args...)
	if v, err := again.client(t).Get(ctx, "k").Result(); v != "v" {
		t.Errorf("after restart k = %q, %v", v, err)
	}
}

func TestServeFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runMain([]string{"serve", "--nope"}, &out, &errOut); code != 2 {
		t.Errorf("unknown flag: status %d", code)
	}
	errOut.Reset()
	if code := runMain([]string{"serve", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-appendfsync") {
		t.Errorf("--help: status %d, output %q", code, out.String())
	}
	errOut.Reset()
	if code := runMain([]string{"serve", "--appendfsync", "sometimes"}, &out, &errOut); code != 2 {
		t.Errorf("bad appendfsync: status %d", code)
	}
	errOut.Reset()
	code := runMain([]string{"serve", "--dir", t.TempDir(), "--addr", "0.0.0.0:0", "--http", ""}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "without requirepass") {
		t.Errorf("non-loopback without password: status %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := runMain([]string{"serve", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("extra argument: status %d", code)
	}
}

// TestKill9TransactionsAllOrNothing kills the server with SIGKILL while
// clients run multi-key transactions, then restarts it: no transaction
// may be partly applied. Each transaction moves money between accounts
// (the total never changes) and stamps its id on a string, a hash field
// and a set member of one of a few slots, so a torn one shows as a slot
// whose three stamps differ, or a total that moved; every acknowledged
// transaction must be there.
func TestKill9TransactionsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", "no", "--loglevel", "warning"}
	srv := startChild(t, args...)
	ctx := context.Background()
	const accounts, initial, slots, writers = 8, 1000, 4, 4
	setup := srv.client(t)
	for i := range accounts {
		if err := setup.Set(ctx, fmt.Sprint("acct", i), initial, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	acked := make([]int, writers) // the last acknowledged id per writer
	var wg sync.WaitGroup
	var ackCount atomic.Int64
	for w := range writers {
		wg.Add(1)
		rc := srv.client(t)
		go func() {
			defer wg.Done()
			for i := 1; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				slot := fmt.Sprint(i % slots)
				_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, fmt.Sprint("acct", (i+w)%accounts), int64(i%7))
					p.IncrBy(ctx, fmt.Sprint("acct", (i*3+w)%accounts), int64(i%7))
					p.Set(ctx, "str"+slot, id, 0)
					p.HSet(ctx, "hash"+slot, "id", id)
					p.Del(ctx, "set"+slot)
					p.SAdd(ctx, "set"+slot, id)
					p.Set(ctx, fmt.Sprint("done:", id), 1, 0)
					return nil
				})
				if err != nil {
					return
				}
				acked[w] = i
				ackCount.Add(1)
			}
		}()
	}
	srv.killAfter(t, &ackCount, 300)
	wg.Wait()

	rc := startChild(t, args...).client(t)
	total := int64(0)
	for i := range accounts {
		n, err := rc.Get(ctx, fmt.Sprint("acct", i)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != accounts*initial {
		t.Fatalf("accounts total %d after kill -9, want %d: a transfer was torn", total, accounts*initial)
	}
	for s := range slots {
		str := rc.Get(ctx, fmt.Sprint("str", s)).Val()
		h := rc.HGet(ctx, fmt.Sprint("hash", s), "id").Val()
		members := rc.SMembers(ctx, fmt.Sprint("set", s)).Val()
		if str != h || len(members) != 1 || members[0] != str {
			t.Fatalf("slot %d torn after kill -9: string %q, hash %q, set %q", s, str, h, members)
		}
		if str != "" && rc.Exists(ctx, "done:"+str).Val() != 1 {
			t.Fatalf("slot %d stamped by %s, whose done marker is missing", s, str)
		}
	}
	for w, last := range acked {
		if last > 0 && rc.Exists(ctx, fmt.Sprintf("done:w%d-%d", w, last)).Val() != 1 {
			t.Fatalf("writer %d: acknowledged transaction %d lost after kill -9", w, last)
		}
	}
	t.Logf("%d transactions acknowledged; none torn or lost after kill -9", ackCount.Load())
}
