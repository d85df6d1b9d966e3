package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Report is everything one run produced; results.json holds it as is.
type Report struct {
	Meta   Meta   `json:"meta"`
	Config Config `json:"config"`
	// Settings says, per engine, exactly how it was opened and driven.
	Settings map[string]string `json:"settings"`
	// Workloads gives the meaning of each workload run.
	Workloads map[string]string `json:"workloads"`
	// Results holds every row of every run.
	Results []Result `json:"results"`
	// Medians holds one row per engine and workload: the median run.
	Medians []Result `json:"medians"`
	// Comparisons set lsmgo against the fastest peer per workload.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Engines summarizes amplification and memory per engine.
	Engines []EngineSummary `json:"engines"`
}

// Meta describes the machine and the invocation.
type Meta struct {
	Command   string            `json:"command"`
	Start     time.Time         `json:"start"`
	Seconds   float64           `json:"seconds"`
	GoVersion string            `json:"go_version"`
	OS        string            `json:"os"`
	CPU       string            `json:"cpu"`
	Cores     int               `json:"cores"`
	Memory    int64             `json:"memory_bytes"`
	Kernel    string            `json:"kernel"`
	LoadAvg   string            `json:"load_average_at_start"`
	Modules   map[string]string `json:"modules"`
	DBBench   string            `json:"db_bench,omitempty"`
}

// Run runs every workload of cfg on every engine, each engine in a child
// process of its own (rocksdb: db_bench processes), one engine after the
// other. It prints the table to stdout as rows arrive, with a progress
// line on stderr, then the comparison with the best peer, and writes the
// files of cfg.OutDir.
func Run(cfg Config, stdout, stderr io.Writer) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{
		Meta:      collectMeta(),
		Config:    cfg,
		Settings:  map[string]string{},
		Workloads: map[string]string{},
	}
	for _, w := range cfg.Workloads {
		rep.Workloads[w.Name] = workloads[w.Name].doc
	}
	ecfg := EngineConfig{CacheSize: cfg.CacheSize, Sync: cfg.Sync, ValueThreshold: cfg.ValueThreshold}
	for _, name := range cfg.Engines {
		if name == rocksdbName {
			rep.Settings[name] = rocksdbSettings(&cfg)
		} else {
			rep.Settings[name] = goEngines[name].settings(ecfg) + fillSyncSettingsNote(cfg.Sync)
		}
	}

	base := cfg.DBDir
	if base == "" {
		tmp, err := os.MkdirTemp("", "lsmgo-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		base = tmp
	} else if err := os.MkdirAll(base, 0o755); err != nil {
		// db_bench creates its own directory but not a missing parent,
		// which a Go engine run first used to create for it.
		return nil, err
	}
	p := newPrinter(stdout, stderr, cfg.Progress)
	p.header(&cfg)
	for run := range cfg.Runs {
		for _, name := range runOrder(cfg.Engines, run) {
			got, err := runEngine(&cfg, name, filepath.Join(base, name), run, p)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, got...)
		}
	}
	p.clearProgress()
	rep.Meta.Seconds = time.Since(rep.Meta.Start).Seconds()
	rep.Medians = medians(&cfg, rep.Results)
	if cfg.Runs > 1 {
		p.medianTable(rep.Medians)
	}
	rep.Comparisons = compare(&cfg, rep.Medians)
	rep.Engines = summarizeEngines(cfg.Engines, rep.Medians)
	writeSummary(stdout, rep)
	if cfg.OutDir != "" {
		if err := writeReportFiles(cfg.OutDir, rep, rep.Results, reportMarkdown(rep), reportHTML(rep)); err != nil {
			return rep, err
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join([]string{
			filepath.Join(cfg.OutDir, "results.json"),
			filepath.Join(cfg.OutDir, "results.csv"),
			filepath.Join(cfg.OutDir, "report.html"),
			filepath.Join(cfg.OutDir, "results.md"),
		}, ", "))
	}
	return rep, nil
}

