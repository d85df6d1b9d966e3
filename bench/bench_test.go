package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Run spawns this test binary as the engine child.
	RunChildIfRequested()
	os.Exit(m.Run())
}

// TestSmoke runs every workload on every engine available here at a small
// size, through the child processes and db_bench as a real run does, and
// checks that every engine produced every row and that the rows are
// consistent. It never checks a speed. Under the race detector, which
// instruments every engine's child process, or with -short, it runs a
// tenth of the keys: every workload and engine still runs.
func TestSmoke(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 20000
	if raceEnabled || testing.Short() {
		cfg.Num = 2000
	}
	cfg.Engines = AvailableEngines()
	cfg.Progress = "off"
	cfg.OutDir = t.TempDir()
	cfg.DBDir = t.TempDir()
	for _, name := range WorkloadNames() {
		w := WorkloadSpec{Name: name}
		switch name {
		case "mixed":
			w.Threads = 4
		case "fillsync":
			w.Threads = 16
		}
		cfg.Workloads = append(cfg.Workloads, w)
	}
	t.Logf("engines: %v", cfg.Engines)
	var stdout strings.Builder
	begin := time.Now()
	rep, err := Run(cfg, &stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d engines x %d workloads in %s", len(cfg.Engines), len(cfg.Workloads), time.Since(begin).Round(time.Millisecond))
	if t.Failed() || testing.Verbose() {
		t.Log("\n" + stdout.String())
	}

	type cell struct {
		engine string
		step   int
	}
	rows := map[cell]Result{}
	for _, r := range rep.Results {
		rows[cell{r.Engine, r.Step}] = r
	}
	for _, e := range cfg.Engines {
		for step, w := range cfg.Workloads {
			r, ok := rows[cell{e, step}]
			switch {
			case !ok:
				t.Errorf("%s/%s: no row", e, w.Name)
				continue
			case r.Error != "":
				t.Errorf("%s/%s: %s", e, w.Name, r.Error)
				continue
			case r.Workload != w.Name || r.Threads != cfg.threads(w):
				t.Errorf("%s step %d: row for %s with %d threads, want %s with %d", e, step, r.Workload, r.Threads, w.Name, cfg.threads(w))
			case r.Ops <= 0 || r.OpsPerSec <= 0 || r.P99Ns <= 0 || r.MaxNs < r.P99Ns:
				t.Errorf("%s/%s: empty measurement %+v", e, w.Name, r)
			}
			checkRowCounts(t, &cfg, r)
		}
	}
	if lsmgo := rows[cell{"lsmgo", 0}]; lsmgo.Engine == "lsmgo" && (lsmgo.DiskBytesWritten <= 0 || lsmgo.DiskBytes <= 0 || lsmgo.PeakRSS <= 0) {
		t.Errorf("lsmgo fillseq: missing disk or memory figures: %+v", lsmgo)
	}
	// settle is one wait, not a rate to compare.
	if len(cfg.Engines) > 1 && len(rep.Comparisons) != len(cfg.Workloads)-1 {
		t.Errorf("%d comparisons, want one per workload but settle (%d)", len(rep.Comparisons), len(cfg.Workloads)-1)
	}
	if len(rep.Medians) != len(rep.Results) {
		t.Errorf("%d median rows of %d rows from one run", len(rep.Medians), len(rep.Results))
	}
	checkFiles(t, cfg.OutDir, len(rep.Results))
}

// checkRowCounts checks what every engine must agree on whatever its
// speed: how many operations each workload did and what reads found.
func checkRowCounts(t *testing.T, cfg *Config, r Result) {
	t.Helper()
	n := cfg.Num
	switch r.Workload {
	case "fillseq", "fillrandom", "overwrite", "readrandom", "readmissing", "readseq", "readreverse", "seekrandom", "mixed":
		if r.Ops != n {
			t.Errorf("%s/%s: %d operations, want %d", r.Engine, r.Workload, r.Ops, n)
		}
	case "settle":
		if r.Ops != 1 {
			t.Errorf("%s/settle: %d operations, want 1", r.Engine, r.Ops)
		}
	case "fillsync":
		if want := n / fillSyncDivisor; r.Engine != rocksdbName && r.Ops != want {
			t.Errorf("%s/%s: %d operations, want %d", r.Engine, r.Workload, r.Ops, want)
		}
	}
	switch r.Workload {
	case "readrandom", "seekrandom", "readwhilewriting":
		if r.Found != r.Ops && r.Engine != rocksdbName {
			t.Errorf("%s/%s: found %d of %d present keys", r.Engine, r.Workload, r.Found, r.Ops)
		}
	case "readmissing":
		if r.Found != 0 {
			t.Errorf("%s/%s: found %d missing keys", r.Engine, r.Workload, r.Found)
		}
	case "readseq", "readreverse":
		if r.Engine != rocksdbName && r.Found != n {
			t.Errorf("%s/%s: visited %d keys, want %d", r.Engine, r.Workload, r.Found, n)
		}
	}
	if r.Workload == "readwhilewriting" && r.Engine != rocksdbName && r.WriterOpsPerSec <= 0 {
		t.Errorf("%s/readwhilewriting: no writer rate", r.Engine)
	}
}

func checkFiles(t *testing.T, dir string, results int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(rep.Results) != results {
		t.Errorf("results.json has %d results, want %d", len(rep.Results), results)
	}
	csvData, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(csvData), "\n"); lines != results+1 {
		t.Errorf("results.csv has %d lines, want %d", lines, results+1)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| workload | engine |") {
		t.Errorf("results.md has no table:\n%s", md)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, string(page))
}

// checkSelfContained fails on anything in a page that a browser would
// fetch or run.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	if !strings.Contains(page, "<svg") {
		t.Error("report.html has no chart")
	}
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q: it must be self-contained", bad)
		}
	}
}
