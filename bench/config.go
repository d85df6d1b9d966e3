package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Config is one invocation of the engine mode: which workloads run on which
// engines, and the shape of the keys and values they use.
type Config struct {
	// Workloads run in this order on every engine.
	Workloads []WorkloadSpec `json:"workloads"`
	// Num is the size of the key space and, without Duration, the number
	// of operations of each workload (fillsync does Num/100).
	Num int64 `json:"num"`
	// Duration, when set, bounds each workload by time instead of Num.
	Duration time.Duration `json:"duration"`
	// Threads is the number of client goroutines of a workload that sets
	// none itself.
	Threads   int `json:"threads"`
	KeySize   int `json:"key_size"`
	ValueSize int `json:"value_size"`
	// ValueThreshold is the value size from which every engine that can
	// store large values apart from its tree does so (lsmgo's blob files,
	// Badger's value log, Pebble's and RocksDB's blob files); negative
	// leaves each engine at its default.
	ValueThreshold  int          `json:"value_threshold"`
	Compressibility float64      `json:"compressibility"`
	Distribution    Distribution `json:"distribution"`
	// ReadPercent is the share of reads in the mixed workload.
	ReadPercent int `json:"read_percent"`
	// WriterRate caps readwhilewriting's writer at this many writes per
	// second; 0 leaves it unthrottled, as db_bench does by default.
	WriterRate int      `json:"writer_rate"`
	Engines    []string `json:"engines"`
	// Runs repeats the whole sequence of engines; rows are then reported
	// as the median run with the spread of all.
	Runs      int   `json:"runs"`
	CacheSize int64 `json:"cache_size"`
	// Sync makes every write of every workload synced, not only fillsync's.
	Sync bool `json:"sync"`
	// DBDir is the parent of the engines' directories; empty means a
	// temporary directory.
	DBDir string `json:"db_dir"`
	Seed  uint64 `json:"seed"`
	// OutDir, when set, receives results.json, results.csv, results.md
	// and report.html.
	OutDir string `json:"out_dir"`
	// ProfileDir, when set, receives a CPU profile and allocation
	// profiles of every workload of every Go engine.
	ProfileDir string `json:"profile_dir,omitempty"`
	// Progress selects the live progress line: "auto" (when stderr is a
	// terminal), "on" or "off".
	Progress string `json:"-"`
}

// WorkloadSpec is a workload name with an optional thread count of its
// own, written name:threads on the command line (mixed:4).
type WorkloadSpec struct {
	Name    string `json:"name"`
	Threads int    `json:"threads,omitempty"`
}

// String writes the spec as the command line does.
func (w WorkloadSpec) String() string {
	if w.Threads > 0 {
		return fmt.Sprintf("%s:%d", w.Name, w.Threads)
	}
	return w.Name
}

// threads is the goroutine count the workload runs with under c.
func (c *Config) threads(w WorkloadSpec) int {
	if w.Threads > 0 {
		return w.Threads
	}
	return c.Threads
}

// Defaults both modes share, so that an engine-mode row and a
// client-mode row without flags move keys and values of the same sizes.
const (
	defaultKeySize   = 32
	defaultValueSize = 128
	defaultSeed      = 1
)

// DefaultConfig is the configuration of a run with no flags.
func DefaultConfig() Config {
	return Config{
		Num:             1_000_000,
		Threads:         1,
		Runs:            1,
		KeySize:         defaultKeySize,
		ValueSize:       defaultValueSize,
		ValueThreshold:  lsmgo.DefaultValueThreshold,
		Compressibility: 0.5,
		Distribution:    Uniform,
		ReadPercent:     50,
		CacheSize:       64 << 20,
		Seed:            defaultSeed,
		Progress:        "auto",
	}
}