// runOrder is the engine order of one run: reversed every other run, so a
// drift of the machine's speed over the whole invocation favours no engine.
func runOrder(engines []string, run int) []string {
	order := append([]string(nil), engines...)
	if run%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// runEngine runs every workload on one engine in a fresh directory and
// returns one row per workload, printing each as it arrives.
func runEngine(cfg *Config, name, dir string, run int, p *printer) ([]Result, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	var got []Result
	emit := func(e event) {
		switch {
		case e.Progress != nil:
			p.progress(*e.Progress)
		case e.Result != nil:
			r := *e.Result
			r.Step, r.Run = len(got), run
			got = append(got, r)
			p.row(r)
		}
	}
	var err error
	if name == rocksdbName {
		err = runRocksdb(cfg, dir, emit)
	} else {
		err = runGoChild(cfg, name, dir, emit, p.stderrWriter())
	}
	// A child that died leaves its remaining workloads without a row;
	// they get an error row so every engine has every row.
	for step := len(got); step < len(cfg.Workloads); step++ {
		w := cfg.Workloads[step]
		msg := "engine process ended before this workload"
		if err != nil {
			msg += ": " + err.Error()
		}
		emit(event{Result: &Result{Engine: name, Workload: w.Name, Threads: cfg.threads(w), Error: msg}})
	}
	return got, os.RemoveAll(dir)
}

// medians reduces the rows of every run to one per engine and workload:
// the run with the median ops/s (the lower one of an even count), with the
// spread of all successful runs.
func medians(cfg *Config, results []Result) []Result {
	var out []Result
	for _, name := range cfg.Engines {
		for step := range cfg.Workloads {
			var ok []Result
			var failed *Result
			for _, r := range results {
				if r.Engine != name || r.Step != step {
					continue
				}
				if r.Error != "" {
					failed = &r
					continue
				}
				ok = append(ok, r)
			}
			if len(ok) == 0 {
				if failed != nil {
					out = append(out, *failed)
				}
				continue
			}
			slices.SortFunc(ok, func(a, b Result) int { return cmp.Compare(a.OpsPerSec, b.OpsPerSec) })
			m := ok[(len(ok)-1)/2]
			m.Runs, m.OpsPerSecMin, m.OpsPerSecMax = len(ok), ok[0].OpsPerSec, ok[len(ok)-1].OpsPerSec
			out = append(out, m)
		}
	}
	return out
}

// fillSyncSettingsNote ends a Go engine's settings with when it syncs.
func fillSyncSettingsNote(syncAll bool) string {
	if syncAll {
		return "; --sync: every write synced"
	}
	return "; fillsync opens/writes with sync on"
}

// runGoChild runs one Go engine in a child process: this same binary,
// re-executed with the job in its environment.
func runGoChild(cfg *Config, name, dir string, emit func(event), stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	job, err := json.Marshal(childJob{Engine: name, Dir: dir, Config: *cfg})
	if err != nil {
		return err
	}
	events, eventsW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer events.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(job))
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{eventsW}
	err = cmd.Start()
	// The child holds its own copy; closing ours lets the scan below end
	// when the child exits.
	eventsW.Close()
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(events)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var protoErr error
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if protoErr == nil {
				protoErr = fmt.Errorf("child wrote %q: %w", sc.Text(), err)
			}
			continue
		}
		emit(e)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s child: %w", name, err)
	}
	return protoErr
}

// collectMeta describes this machine and invocation, from /proc where
// Linux has it; what it cannot read stays empty.
func collectMeta() Meta {
	m := Meta{
		Command:   strings.Join(os.Args, " "),
		Start:     time.Now(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		Cores:     runtime.NumCPU(),
		Modules:   map[string]string{},
		DBBench:   dbBenchVersion(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		kb, _ := procField(b, "MemTotal:")
		m.Memory = kb << 10
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/cockroachdb/pebble/v2", "github.com/dgraph-io/badger/v4", "go.etcd.io/bbolt",
				"github.com/syndtr/goleveldb", "github.com/HdrHistogram/hdrhistogram-go":
				m.Modules[d.Path] = d.Version
			}
		}
	}
	return m
}
