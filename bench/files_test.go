package bench

import (
	"strings"
	"testing"
)

func TestReportFiles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workloads = []WorkloadSpec{{Name: "readrandom"}, {Name: "mixed", Threads: 4}}
	cfg.Engines = []string{"lsmgo", "pebble", "bbolt"}
	results := []Result{
		{Step: 0, Engine: "lsmgo", Workload: "readrandom", Threads: 1, Ops: 10, OpsPerSec: 200, P99Ns: 900},
		{Step: 0, Engine: "pebble", Workload: "readrandom", Threads: 1, Ops: 10, OpsPerSec: 100, P99Ns: 1000},
		{Step: 0, Engine: "bbolt", Workload: "readrandom", Threads: 1, Ops: 10, OpsPerSec: 400, P99Ns: 300},
		{Step: 1, Engine: "lsmgo", Workload: "mixed", Threads: 4, Ops: 10, OpsPerSec: 300, P99Ns: 2000},
		{Step: 1, Engine: "pebble", Workload: "mixed", Threads: 4, Error: "<boom> & bust"},
		{Step: 1, Engine: "bbolt", Workload: "mixed", Threads: 4, Ops: 10, OpsPerSec: 150, P99Ns: 1000},
	}
	rep := &Report{Config: cfg, Results: results, Medians: medians(&cfg, results), Settings: map[string]string{"lsmgo": "x"}, Workloads: map[string]string{}}
	rep.Comparisons = compare(&cfg, rep.Medians)
	rep.Engines = summarizeEngines(cfg.Engines, rep.Medians)

	if len(rep.Comparisons) != 2 {
		t.Fatalf("comparisons %+v", rep.Comparisons)
	}
	if c := rep.Comparisons[0]; c.BestPeer != "bbolt" || c.Ratio != 0.5 || c.P99Ratio != 3 {
		t.Errorf("readrandom comparison %+v", c)
	}
	// The failed pebble row is no one's best.
	if c := rep.Comparisons[1]; c.BestPeer != "bbolt" || c.Ratio != 2 {
		t.Errorf("mixed comparison %+v", c)
	}

	page := string(reportHTML(rep))
	checkSelfContained(t, page)
	if strings.Contains(page, "<boom>") || !strings.Contains(page, "&lt;boom&gt; &amp; bust") {
		t.Error("an error message reached the page unescaped")
	}
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("%d charts, want 2 per workload", n)
	}
	csv := string(resultsCSV(results))
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != len(results)+1 || !strings.HasPrefix(lines[0], "run,step,workload,engine") {
		t.Errorf("csv:\n%s", csv)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtNanos(765), "765ns"},
		{fmtNanos(1_800), "1.80µs"},
		{fmtNanos(34_500), "34.5µs"},
		{fmtNanos(1_180_000), "1.18ms"},
		{fmtNanos(2_500_000_000), "2.50s"},
		{fmtCount(950), "950"},
		{fmtCount(4_200), "4.2k"},
		{fmtCount(667_000), "667k"},
		{fmtCount(12_950_000), "12.95M"},
		{fmtBytes(3 << 20), "3.0M"},
		{fmtBytes(0), "-"},
		{fmtRatio(1.234), "1.23"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestMediansTakeTheMiddleRunAndItsSpread(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workloads = []WorkloadSpec{{Name: "readrandom"}}
	cfg.Engines = []string{"lsmgo", "bbolt"}
	cfg.Runs = 3
	var results []Result
	for run, ops := range []float64{300, 100, 200} {
		results = append(results,
			Result{Run: run, Engine: "lsmgo", Workload: "readrandom", OpsPerSec: ops, P99Ns: int64(ops)},
			Result{Run: run, Engine: "bbolt", Workload: "readrandom", Error: "down"})
	}
	m := medians(&cfg, results)
	if len(m) != 2 {
		t.Fatalf("%d median rows, want 2", len(m))
	}
	if l := m[0]; l.OpsPerSec != 200 || l.P99Ns != 200 || l.Runs != 3 || l.OpsPerSecMin != 100 || l.OpsPerSecMax != 300 {
		t.Errorf("lsmgo median %+v", l)
	}
	if b := m[1]; b.Error == "" {
		t.Errorf("bbolt failed every run, median row %+v", b)
	}
	if got := runOrder([]string{"a", "b", "c"}, 1); got[0] != "c" || got[2] != "a" {
		t.Errorf("odd runs go backwards, got %v", got)
	}
}
