package lsmgo

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkBlobThreshold measures what value separation does to a
// fillrandom of 64 MiB (then readrandom) with values of one size, stored
// inline (threshold off) or separated (threshold = the value size), on the
// real filesystem with SyncNone. It reports the write amplification
// (bytes written to disk per byte the user wrote) and the reads per
// second; ns/op is per write. The numbers chose DefaultValueThreshold.
//
//	go test -run '^$' -bench BlobThreshold -benchtime 1x .
func BenchmarkBlobThreshold(b *testing.B) {
	const total = 64 << 20
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		for _, separate := range []bool{false, true} {
			name := fmt.Sprintf("value=%dKiB/inline", size>>10)
			if separate {
				name = fmt.Sprintf("value=%dKiB/separated", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					benchBlobFill(b, size, separate, total/size)
				}
			})
		}
	}
}

func benchBlobFill(b *testing.B, size int, separate bool, n int) {
	opts := &Options{Sync: SyncNone, Logger: slog.New(slog.DiscardHandler)}
	if separate {
		opts.ValueThreshold = size
	}
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "key%012d", i) }
	b.ResetTimer()
	for _, i := range rng.Perm(n) {
		value[0], value[1] = byte(i), byte(i>>8)
		if err := db.Set(key(i), value, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	m := db.Metrics()
	b.ReportMetric(m.WriteAmplification(), "write-amp")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "writes/s")
	reads := min(n, 20000)
	start := testingNow()
	for range reads {
		if _, err := db.Get(key(rng.IntN(n))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(reads)/testingSince(start), "reads/s")
}

func testingNow() time.Time { return time.Now() }

func testingSince(t time.Time) float64 { return time.Since(t).Seconds() }