// ParseFlags parses the engine mode's command line into a Config.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("lsmgo-bench --mode=engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workloads := fs.String("workloads", strings.Join(WorkloadNames(), ","),
		"comma-separated workloads, each optionally name:threads (mixed:4); ycsb-a ... ycsb-f only when named")
	engines := fs.String("engines", strings.Join(AvailableEngines(), ","),
		"comma-separated engines (lsmgo,pebble,badger,bbolt,goleveldb,rocksdb); default all available here")
	fs.Int64Var(&c.Num, "num", c.Num, "keys in the key space and operations per workload")
	fs.DurationVar(&c.Duration, "duration", 0, "run each workload for this long instead of --num operations")
	fs.IntVar(&c.Threads, "threads", c.Threads, "client goroutines per workload (readwhilewriting: readers, plus one writer)")
	fs.IntVar(&c.KeySize, "key-size", c.KeySize, "key size in bytes (at least 8)")
	fs.IntVar(&c.ValueSize, "value-size", c.ValueSize, "value size in bytes")
	fs.IntVar(&c.ValueThreshold, "value-threshold", c.ValueThreshold,
		"separate values of at least this many bytes in every engine that can (lsmgo, badger, pebble, rocksdb); negative: each engine's default")
	fs.Float64Var(&c.Compressibility, "compressibility", c.Compressibility, "fraction a compressor shrinks values to, like db_bench's --compression_ratio")
	dist := fs.String("distribution", string(c.Distribution), "key distribution of random workloads: uniform, zipfian or latest")
	ratio := fs.String("mixed-ratio", "50:50", "read:write ratio of the mixed workload")
	fs.IntVar(&c.Runs, "runs", c.Runs, "repeat every engine this many times, alternating their order, and report medians")
	fs.IntVar(&c.WriterRate, "writer-rate", 0, "writes per second of readwhilewriting's writer (0: unthrottled)")
	fs.Int64Var(&c.CacheSize, "cache-size", c.CacheSize, "block cache bytes for the engines that have one")
	fs.BoolVar(&c.Sync, "sync", false, "sync every write of every workload (fillsync always syncs)")
	fs.StringVar(&c.DBDir, "db", "", "directory under which each engine gets its own directory (default: a temporary one); removed after each engine")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the key and value streams (every engine gets the same)")
	fs.StringVar(&c.OutDir, "out", "", "write results.json, results.csv, results.md and report.html here")
	fs.StringVar(&c.ProfileDir, "profile", "", "write ENGINE-STEP-WORKLOAD.cpu.pprof and .allocs(-base).pprof of every Go engine's workloads here")
	fs.StringVar(&c.Progress, "progress", c.Progress, "live progress line on stderr: auto, on or off")
	if err := parseFlagsOnly(fs, args); err != nil {
		return c, err
	}
	var err error
	if c.Workloads, err = parseWorkloads(*workloads); err != nil {
		return c, err
	}
	c.Engines = splitList(*engines)
	if c.Distribution, err = parseDistribution(*dist); err != nil {
		return c, err
	}
	if c.ReadPercent, err = parseRatio("mixed-ratio", *ratio); err != nil {
		return c, err
	}
	return c, c.validate()
}

// parseFlagsOnly parses args into fs and rejects positional arguments,
// which no mode takes: a stray word is more likely a flag missing its
// dashes than something to ignore.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseWorkloads reads --workloads: known names, each optionally with
// :threads.
func parseWorkloads(s string) ([]WorkloadSpec, error) {
	var specs []WorkloadSpec
	for _, f := range splitList(s) {
		name, threads, hasThreads := strings.Cut(f, ":")
		w := WorkloadSpec{Name: name}
		if _, ok := workloads[name]; !ok {
			return nil, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(allWorkloadNames(), ", "))
		}
		if hasThreads {
			n, err := strconv.Atoi(threads)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("workload %q: thread count must be a positive integer", f)
			}
			w.Threads = n
		}
		specs = append(specs, w)
	}
	if len(specs) == 0 {
		return nil, errors.New("no workloads selected")
	}
	return specs, nil
}

// parseRatio turns the value s of --name, "R:W", into the percentage of
// reads.
func parseRatio(name, s string) (int, error) {
	r, w, ok := strings.Cut(s, ":")
	rn, err1 := strconv.Atoi(r)
	wn, err2 := strconv.Atoi(w)
	if !ok || err1 != nil || err2 != nil || rn < 0 || wn < 0 || rn+wn == 0 {
		return 0, fmt.Errorf("--%s %q: want READ:WRITE, such as 50:50 or 90:10", name, s)
	}
	return rn * 100 / (rn + wn), nil
}

// validate rejects settings no run can use. Run calls it as well as
// ParseFlags, since a Config built in code never passed the flags, and a
// bad one should fail before a child starts rather than inside one.
func (c *Config) validate() error {
	switch {
	case c.Num < 1 || c.Num > 1<<32:
		return fmt.Errorf("--num %d out of range [1, 2^32]", c.Num)
	case c.Duration < 0:
		return errors.New("--duration must not be negative")
	case c.Threads < 1:
		return errors.New("--threads must be at least 1")
	case c.WriterRate < 0:
		return errors.New("--writer-rate must not be negative")
	case c.Runs < 1:
		return errors.New("--runs must be at least 1")
	case c.KeySize < minKeySize:
		return fmt.Errorf("--key-size must be at least %d", minKeySize)
	case c.ValueSize < 1 || c.ValueSize > maxValueSize:
		return fmt.Errorf("--value-size must be in [1, %d]", maxValueSize)
	case c.ValueThreshold == 0:
		return errors.New("--value-threshold must not be 0 (negative: engine defaults)")
	case c.Compressibility <= 0 || c.Compressibility > 1:
		return errors.New("--compressibility must be in (0, 1]")
	case c.CacheSize < 0:
		return errors.New("--cache-size must not be negative")
	}
	switch c.Progress {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("--progress %q: want auto, on or off", c.Progress)
	}
	return checkEngines(c.Engines)
}
