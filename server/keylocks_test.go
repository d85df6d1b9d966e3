package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBlindSetNeverSplitsReadModifyWrite checks the stripes' shared mode:
// a plain SET (a blind write, which holds its stripe shared) never lands
// between an APPEND's read and its write. One client sets k to S<i>, as a
// single command or staged in a pipeline, and then reads k back; others
// APPEND to k all the while. Had a SET slipped into an APPEND's window, the
// APPEND would write back the value it read before the SET, and the
// setter would read an older S<j> after its own S<i> was acknowledged.
func TestBlindSetNeverSplitsReadModifyWrite(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 1000
	}
	s := startServer(t, nil)
	addr := s.Addr().String()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- appendUntil(addr, stop)
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}()
	setter := dialRaw(t, s)
	for i := range rounds {
		// dialRaw's deadline covers a few seconds of work; a loaded
		// machine needs it per round.
		setter.nc.SetDeadline(time.Now().Add(20 * time.Second))
		set := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\nS%d\r\n", len(fmt.Sprint(i))+1, i)
		if i%2 == 0 {
			// Staged: the SET that follows keeps input buffered.
			setter.send(set + "*3\r\n$3\r\nSET\r\n$5\r\nother\r\n$1\r\nx\r\n")
			eq(t, "staged SET", setter.reply()+setter.reply(), "+OK\r\n+OK\r\n")
		} else {
			setter.send(set)
			eq(t, "SET", setter.reply(), "+OK\r\n")
		}
		setter.send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
		r := setter.reply()
		_, v, _ := strings.Cut(strings.TrimSuffix(r, "\r\n"), "\r\n")
		j, err := strconv.Atoi(strings.TrimPrefix(strings.TrimRight(v, "x"), "S"))
		if err != nil || j != i {
			t.Fatalf("after SET k S%d was acknowledged, GET k = %q", i, r)
		}
	}
}

// appendUntil appends to k in pipelines of 4 until stop is closed.
func appendUntil(addr string, stop <-chan struct{}) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	cmd := strings.Repeat("*3\r\n$6\r\nAPPEND\r\n$1\r\nk\r\n$1\r\nx\r\n", 4)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(nc, cmd); err != nil {
			return err
		}
		for range 4 {
			r, err := readRawReply(br)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(r, ":") {
				return fmt.Errorf("APPEND replied %q", r)
			}
		}
	}
}

// TestWholeExcludesStripes: holders of key stripes (exclusive and shared)
// and holders of every stripe (allStripes, one lock) exclude each other.
// Writers increment per-key counters with a yield between read and write,
// under their keys' stripes; readers of the whole set sum the counters
// twice with a yield between and must see no change. Run with -race, the
// detector also checks every access is ordered by the locks.
func TestWholeExcludesStripes(t *testing.T) {
	locks := newKeyLocks()
	const keys, writers, perWriter = 64, 6, 300
	var counts [keys]int
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := (w*7 + i*13) % keys
				key := []byte(strconv.Itoa(k))
				other := []byte(strconv.Itoa((k + 1) % keys))
				held := lockSet{}.add(locks, key).add(locks, other).lock(locks)
				v := counts[k]
				runtime.Gosched()
				counts[k] = v + 1
				held.unlock(locks)
				shared := lockSet{}.add(locks, key).lockShared(locks)
				_ = counts[k] // a shared holder may read what it holds
				shared.unlockShared(locks)
			}
		})
	}
	sum := func() (n int) {
		for _, c := range counts {
			n += c
		}
		return n
	}
	for range 3 {
		wg.Go(func() {
			for range 50 {
				held := allStripes(nil).lock(locks)
				before := sum()
				runtime.Gosched()
				if after := sum(); after != before {
					t.Errorf("counters changed under every stripe: %d, then %d", before, after)
				}
				held.unlock(locks)
			}
		})
	}
	wg.Wait()
	if got := sum(); got != writers*perWriter {
		t.Fatalf("sum of the counters %d, want %d", got, writers*perWriter)
	}
}
