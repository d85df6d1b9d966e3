package imgbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// slowlorisCount is how many slow uploads TestSlowlorisUploads keeps open:
// IMGBED_SLOWLORIS, else 300 (the figure), or 80 with -short,
// which still puts every address far over its share of the slots.
func slowlorisCount(t *testing.T) int {
	if v := os.Getenv("IMGBED_SLOWLORIS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("IMGBED_SLOWLORIS=%q", v)
		}
		return n
	}
	if testing.Short() {
		return 80
	}
	return 300
}

// slowlorisAddrs are the attackers' source addresses: on Linux all of
// 127.0.0.0/8 is loopback, so each is a distinct client to the host.
var slowlorisAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}

// TestSlowlorisUploads keeps slow uploads open from 8 addresses (the rate
// limit off, so all of them reach the slots) while a normal client
// uploads 50 images from another: with the default settings every one is
// stored without waiting for a slot, since the slow uploads never hold
// more than their addresses' shares, checked all along. Each slow upload
// sends its headers and a few bytes, then a byte every 200 ms, and starts
// again when the host cuts it off. The normal client's latencies are
// logged, not asserted: a loaded machine sets them, and speed is the
// benchmarks' to measure.
func TestSlowlorisUploads(t *testing.T) {
	th := newTestHost(t, Config{})
	n := slowlorisCount(t)
	addr := th.srv.Listener.Addr().String()
	png := encodePNG(t, gradient(200, 200))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range n {
		local := &net.TCPAddr{IP: net.ParseIP(slowlorisAddrs[i%len(slowlorisAddrs)])}
		wg.Go(func() {
			for ctx.Err() == nil {
				if status := slowUpload(ctx, addr, local, png); status != 0 {
					mu.Lock()
					statuses[status]++
					mu.Unlock()
				}
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
		t.Logf("%d slow uploads; their answers by status: %v", n, statuses)
	}()

	// Every address holds its share once the attack is under way.
	share := th.cfg.MaxUploadsPerClient
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		used, _ := th.uploads.inUse("")
		if used >= min(n, share*len(slowlorisAddrs), th.cfg.MaxConcurrentUploads) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow uploads took only %d slots", used)
		}
	}
	for _, a := range slowlorisAddrs {
		if _, held := th.uploads.inUse("ip:" + a); held > share {
			t.Fatalf("%s holds %d slots, more than its share of %d", a, held, share)
		}
	}

	// While the normal client uploads, the slow ones stay within their
	// shares, so a slot is always free for it (acquire waits only when
	// every slot is taken or the client holds its share).
	sampling := make(chan struct{})
	sampled := make(chan string, 1)
	go func() {
		defer close(sampled)
		for {
			if used, _ := th.uploads.inUse(""); used >= th.cfg.MaxConcurrentUploads {
				sampled <- fmt.Sprintf("all %d slots taken", used)
				return
			}
			for _, a := range slowlorisAddrs {
				if _, held := th.uploads.inUse("ip:" + a); held > share {
					sampled <- fmt.Sprintf("%s held %d slots, more than its share of %d", a, held, share)
					return
				}
			}
			select {
			case <-sampling:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var lat []time.Duration
	for i := range 50 {
		data := encodePNG(t, gradient(20+i, 30))
		start := time.Now()
		status, r := th.uploadRaw(t, data, "image/png")
		lat = append(lat, time.Since(start))
		if status != http.StatusCreated {
			t.Fatalf("upload %d: %d %s", i, status, r.Message)
		}
	}
	close(sampling)
	if msg, bad := <-sampled; bad {
		t.Fatalf("during the normal client's uploads: %s", msg)
	}
	slices.Sort(lat)
	t.Logf("normal client: p50 %v, p99 %v", lat[len(lat)/2], lat[(len(lat)*99+99)/100-1])
}

// slowUpload sends an upload of body from local, a few bytes at once and
// then one byte every 200 ms, until the host answers (its status) or ctx
// ends (0).
func slowUpload(ctx context.Context, addr string, local *net.TCPAddr, body []byte) int {
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	answered := awaitStatus(conn)
	fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n", len(body))
	r := bytes.NewReader(body)
	buf := make([]byte, 64)
	for {
		if _, err := r.Read(buf); err != nil {
			return <-answered
		}
		if _, err := conn.Write(buf); err != nil {
			return <-answered
		}
		buf = buf[:1]
		select {
		case status := <-answered:
			return status
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitStatus reads the response to a request sent on conn and delivers
// its status, or 0 when none came.
func awaitStatus(conn net.Conn) <-chan int {
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	return answered
}

// TestMinUploadRate: a body that trickles below the minimum rate is cut
// off with 408 once it falls a window behind, long before the idle and
// upload timeouts; one that keeps to the rate, in small pieces with
// pauses, is stored. The window, 2 s, is also how long the sender of the
// good body may stall between two pieces on a loaded machine.
func TestMinUploadRate(t *testing.T) {
	th := newTestHost(t, Config{MinUploadRate: 4 << 10, MinUploadRateWindow: 2 * time.Second})
	jpg := noiseJPEG(t) // about 100 KB
	send := func(piece int, pause time.Duration) (int, time.Duration) {
		conn, err := net.Dial("tcp", th.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		answered := awaitStatus(conn)
		start := time.Now()
		fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n", len(jpg))
		for off := 0; off < len(jpg); off += piece {
			conn.Write(jpg[off:min(off+piece, len(jpg))])
			select {
			case status := <-answered:
				return status, time.Since(start)
			case <-time.After(pause):
			}
		}
		select {
		case status := <-answered:
			return status, time.Since(start)
		case <-time.After(time.Minute):
			t.Fatal("no answer")
			return 0, 0
		}
	}
	// 100 bytes per 100 ms is 1 KiB/s, a quarter of the minimum: the
	// 8 KiB allowance runs out after about 2.7 s, long before the end.
	status, took := send(100, 100*time.Millisecond)
	if status != http.StatusRequestTimeout || took > 20*time.Second {
		t.Fatalf("slow body: %d after %v, want 408 after about 2.7s", status, took)
	}
	// 8 KiB per 100 ms is 80 KiB/s.
	status, took2 := send(8<<10, 100*time.Millisecond)
	if status != http.StatusCreated {
		t.Fatalf("body at 80 KiB/s: %d after %v, want 201", status, took2)
	}
	t.Logf("%d-byte body: cut off after %v at 1 KiB/s, stored after %v at 80 KiB/s", len(jpg), took, took2)
}

// TestUploadQueueFull: when every slot is held, an upload waits
// UploadQueueWait and is then refused with 503 and Retry-After; and one
// client cannot take more than its share even while slots are free.
func TestUploadQueueFull(t *testing.T) {
	th := newTestHost(t, Config{MaxConcurrentUploads: 4, MaxUploadsPerClient: 2, UploadQueueWait: 300 * time.Millisecond})
	addr := th.srv.Listener.Addr().String()
	png := encodePNG(t, gradient(50, 50))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range 3 { // a third from the same address only waits
		wg.Go(func() { slowUpload(ctx, addr, &net.TCPAddr{IP: net.ParseIP(slowlorisAddrs[i/2])}, png) })
	}
	waitSlots := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if used, _ := th.uploads.inUse(""); used == want {
				return
			}
			if time.Now().After(deadline) {
				used, _ := th.uploads.inUse("")
				t.Fatalf("%d slots used, want %d", used, want)
			}
		}
	}
	waitSlots(3)
	if _, held := th.uploads.inUse("ip:" + slowlorisAddrs[0]); held != 2 {
		t.Fatalf("%s holds %d slots, want its share of 2", slowlorisAddrs[0], held)
	}
	wg.Go(func() { slowUpload(ctx, addr, &net.TCPAddr{IP: net.ParseIP(slowlorisAddrs[2])}, png) })
	waitSlots(4)

	req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload", bytes.NewReader(png))
	req.Header.Set("Content-Type", "image/png")
	start := time.Now()
	resp, body := th.do(t, req)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("with every slot held: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the 503 took %v", took)
	}
}
