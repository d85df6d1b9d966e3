package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/redis/go-redis/v9"
)

// TestFinishFullSync starts finishFullSync from every state a kill -9 can
// leave between the steps of a full sync and its swap, and checks that the
// data directory then holds the old data or the new, whole, and nothing
// else remains.
func TestFinishFullSync(t *testing.T) {
	// Each state lists the directories present and what each holds; want
	// is what DIR must hold after.
	cases := []struct {
		name  string
		state map[string]string
		want  string
	}{
		{"receiving", map[string]string{"": "old", fullSyncTmp: "part"}, "old"},
		{"received", map[string]string{"": "old", fullSyncReady: "new"}, "new"},
		{"old moved aside", map[string]string{fullSyncOld: "old", fullSyncReady: "new"}, "new"},
		{"new in place", map[string]string{"": "new", fullSyncOld: "old"}, "new"},
		{"stale old and a new copy", map[string]string{"": "old", fullSyncOld: "older", fullSyncReady: "new"}, "new"},
		{"only old", map[string]string{fullSyncOld: "old"}, "old"},
		{"nothing to do", map[string]string{"": "old"}, "old"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			for suffix, content := range tc.state {
				if err := os.MkdirAll(filepath.Join(dir+suffix, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir+suffix, "marker"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := finishFullSync(vfs.Default, dir); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "marker"))
			if err != nil || string(got) != tc.want {
				t.Fatalf("DIR holds %q (%v), want %q", got, err, tc.want)
			}
			left, _ := filepath.Glob(dir + ".fullsync-*")
			if len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// swapWrites is the primary's side of TestReplicaReadsDuringFullSync:
// write i is one transaction (one batch) that sets k:i and e:i (with an
// expiry) to i, last to i, field fi of hash h, and appends i to list l.
// After write n the data set is k:1..k:n, e:1..e:n, last, h and l: 2n+3
// keys, HLEN and LLEN n. seqAfter[i] is the primary's last sequence
// number once write i returned: a replica at or past it holds write i.
type swapWrites struct {
	mu       sync.Mutex
	seqAfter []uint64 // index i: after write i; [0] unused
}

func (w *swapWrites) write(ctx context.Context, t *testing.T, c *redis.Client, primary *Server) {
	w.mu.Lock()
	i := len(w.seqAfter)
	w.mu.Unlock()
	v := strconv.Itoa(i)
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k:"+v, v, 0)
		p.Set(ctx, "e:"+v, v, time.Hour)
		p.Set(ctx, "last", v, 0)
		p.HSet(ctx, "h", "f"+v, v)
		p.RPush(ctx, "l", v)
		return nil
	})
	if err != nil {
		t.Errorf("write %d: %v", i, err)
		return
	}
	seq := lastSeq(primary)
	w.mu.Lock()
	w.seqAfter = append(w.seqAfter, seq)
	w.mu.Unlock()
}

// heldAt returns the highest write a replica at position seq holds.
func (w *swapWrites) heldAt(seq uint64) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := slices.BinarySearch(w.seqAfter[1:], seq+1)
	return n
}

// swapReader reads a replica over and over, checking that every read
// shows a whole prefix of the primary's history, never an older one than
// before, and never one older than the position the replica reported
// just before.
type swapReader struct {
	t    *testing.T
	w    *swapWrites
	c    *redis.Client
	seen int // the highest write seen
	// gone counts the reads that found the connection closed or were
	// refused with LOADING: a swap under way.
	gone, reads int
}

// transient reports whether err is what a swap does to a client:
// LOADING, or its connection closed.
func transient(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "LOADING") || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed))
}

// round does one ROLE then one MULTI of reads, then a whole SCAN; it
// returns false on an unexpected error (reported).
func (r *swapReader) round(ctx context.Context) bool {
	t := r.t
	role, err := r.c.Do(ctx, "role").Slice()
	if transient(err) {
		r.gone++
		return true
	}
	if err != nil || len(role) < 5 {
		t.Errorf("ROLE: %v %v", role, err)
		return false
	}
	offset, _ := role[4].(int64)
	reported := r.w.heldAt(uint64(offset))

	var last *redis.StringCmd
	var size, hlen, llen *redis.IntCmd
	var pttl *redis.DurationCmd
	var tail *redis.StringCmd
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		last = p.Get(ctx, "last")
		size = p.DBSize(ctx)
		hlen = p.HLen(ctx, "h")
		llen = p.LLen(ctx, "l")
		tail = p.LIndex(ctx, "l", -1)
		pttl = p.PTTL(ctx, "e:"+strconv.Itoa(max(r.seen, 1)))
		return nil
	})
	if transient(err) {
		r.gone++
		return true
	}
	r.reads++
	n, perr := strconv.Atoi(last.Val())
	switch {
	case err != nil || perr != nil:
		t.Errorf("reads on the replica: %v (last %q)", err, last.Val())
	case size.Val() != int64(2*n+3) || hlen.Val() != int64(n) || llen.Val() != int64(n) || tail.Val() != last.Val():
		t.Errorf("a partial data set: last %d, DBSIZE %d (want %d), HLEN %d, LLEN %d, list tail %q", n, size.Val(), 2*n+3, hlen.Val(), llen.Val(), tail.Val())
	case pttl.Val() <= 0:
		t.Errorf("e:%d has no expiry on the replica (PTTL %v)", max(r.seen, 1), pttl.Val())
	case n < r.seen:
		t.Errorf("went back in history: write %d read after %d", n, r.seen)
	case n < reported:
		t.Errorf("ROLE reported offset %d (write %d applied), then the reads show write %d", offset, reported, n)
	default:
		r.seen = n
		return r.scan(ctx)
	}
	return false
}

