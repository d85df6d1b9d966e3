package bench

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestFNV64IsFNV1aOfLittleEndianBytes checks YCSB's rank hash against
// the standard library's FNV-1a over the same eight bytes.
func TestFNV64IsFNV1aOfLittleEndianBytes(t *testing.T) {
	rng := newRand(3)
	for i := range 1000 {
		x := uint64(i)
		if i >= 500 {
			x = rng.Uint64()
		}
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
		want := h.Sum64()
		if int64(want) < 0 {
			want = -want
		}
		if got := fnv64(x); got != want {
			t.Fatalf("fnv64(%d) = %#x, want %#x", x, got, want)
		}
		if got := fnv64(x); got > math.MaxInt64 && got != 1<<63 {
			t.Fatalf("fnv64(%d) = %#x is negative as YCSB's long", x, got)
		}
	}
}

// TestZetaTail checks the Euler-Maclaurin estimate against an exact sum,
// and the sum over YCSB's 10^10 items against the constant YCSB
// hard-codes for it (26.46902820178302).
func TestZetaTail(t *testing.T) {
	const m, n = zetaHead, 1 << 21
	exact := zetaSum(n) - zetaSum(m)
	if got := zetaTail(m, n); math.Abs(got-exact) > 1e-9*exact {
		t.Errorf("zetaTail(%d, %d) = %.12f, exact %.12f", m, n, got, exact)
	}
	if got := zeta(ycsbItems); math.Abs(got-26.46902820178302) > 1e-9 {
		t.Errorf("zeta(1e10) = %.14f, want YCSB's 26.46902820178302", got)
	}
}

// draws counts how often each value in [0, n) comes out of next.
func draws(n uint64, count int, next func() uint64) []int {
	c := make([]int, n)
	for range count {
		c[next()]++
	}
	return c
}

// hottest returns the k most drawn values, most drawn first.
func hottest(counts []int, k int) []uint64 {
	idx := make([]uint64, len(counts))
	for i := range idx {
		idx[i] = uint64(i)
	}
	slices.SortStableFunc(idx, func(a, b uint64) int { return counts[b] - counts[a] })
	return idx[:k]
}

func TestScrambledZipfianShape(t *testing.T) {
	const n, count = 1_000_000, 200_000
	z := ycsbZipf()
	rng := newRand(11)
	counts := draws(n, count, func() uint64 { return scrambledZipfian(z, rng, n) })
	// Rank 0 has probability 1/zeta(1e10), 3.78%: about 7560 of 200k
	// draws, with a standard deviation of 85.
	top := hottest(counts, 20)
	if want := fnv64(0) % n; top[0] != want {
		t.Errorf("hottest record %d, want rank 0's %d", top[0], want)
	}
	share := float64(counts[top[0]]) / count
	if want := 1 / zeta(ycsbItems); math.Abs(share-want) > 0.1*want {
		t.Errorf("hottest record drew %.4f of draws, want %.4f", share, want)
	}
	// The second rank: 2^-0.99 as popular as the first.
	if r := float64(counts[top[1]]) / float64(counts[top[0]]); r < 0.4 || r > 0.6 {
		t.Errorf("second hottest / hottest = %.2f, want about 0.50", r)
	}
	// Scrambling spreads the hot records: the 20 hottest fall in many
	// sixteenths of the range, where unscrambled ranks would all sit in
	// the first.
	buckets := map[uint64]bool{}
	for _, rec := range top {
		buckets[rec*16/n] = true
	}
	if len(buckets) < 8 {
		t.Errorf("the 20 hottest records fall in %d of 16 sixteenths of the range: %v", len(buckets), top)
	}
}

func TestLatestFavoursNewest(t *testing.T) {
	const loaded, count = 1000, 100_000
	z := newZipf(loaded)
	rng := newRand(5)
	for _, newest := range []uint64{loaded - 1, loaded + 99} {
		counts := draws(newest+1, count, func() uint64 { return latestRecord(z, rng, newest) })
		if top := hottest(counts, 1)[0]; top != newest {
			t.Errorf("newest %d: hottest record %d", newest, top)
		}
		// Zipfian over 1000 records: the newest 10 get about 40%.
		recent := 0
		for _, c := range counts[newest-9:] {
			recent += c
		}
		if f := float64(recent) / count; f < 0.3 {
			t.Errorf("newest %d: the 10 newest records drew %.2f of reads, want about 0.4", newest, f)
		}
		// The oldest half of the records gets a few percent.
		old := 0
		for _, c := range counts[:loaded/2] {
			old += c
		}
		if f := float64(old) / count; f > 0.1 {
			t.Errorf("newest %d: the oldest half drew %.2f of reads", newest, f)
		}
	}
}

// ycsbNames are the YCSB workloads in their letter order.
func ycsbNames() []string {
	var names []string
	for _, w := range ycsbWorkloads {
		names = append(names, w.name)
	}
	return names
}

