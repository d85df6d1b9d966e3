package server

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMaxMemoryClients opens many hostile connections that each start an
// 8 MB SET and send half a megabyte of it before stalling: unbounded, they
// would make the server hold hostiles × 512 KiB. With maxmemory-clients at
// 32 MiB the accounted client memory never passes the bound, the biggest
// clients are closed, the heap stays near the bound, and a well-behaved
// client keeps getting answers throughout.
func TestMaxMemoryClients(t *testing.T) {
	const limit = 32 << 20
	hostiles := 1000
	if testing.Short() {
		hostiles = 300
	}
	s := startServer(t, func(c *Config) {
		c.MaxMemoryClients = limit
		c.MaxClients = hostiles + 10
	})
	good := newClient(t, s, 2, nil)
	ctx := context.Background()

	stop := make(chan struct{})
	var peak int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			peak = max(peak, s.clientMem.total.Load())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	header := "*3\r\n$3\r\nSET\r\n$7\r\nhostile\r\n$8000000\r\n"
	chunk := strings.Repeat("h", 64<<10)
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	for i := range hostiles {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatalf("hostile %d: %v", i, err)
		}
		mu.Lock()
		conns = append(conns, nc)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, err := nc.Write([]byte(header)); err != nil {
				return
			}
			for range 8 { // 512 KiB, then stall with the SET unfinished
				if _, err := nc.Write([]byte(chunk)); err != nil {
					return // evicted
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, nc := range conns {
			nc.Close()
		}
	})

	// The well-behaved client, while the hostile ones push.
	var lat []time.Duration
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
flood:
	for i := 0; ; i++ {
		start := time.Now()
		key := fmt.Sprint("good", i)
		if err := good.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("well-behaved SET during the flood: %v", err)
		}
		if v, err := good.Get(ctx, key).Result(); err != nil || v != "v" {
			t.Fatalf("well-behaved GET during the flood: %q, %v", v, err)
		}
		lat = append(lat, time.Since(start))
		select {
		case <-done:
			if len(lat) >= 200 {
				break flood
			}
		default:
		}
	}
	close(stop)
	sampler.Wait()
	if peak > limit {
		t.Errorf("client buffers peaked at %d bytes, over maxmemory-clients %d", peak, limit)
	}
	evicted := s.clientMem.evicted.Load()
	if evicted == 0 {
		t.Errorf("no client evicted although %d clients pushed %d bytes", hostiles, hostiles*512<<10)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// The test process holds the client side too; the overhead covers the
	// server's engine (memtable arenas live outside the Go heap), the
	// connections' bookkeeping and the test's own buffers.
	const overhead = 96 << 20
	if ms.HeapInuse > limit+overhead {
		t.Errorf("heap in use %d MiB with maxmemory-clients %d MiB", ms.HeapInuse>>20, limit>>20)
	}
	slices.Sort(lat)
	t.Logf("%d hostile clients, %d evicted, client buffers peak %d KiB; well-behaved SET+GET: %d round trips, p50 %v, p99 %v, max %v",
		hostiles, evicted, peak>>10, len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])

	// Once the hostile clients are gone, every byte is given back.
	for _, nc := range conns {
		nc.Close()
	}
	waitFor(t, "client buffers released", func() bool {
		return s.clientMem.total.Load() == int64(s.clientCount())*16<<10
	})
}
