//go:build unix

package lsmgo

import (
	"encoding/binary"
	"flag"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/cache"
)

var (
	readBenchKeys      = flag.Int("read-bench-keys", 1_000_000, "keys BenchmarkReadRandom writes before it reads")
	readBenchBlockSize = flag.Int("read-bench-block-size", 0, "Options.BlockSize of BenchmarkReadRandom (0: the default)")
)

// BenchmarkReadRandom is lsmgo-bench's readrandom in miniature, to profile
// the point-read path without the harness: it writes -read-bench-keys
// keys of 32 bytes with 128-byte values that compress to half (as
// lsmgo-bench's defaults) in random order, waits for compaction to
// finish, then reads keys chosen uniformly with GetAppend into a reused
// buffer, from one goroutine and from two, with tables read by pread,
// then mapped within a MapBudget of half the cache, then all mapped
// (Options.MapTables). Besides CPU time per read
// it reports the resident set at the end of each run (vmrss-MiB).
//
//	go test -run '^$' -bench ReadRandom -benchtime 1000000x -cpuprofile cpu.out .
func BenchmarkReadRandom(b *testing.B) {
	// The tests poison recycled blocks; that costs a write of every
	// evicted block, which the engine outside tests does not pay.
	cache.PoisonRecycledBlocks(false)
	defer cache.PoisonRecycledBlocks(true)
	n := *readBenchKeys
	dir := b.TempDir()
	opts := Options{Sync: SyncNone, CacheSize: 64 << 20, BlockSize: *readBenchBlockSize, Logger: slog.New(slog.DiscardHandler)}
	db, err := Open(dir, &opts)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	// Values are windows of a pool in which every 100-byte chunk is 50
	// random printable bytes repeated once.
	pool := make([]byte, 1<<20)
	for off := 0; off < len(pool); off += 100 {
		c := pool[off:min(off+100, len(pool))]
		for j := range c {
			if j < 50 {
				c[j] = byte(' ' + rng.IntN(95))
			} else {
				c[j] = c[j-50]
			}
		}
	}
	key := func(dst []byte, i int) []byte {
		dst = binary.BigEndian.AppendUint64(dst[:0], uint64(2*i))
		for len(dst) < 32 {
			dst = append(dst, '0')
		}
		return dst
	}
	var k []byte
	for j, i := range rng.Perm(n) {
		off := (j * 141) % (len(pool) - 128)
		k = key(k, i)
		if err := db.Set(k, pool[off:off+128], nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		m := db.Metrics()
		busy := m.Compaction.Running > 0
		for _, l := range m.Levels {
			busy = busy || l.Score >= 1
		}
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("compaction did not finish")
		}
	}
	// read does Gets of random keys while more says so.
	read := func(b *testing.B, seed uint64, more func() bool) {
		rng := rand.New(rand.NewPCG(3, seed))
		var k, buf []byte
		for more() {
			k = key(k, rng.IntN(n))
			v, err := db.GetAppend(buf[:0], k)
			if err != nil {
				b.Error(err)
				return
			}
			buf = v
		}
	}
	for _, v := range []struct {
		name      string
		mapBudget int64
		mapTables bool
	}{{"pread", -1, false}, {"budget", opts.CacheSize / 2, false}, {"mapped", 0, true}} {
		// Each variant starts from a reopen, with a cold cache.
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		opts.MapBudget, opts.MapTables = v.mapBudget, v.mapTables
		if db, err = Open(dir, &opts); err != nil {
			b.Fatal(err)
		}
		name := v.name
		b.Run(name+"/threads=1", func(b *testing.B) {
			defer reportCPUPerOp(b)()
			i := 0
			read(b, 0, func() bool { i++; return i <= b.N })
		})
		b.Run(name+"/threads=2", func(b *testing.B) {
			defer reportCPUPerOp(b)()
			b.SetParallelism(1)
			var seed atomic.Uint64
			b.RunParallel(func(pb *testing.PB) { read(b, seed.Add(1), pb.Next) })
		})
	}
}

// reportCPUPerOp starts counting the process's CPU time (user and
// system); the function it returns reports it per operation as
// cpu-ns/op, a figure that other work on a shared machine moves far less
// than ns/op, and page faults per operation.
func reportCPUPerOp(b *testing.B) func() {
	start, faults := processCPU(b)
	return func() {
		cpu, faults1 := processCPU(b)
		b.ReportMetric(float64(cpu-start)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(faults1-faults)/float64(b.N), "faults/op")
		if st, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
					kb, _ := strconv.Atoi(f[1])
					b.ReportMetric(float64(kb)/1024, "vmrss-MiB")
				}
			}
		}
	}
}

// processCPU returns the process's CPU time (user and system) and its
// page faults so far: a read from a mapped table faults at the first
// touch of each page.
func processCPU(b *testing.B) (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt + ru.Majflt
}