// TestYCSBWorkloadsAgainstModel runs A-F in turn on the in-memory model
// and checks what each mix must have done: every record read exists, an
// update or insert is a write, and inserts add keys the load never wrote.
func TestYCSBWorkloadsAgainstModel(t *testing.T) {
	cfg := DefaultConfig()
	// The model sorts every key for each of E's scans: keep it small.
	cfg.Num = 1000
	ch, store := newTestChild(t, cfg)
	n := cfg.Num
	entry := int64(cfg.KeySize + cfg.ValueSize)
	inserted := int64(0)
	for step, name := range ycsbNames() {
		r := ch.runWorkload(step, WorkloadSpec{Name: name})
		if r.Error != "" {
			t.Fatalf("%s: %s", name, r.Error)
		}
		if r.Ops != n || r.P99Ns <= 0 {
			t.Errorf("%s: %d ops, p99 %d", name, r.Ops, r.P99Ns)
		}
		if r.Prefilled != (step == 0) {
			t.Errorf("%s: prefilled %t", name, r.Prefilled)
		}
		writes := r.UserBytesWritten / entry
		mix := workloads[name].mix
		switch {
		case mix.readModifyWrite > 0:
			// Every operation reads an existing record.
			if r.Found != n || writes == 0 || writes == n {
				t.Errorf("%s: found %d, %d writes", name, r.Found, writes)
			}
		case mix.insert > 0:
			// One thread: every read or scan finds its record.
			if r.Found+writes != n || writes == 0 {
				t.Errorf("%s: found %d + %d inserts != %d ops", name, r.Found, writes, n)
			}
			inserted += writes
		default:
			if r.Found+writes != n || (mix.update > 0) != (writes > 0) {
				t.Errorf("%s: found %d + %d updates != %d ops", name, r.Found, writes, n)
			}
		}
		keys := int64(len(store.engines[ch.job.Dir].m))
		if keys != n+inserted || r.LiveBytes != keys*entry {
			t.Errorf("%s: %d keys in the DB (live %d B), want %d", name, keys, r.LiveBytes, n+inserted)
		}
	}
	// The inserts took never-written twins, where readmissing looks.
	r := ch.runWorkload(6, WorkloadSpec{Name: "readmissing"})
	if r.Error != "" || r.Found == 0 {
		t.Errorf("readmissing after %d inserts: found %d (%s)", inserted, r.Found, r.Error)
	}
}

// TestYCSBThreads runs D, whose reads chase the inserts, on several
// threads: no error, every insert a new key.
func TestYCSBThreads(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 2000
	ch, store := newTestChild(t, cfg)
	r := ch.runWorkload(0, WorkloadSpec{Name: "ycsb-d", Threads: 4})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	writes := r.UserBytesWritten / int64(cfg.KeySize+cfg.ValueSize)
	if keys := int64(len(store.engines[ch.job.Dir].m)); r.Ops != cfg.Num || keys != cfg.Num+writes || writes == 0 {
		t.Errorf("%d ops, %d inserts, %d keys", r.Ops, writes, keys)
	}
}

func TestYCSBNamedOnly(t *testing.T) {
	for _, name := range WorkloadNames() {
		if strings.HasPrefix(name, "ycsb-") {
			t.Errorf("%s runs by default", name)
		}
	}
	c, err := ParseFlags([]string{"--workloads=ycsb-a,ycsb-e:2", "--engines=lsmgo"}, os.Stderr)
	if err != nil || len(c.Workloads) != 2 || c.Workloads[1].Threads != 2 {
		t.Errorf("%+v, %v", c.Workloads, err)
	}
	if _, _, err := dbBenchWorkload(&c, c.Workloads[0]); err == nil || !strings.Contains(err.Error(), "YCSB") {
		t.Errorf("db_bench for ycsb-a: %v", err)
	}
}

// TestYCSBSmoke runs every YCSB workload on every Go engine at a tiny
// size, through the child processes as a real run does. It never checks
// a speed.
func TestYCSBSmoke(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 5000
	if raceEnabled || testing.Short() {
		cfg.Num = 1000
	}
	for _, e := range AvailableEngines() {
		if e != rocksdbName {
			cfg.Engines = append(cfg.Engines, e)
		}
	}
	cfg.Progress = "off"
	cfg.OutDir = t.TempDir()
	cfg.DBDir = t.TempDir()
	for _, name := range ycsbNames() {
		cfg.Workloads = append(cfg.Workloads, WorkloadSpec{Name: name})
	}
	var stdout strings.Builder
	rep, err := Run(cfg, &stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(cfg.Engines)*len(cfg.Workloads) {
		t.Errorf("%d rows, want %d", len(rep.Results), len(cfg.Engines)*len(cfg.Workloads))
	}
	for _, r := range rep.Results {
		switch {
		case r.Error != "":
			t.Errorf("%s/%s: %s", r.Engine, r.Workload, r.Error)
		case r.Ops != cfg.Num || r.Found == 0 || r.P99Ns <= 0:
			t.Errorf("%s/%s: %d ops, found %d, p99 %d", r.Engine, r.Workload, r.Ops, r.Found, r.P99Ns)
		}
	}
	if t.Failed() {
		t.Log("\n" + stdout.String())
	}
	checkFiles(t, cfg.OutDir, len(rep.Results))
}
