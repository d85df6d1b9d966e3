package server

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// powerLossClient is one connection of TestPowerLossAlways. It writes its
// own keys in order (SET p<id>:<n> with a value derived from n), and
// increments its own counter (INCR p<id>:ctr, a read-modify-write) and
// one every client shares (INCR hot:ctr: writes of one hot key, whose
// stripe each releases before its fsync), in pipelines of random depth:
// depth 1 runs SET as a single command, deeper pipelines stage the SETs
// into one batch (conn.stage). acked* count what the server has
// acknowledged, updated only after the reply was read.
type powerLossClient struct {
	id        int
	sent      atomic.Int64 // SETs sent, acknowledged or not
	ackedSets atomic.Int64
	ackedIncr atomic.Int64 // the highest INCR reply read
	ackedHot  atomic.Int64 // the highest INCR hot:ctr reply read
}

// The commands of powerLossClient.run.
const (
	plSet = iota
	plIncr
	plHot
)

func powerLossKey(id int, n int64) string { return fmt.Sprintf("p%d:%d", id, n) }
func powerLossValue(id int, n int64) string {
	return fmt.Sprintf("v%d-%d-%s", id, n, strings.Repeat("x", int(n%97)))
}

// run writes until stop is closed or the connection fails; a failure
// after stop is the server going away and is not reported.
func (p *powerLossClient) run(addr string, seed uint64, stop <-chan struct{}) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	rng := rand.New(rand.NewPCG(seed, uint64(p.id)))
	var out strings.Builder
	kinds := make([]int, 0, 16)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		out.Reset()
		kinds = kinds[:0]
		next := p.sent.Load()
		for range 1 + rng.IntN(16) {
			switch rng.IntN(8) {
			case 0:
				fmt.Fprintf(&out, "*2\r\n$4\r\nINCR\r\n$%d\r\np%d:ctr\r\n", len(fmt.Sprint(p.id))+5, p.id)
				kinds = append(kinds, plIncr)
				continue
			case 1:
				out.WriteString("*2\r\n$4\r\nINCR\r\n$7\r\nhot:ctr\r\n")
				kinds = append(kinds, plHot)
				continue
			}
			k, v := powerLossKey(p.id, next), powerLossValue(p.id, next)
			fmt.Fprintf(&out, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
			kinds = append(kinds, plSet)
			next++
		}
		p.sent.Store(next)
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(nc, out.String()); err != nil {
			return p.failed(stop, err)
		}
		for _, kind := range kinds {
			r, err := readRawReply(br)
			if err != nil {
				return p.failed(stop, err)
			}
			switch {
			case kind == plSet && r == "+OK\r\n":
				p.ackedSets.Add(1)
			case kind != plSet && strings.HasPrefix(r, ":"):
				n, err := strconv.ParseInt(strings.TrimSpace(r[1:]), 10, 64)
				if err != nil {
					return fmt.Errorf("client %d: INCR replied %q", p.id, r)
				}
				if kind == plIncr {
					p.ackedIncr.Store(n)
				} else if n > p.ackedHot.Load() {
					p.ackedHot.Store(n)
				}
			default:
				return p.failed(stop, fmt.Errorf("client %d: unexpected reply %q", p.id, r))
			}
		}
	}
}

func (p *powerLossClient) failed(stop <-chan struct{}, err error) error {
	select {
	case <-stop:
		return nil
	default:
		return fmt.Errorf("client %d: %w", p.id, err)
	}
}

// TestPowerLossAlways cuts the power under many clients writing over RESP
// with appendfsync always, at random moments, and checks that everything
// a client was told had been written survived: the engine runs on the
// in-memory filesystem, and each crash image keeps only what was fsynced,
// plus a random subset of the unsynced pages (MemFS.CrashCloneReorder). A
// reply read before the image was taken must have its write in the image,
// and each client's writes must come back as a prefix of the order it
// sent them in (no hole). The small memtable makes crashes land across WAL
// rotations and flushes too.
func TestPowerLossAlways(t *testing.T) {
	crashes, clients := 6, 16
	if testing.Short() {
		crashes, clients = 3, 8
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fs := vfs.NewMem()
	s := startServer(t, func(c *Config) {
		c.FS, c.Dir, c.AppendFsync = fs, "/data", "always"
		c.HTTPAddr = ""
		c.MemTableSize = 256 << 10
	})
	stop := make(chan struct{})
	cls := make([]*powerLossClient, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range cls {
		cls[i] = &powerLossClient{id: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cls[i].run(s.Addr().String(), seed, stop); err != nil {
				errs <- err
			}
		}()
	}
	total := func() (n int64) {
		for _, c := range cls {
			n += c.ackedSets.Load()
		}
		return n
	}
	type image struct {
		fs   *vfs.MemFS
		sets []int64
		incr []int64
		hot  int64 // the highest INCR hot:ctr reply of any client
	}
	var images []image
	for range crashes {
		// Wait for a random number of further acknowledgements, so the
		// image is taken at a random point of the clients' traffic.
		target := total() + 1 + rng.Int64N(3000)
		for deadline := time.Now().Add(2 * time.Minute); total() < target; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) || len(errs) > 0 {
				close(stop)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				t.Fatalf("timed out waiting for %d acknowledged SETs (have %d)", target, total())
			}
		}
		// Acknowledgements read before the image is taken.
		img := image{sets: make([]int64, clients), incr: make([]int64, clients)}
		for i, c := range cls {
			img.sets[i], img.incr[i] = c.ackedSets.Load(), c.ackedIncr.Load()
			img.hot = max(img.hot, c.ackedHot.Load())
		}
		img.fs = fs.CrashCloneReorder(rand.New(rand.NewPCG(seed, uint64(len(images)+2))))
		images = append(images, img)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sent := make([]int64, clients)
	for i, c := range cls {
		sent[i] = c.sent.Load()
	}
	for n, img := range images {
		r := startServer(t, func(c *Config) {
			c.FS, c.Dir, c.AppendFsync = img.fs, "/data", "always"
			c.HTTPAddr = ""
		})
		cl := newClient(t, r, 2, nil)
		ctx := t.Context()
		for i := range clients {
			// Every acknowledged SET is there with its value, and what
			// survives beyond them has no hole.
			var got int64
			for ; got < sent[i]; got++ {
				v, err := cl.Get(ctx, powerLossKey(i, got)).Result()
				if err != nil {
					break
				}
				if want := powerLossValue(i, got); v != want {
					t.Fatalf("image %d: %s = %q, want %q", n, powerLossKey(i, got), v, want)
				}
			}
			if got < img.sets[i] {
				t.Errorf("image %d: client %d had %d SETs acknowledged, the image holds the first %d", n, i, img.sets[i], got)
			}
			for k := got + 1; k < sent[i]; k++ {
				if cl.Exists(ctx, powerLossKey(i, k)).Val() != 0 {
					t.Errorf("image %d: client %d: %s survived but %s did not", n, i, powerLossKey(i, k), powerLossKey(i, got))
					break
				}
			}
			ctr, _ := cl.Get(ctx, fmt.Sprintf("p%d:ctr", i)).Int64()
			if ctr < img.incr[i] {
				t.Errorf("image %d: client %d's counter is %d, but INCR had replied %d", n, i, ctr, img.incr[i])
			}
		}
		if hot, _ := cl.Get(ctx, "hot:ctr").Int64(); hot < img.hot {
			t.Errorf("image %d: the shared counter is %d, but INCR had replied %d", n, hot, img.hot)
		}
		if t.Failed() {
			return
		}
	}
}