// scan SCANs the whole keyspace: every key k:j, e:j with j up to the
// write seen before must come back, none past the write seen after.
func (r *swapReader) scan(ctx context.Context) bool {
	t := r.t
	before := r.seen
	found := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, "", 200).Result()
		if transient(err) {
			r.gone++
			return true
		}
		if err != nil {
			t.Errorf("SCAN: %v", err)
			return false
		}
		for _, k := range keys {
			found[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	after, err := r.c.Get(ctx, "last").Int()
	if transient(err) {
		r.gone++
		return true
	}
	if err != nil {
		t.Errorf("GET last: %v", err)
		return false
	}
	for j := 1; j <= before; j++ {
		if k := "k:" + strconv.Itoa(j); !found[k] || !found["e:"+strconv.Itoa(j)] {
			t.Errorf("SCAN missed %s (or e:%d), there since write %d, before the SCAN began at write %d", k, j, j, before)
			return false
		}
	}
	for k := range found {
		if len(k) < 2 || (k[:2] != "k:" && k[:2] != "e:") {
			continue
		}
		if j, err := strconv.Atoi(k[2:]); err == nil && j > after {
			t.Errorf("SCAN returned %s, past write %d read after it", k, after)
			return false
		}
	}
	r.seen = max(r.seen, after)
	return true
}

// TestReplicaReadsDuringFullSync hammers a replica with reads (ROLE, then
// GET, DBSIZE, HLEN, LLEN, LINDEX, PTTL in one MULTI, then a whole SCAN)
// from several clients while its primary takes writes and the replica
// takes full copies again and again (cut off behind a proxy past the
// primary's backlog, which keeps no WAL). Every read must show a whole
// prefix of the primary's history, never an empty or partial data set,
// never older than one read before, nor older than the offset ROLE
// reported before it; clients see the swap only as LOADING or a closed
// connection.
func TestReplicaReadsDuringFullSync(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, func(c *Config) { c.ReplBacklogSize = 0 })
	setRingLimit(primary, 2<<20)
	pc := newClient(t, primary, 2, nil)
	// Values in database 1 push the replica's position out of the ring
	// without touching the data set the readers check.
	pad := newClient(t, primary, 2, func(o *redis.Options) { o.DB = 1 })
	w := &swapWrites{seqAfter: []uint64{0}}
	for range 20 {
		w.write(ctx, t, pc, primary)
	}
	replica, _, proxy := startReplicaBehindProxy(t, primary, nil)
	waitForWithin(t, time.Minute, "the first full sync", func() bool { return replica.repl.linkUp.Load() && lastSeq(replica) == lastSeq(primary) })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Stopped before the test ends, also when it fails from here.
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	// loop runs step in a goroutine until halt or until step says no.
	loop := func(step func() bool) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !step() {
					return
				}
			}
		})
	}
	readers := make([]*swapReader, 4)
	for i := range readers {
		r := &swapReader{t: t, w: w, c: newClient(t, replica, 2, func(o *redis.Options) { o.PoolSize = 1 })}
		readers[i] = r
		loop(func() bool { return r.round(ctx) })
	}
	loop(func() bool {
		w.write(ctx, t, pc, primary)
		// Paced, so that the ring (2 MiB) holds what a full sync
		// must continue from, however slow the copy.
		time.Sleep(3 * time.Millisecond)
		return true
	})

	const rounds = 5
	padding := strings.Repeat("p", 64<<10)
	for round := range rounds {
		proxy.Down.Store(true)
		proxy.Cut()
		waitFor(t, "the link to go down", func() bool { return !replica.repl.linkUp.Load() })
		at := lastSeq(replica) + 1
		for i := 0; primary.repl.backlog.holds(at); i++ {
			if err := pad.Set(ctx, "pad:"+strconv.Itoa(i%50), padding, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		proxy.Down.Store(false)
		waitForWithin(t, time.Minute, "a full sync", func() bool { return primary.repl.fullSyncs.Load() >= int64(round+2) })
		waitForWithin(t, time.Minute, "the link to come up", func() bool { return replica.repl.linkUp.Load() })
		if t.Failed() {
			break
		}
	}
	halt()
	waitReplicated(t, primary, replica)
	var reads, gone int
	for _, r := range readers {
		reads, gone = reads+r.reads, gone+r.gone
	}
	t.Logf("%d full syncs, %d writes, %d checked reads, %d reads that met a swap", primary.repl.fullSyncs.Load(), len(w.seqAfter)-1, reads, gone)
	if gone == 0 {
		t.Error("no read met a swap; the test does not test")
	}
}
