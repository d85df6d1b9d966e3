package bench

import "github.com/HdrHistogram/hdrhistogram-go"

// Result is one row: one workload on one engine.
type Result struct {
	// Step is the workload's position in Config.Workloads; Run the
	// repetition of the whole engine sequence (--runs) it comes from.
	Step     int    `json:"step"`
	Run      int    `json:"run"`
	Engine   string `json:"engine"`
	Workload string `json:"workload"`
	Threads  int    `json:"threads"`
	// Ops is the number of measured operations (for readwhilewriting, the
	// readers').
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// MBPerSec is key and value bytes moved per second, in MiB as db_bench
	// counts them.
	MBPerSec float64 `json:"mb_per_sec"`
	// Latencies of single operations in nanoseconds.
	P50Ns  int64   `json:"p50_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p999_ns"`
	MaxNs  int64   `json:"max_ns"`
	MeanNs float64 `json:"mean_ns"`
	// CPUSeconds is the user and system CPU time of the engine's process
	// during the workload, background work included: unlike ops/s it
	// hardly moves when other work shares the machine.
	CPUSeconds float64 `json:"cpu_seconds"`
	// Found counts reads that found their key (seekrandom: seeks that
	// found one; readseq/readreverse: keys visited).
	Found int64 `json:"found"`
	// WriterOpsPerSec is readwhilewriting's writer rate.
	WriterOpsPerSec float64 `json:"writer_ops_per_sec,omitempty"`
	// UserBytesWritten is the key and value bytes the workload wrote.
	UserBytesWritten int64 `json:"user_bytes_written"`
	// DiskBytesWritten is what the engine's process wrote to storage
	// while the workload ran (write_bytes of /proc/self/io; db_bench's
	// block output count for rocksdb).
	DiskBytesWritten int64 `json:"disk_bytes_written"`
	// SyscallBytesWritten is what the engine passed to write calls
	// (wchar of /proc/self/io; 0 for rocksdb). It exceeds
	// DiskBytesWritten when an engine rewrites pages that are still
	// dirty in the page cache (bbolt), and misses writes through mmap
	// (Badger's memtable log).
	SyscallBytesWritten int64 `json:"syscall_bytes_written"`
	// WriteAmp is DiskBytesWritten / UserBytesWritten.
	WriteAmp float64 `json:"write_amp,omitempty"`
	// DiskBytes is the space the database occupies after the workload.
	DiskBytes int64 `json:"disk_bytes"`
	// LiveBytes is the key and value bytes of the keys present after it.
	LiveBytes int64 `json:"live_bytes"`
	// SpaceAmp is DiskBytes / LiveBytes.
	SpaceAmp float64 `json:"space_amp,omitempty"`
	// PeakRSS is the process's peak resident set during the workload.
	PeakRSS int64 `json:"peak_rss"`
	// Prefilled says the workload found the DB without every key and ran
	// an unmeasured fillrandom first.
	Prefilled bool   `json:"prefilled,omitempty"`
	Note      string `json:"note,omitempty"`
	Error     string `json:"error,omitempty"`

	// In a median row (Report.Medians): how many runs succeeded and the
	// spread of their ops/s.
	Runs         int     `json:"runs,omitempty"`
	OpsPerSecMin float64 `json:"ops_per_sec_min,omitempty"`
	OpsPerSecMax float64 `json:"ops_per_sec_max,omitempty"`
}

// cpuPerOp is the CPU time one operation cost, in nanoseconds.
func (r *Result) cpuPerOp() int64 {
	if r.Ops == 0 {
		return 0
	}
	return int64(r.CPUSeconds * 1e9 / float64(r.Ops))
}

// setLatency fills the latency fields from a histogram of nanoseconds.
func (r *Result) setLatency(h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	r.P50Ns = h.ValueAtQuantile(50)
	r.P99Ns = h.ValueAtQuantile(99)
	r.P999Ns = h.ValueAtQuantile(99.9)
	r.MaxNs = h.Max()
	r.MeanNs = h.Mean()
}

// setRates fills the derived fields from the raw ones.
func (r *Result) setRates(bytesMoved int64) {
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
		r.MBPerSec = float64(bytesMoved) / (1 << 20) / r.Seconds
	}
	if r.UserBytesWritten > 0 && r.DiskBytesWritten > 0 {
		r.WriteAmp = float64(r.DiskBytesWritten) / float64(r.UserBytesWritten)
	}
	if r.LiveBytes > 0 {
		r.SpaceAmp = float64(r.DiskBytes) / float64(r.LiveBytes)
	}
}
