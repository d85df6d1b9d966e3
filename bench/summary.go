package bench

import (
	"fmt"
	"io"
	"strings"
)

// Comparison sets lsmgo's row of one workload against the fastest peer's
// row of the same workload in the same run.
type Comparison struct {
	Step     int    `json:"step"`
	Workload string `json:"workload"`
	Threads  int    `json:"threads"`

	LsmgoOpsPerSec float64 `json:"lsmgo_ops_per_sec"`
	LsmgoP99Ns     int64   `json:"lsmgo_p99_ns"`
	BestPeer       string  `json:"best_peer"`
	PeerOpsPerSec  float64 `json:"peer_ops_per_sec"`
	PeerP99Ns      int64   `json:"peer_p99_ns"`
	// Ratio is lsmgo's ops/s over the best peer's: > 1 means lsmgo is
	// faster.
	Ratio float64 `json:"ratio"`
	// P99Ratio is lsmgo's p99 over the best peer's: < 1 means lsmgo's
	// tail is lower.
	P99Ratio float64 `json:"p99_ratio"`
	// CPU time per operation of both, background work included.
	LsmgoCPUPerOpNs int64 `json:"lsmgo_cpu_per_op_ns"`
	PeerCPUPerOpNs  int64 `json:"peer_cpu_per_op_ns"`
}

// compare builds a Comparison for every workload but settle where lsmgo
// and at least one peer have a row without error.
func compare(c *Config, results []Result) []Comparison {
	var out []Comparison
	for step, w := range c.Workloads {
		if w.Name == "settle" {
			// One operation that waits: its rate compares nothing.
			continue
		}
		var mine *Result
		var best *Result
		for i := range results {
			r := &results[i]
			if r.Step != step || r.Error != "" || r.OpsPerSec <= 0 {
				continue
			}
			if r.Engine == "lsmgo" {
				mine = r
			} else if best == nil || r.OpsPerSec > best.OpsPerSec {
				best = r
			}
		}
		if mine == nil || best == nil {
			continue
		}
		cmp := Comparison{
			Step: step, Workload: w.Name, Threads: c.threads(w),
			LsmgoOpsPerSec: mine.OpsPerSec, LsmgoP99Ns: mine.P99Ns,
			BestPeer: best.Engine, PeerOpsPerSec: best.OpsPerSec, PeerP99Ns: best.P99Ns,
			Ratio:           mine.OpsPerSec / best.OpsPerSec,
			LsmgoCPUPerOpNs: mine.cpuPerOp(), PeerCPUPerOpNs: best.cpuPerOp(),
		}
		if best.P99Ns > 0 {
			cmp.P99Ratio = float64(mine.P99Ns) / float64(best.P99Ns)
		}
		out = append(out, cmp)
	}
	return out
}

// EngineSummary is what one engine did to disk and memory over the run.
type EngineSummary struct {
	Engine string `json:"engine"`
	// WriteAmpFillOverwrite is the bytes written to disk during fillrandom
	// and the overwrite that follows it, over the user bytes of both.
	WriteAmpFillOverwrite float64 `json:"write_amp_fillrandom_overwrite,omitempty"`
	// SpaceAmpFill and SpaceAmpOverwrite are the space amplification
	// right after fillrandom (or fillseq) and after overwrite.
	SpaceAmpFill      float64 `json:"space_amp_after_fill,omitempty"`
	SpaceAmpOverwrite float64 `json:"space_amp_after_overwrite,omitempty"`
	// PeakRSS is the largest peak resident set of any workload.
	PeakRSS int64 `json:"peak_rss"`
}

func summarizeEngines(engines []string, results []Result) []EngineSummary {
	var out []EngineSummary
	for _, e := range engines {
		s := EngineSummary{Engine: e}
		var fill *Result
		for i := range results {
			r := &results[i]
			if r.Engine != e || r.Error != "" {
				continue
			}
			s.PeakRSS = max(s.PeakRSS, r.PeakRSS)
			switch r.Workload {
			case "fillrandom", "fillseq":
				s.SpaceAmpFill = r.SpaceAmp
				fill = nil
				if r.Workload == "fillrandom" {
					fill = r
				}
			case "overwrite":
				s.SpaceAmpOverwrite = r.SpaceAmp
				// Only an overwrite of the DB that fillrandom built
				// continues its write amplification.
				if fill != nil && !r.Prefilled && s.WriteAmpFillOverwrite == 0 {
					user := fill.UserBytesWritten + r.UserBytesWritten
					if user > 0 && fill.DiskBytesWritten > 0 {
						s.WriteAmpFillOverwrite = float64(fill.DiskBytesWritten+r.DiskBytesWritten) / float64(user)
					}
				}
			case "fillsync", "deleterandom":
				fill = nil
			}
		}
		out = append(out, s)
	}
	return out
}

// writeSummary prints the comparisons and engine summaries under the
// table.
func writeSummary(w io.Writer, rep *Report) {
	if len(rep.Comparisons) > 0 {
		fmt.Fprintf(w, "\nlsmgo against the best peer of each workload (ratio > 1: lsmgo faster; p99 ratio < 1: lsmgo's p99 lower)\n")
		fmt.Fprintf(w, "%-16s %3s %11s %-10s %10s %6s %9s %9s %9s %12s %11s\n",
			"workload", "thr", "lsmgo ops/s", "best peer", "peer ops/s", "ratio", "lsmgo p99", "peer p99", "p99 ratio", "lsmgo cpu/op", "peer cpu/op")
		for _, c := range rep.Comparisons {
			fmt.Fprintf(w, "%-16s %3d %11s %-10s %10s %6.2f %9s %9s %9s %12s %11s\n",
				c.Workload, c.Threads, fmtCount(c.LsmgoOpsPerSec), c.BestPeer, fmtCount(c.PeerOpsPerSec),
				c.Ratio, fmtNanos(c.LsmgoP99Ns), fmtNanos(c.PeerP99Ns), fmtRatio(c.P99Ratio),
				fmtNanos(c.LsmgoCPUPerOpNs), fmtNanos(c.PeerCPUPerOpNs))
		}
	}
	fmt.Fprintf(w, "\n%-10s %22s %12s %17s %9s\n", "engine", "w-amp fill+overwrite", "s-amp fill", "s-amp overwrite", "peak rss")
	for _, s := range rep.Engines {
		fmt.Fprintf(w, "%-10s %22s %12s %17s %9s\n", s.Engine, fmtRatio(s.WriteAmpFillOverwrite),
			fmtRatio(s.SpaceAmpFill), fmtRatio(s.SpaceAmpOverwrite), fmtBytes(s.PeakRSS))
	}
	var errs []string
	for _, r := range rep.Results {
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("%s/%s: %s", r.Engine, r.Workload, r.Error))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\n%d rows failed:\n  %s\n", len(errs), strings.Join(errs, "\n  "))
	}
}
