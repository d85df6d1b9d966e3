package bench

import (
	"os"
	"testing"
)

func TestParseDBBench(t *testing.T) {
	b, err := os.ReadFile("testdata/db_bench_output.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, tc := range []struct {
		bench          string
		ops, found     int64
		opsPerSec      float64
		p50, p99, p999 int64
		max            int64
	}{
		{"filluniquerandom", 20000, 0, 187522, 1910, 29240, 152860, 7286000},
		{"readrandom", 40000, 20000, 949645, 520, 1820, 4770, 7030000},
		{"seekrandom", 40000, 20000, 81027, 3560, 29000, 4730000, 127170000},
	} {
		r, err := parseDBBench(out, tc.bench)
		if err != nil {
			t.Fatalf("%s: %v", tc.bench, err)
		}
		if r.ops != tc.ops || r.found != tc.found || r.opsPerSec != tc.opsPerSec ||
			r.p50 != tc.p50 || r.p99 != tc.p99 || r.p999 != tc.p999 || r.max != tc.max {
			t.Errorf("%s: parsed %+v", tc.bench, r)
		}
		if !r.assertions {
			t.Errorf("%s: the assertions warning was not noticed", tc.bench)
		}
	}

	// readrandomwriterandom prints a read and a write histogram; the row
	// gets their merged distribution.
	r, err := parseDBBench(out, "readrandomwriterandom")
	if err != nil {
		t.Fatal(err)
	}
	if r.writes != 10000 || r.found != 10000 || r.ops != 40000 {
		t.Errorf("mixed counts: %+v", r)
	}
	// Reads' p50 is 0.62 µs and writes' 2.34 µs: the merged median lies
	// between; the max is the writes' 43842 µs.
	if r.p50 <= 620 || r.p50 >= 2340 || r.max != 43842000 || r.p99 < 2900 || r.p999 < r.p99 {
		t.Errorf("merged histogram: p50 %d p99 %d p99.9 %d max %d", r.p50, r.p99, r.p999, r.max)
	}

	if _, err := parseDBBench(out, "fillseq"); err == nil {
		t.Error("parsed a benchmark that is not in the output")
	}
}

func TestBucketPercentile(t *testing.T) {
	buckets := []dbBenchBucket{{0, 1, 50}, {1, 2, 40}, {2, 4, 10}}
	for _, tc := range []struct{ p, want float64 }{{50, 1}, {70, 1.5}, {95, 3}, {100, 3.5}} {
		if got := bucketPercentile(buckets, tc.p, 3.5); got != tc.want {
			t.Errorf("p%g = %g, want %g", tc.p, got, tc.want)
		}
	}
}

// FuzzParseDBBench feeds db_bench output mangled at random: the parser
// must return an error or a result, never panic.
func FuzzParseDBBench(f *testing.F) {
	b, err := os.ReadFile("testdata/db_bench_output.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b), "readrandomwriterandom")
	f.Add(string(b), "filluniquerandom")
	f.Add("readrandom : 1.0 micros/op 1 ops/sec 1.0 seconds 1 operations;\nMicroseconds per read:\n[ 0, 1 ] 0 0% 0%\n", "readrandom")
	f.Fuzz(func(t *testing.T, out, bench string) {
		r, err := parseDBBench(out, bench)
		if err == nil && r.ops < 0 {
			t.Errorf("negative operation count %d", r.ops)
		}
	})
}
