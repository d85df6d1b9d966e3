package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rocksdbName is the engine name under which db_bench runs.
const rocksdbName = "rocksdb"

// dbBenchPath finds RocksDB's db_bench (Debian package rocksdb-tools).
func dbBenchPath() (string, error) { return exec.LookPath("db_bench") }

// dbBenchWorkload maps a workload to the db_bench benchmark that means the
// same, with its extra flags.
func dbBenchWorkload(c *Config, w WorkloadSpec) (bench string, flags []string, err error) {
	threads := int64(c.threads(w))
	perThread := func(n int64) string { return strconv.FormatInt(max(1, n/threads), 10) }
	switch w.Name {
	case "fillseq", "overwrite":
		return w.Name, []string{"--writes=" + perThread(c.Num)}, nil
	case "fillrandom":
		return "filluniquerandom", []string{"--writes=" + perThread(c.Num)}, nil
	case "fillsync":
		// db_bench's own fillsync does Num/1000; fillrandom with --sync
		// is the same benchmark at our count.
		return "fillrandom", []string{"--sync=1", "--writes=" + perThread(max(1, c.Num/fillSyncDivisor))}, nil
	case "readrandom", "readmissing", "readseq", "readreverse":
		return w.Name, []string{"--reads=" + perThread(c.Num)}, nil
	case "readwhilewriting":
		f := []string{"--reads=" + perThread(c.Num)}
		if c.WriterRate > 0 {
			f = append(f, "--benchmark_write_rate_limit="+strconv.FormatInt(int64(c.WriterRate)*int64(c.KeySize+c.ValueSize), 10))
		}
		return w.Name, f, nil
	case "seekrandom":
		return w.Name, []string{"--reads=" + perThread(c.Num), "--seek_nexts=" + strconv.Itoa(seekNexts)}, nil
	case "mixed":
		return "readrandomwriterandom", []string{"--reads=" + perThread(c.Num), "--readwritepercent=" + strconv.Itoa(c.ReadPercent)}, nil
	case "deleterandom":
		return w.Name, []string{"--deletes=" + perThread(c.Num)}, nil
	case "settle":
		return "flush,waitforcompaction", nil, nil // run by rocksdbRunner.settle
	}
	if def := workloads[w.Name]; def != nil && def.mix != nil {
		return "", nil, fmt.Errorf("db_bench has no YCSB workload (no scrambled zipfian or latest key choice, no scans of random length): run %s on the Go engines", w.Name)
	}
	return "", nil, fmt.Errorf("no db_bench benchmark for workload %q", w.Name)
}

// dbBenchCommonFlags are the flags of every db_bench invocation: the
// equivalents of the Go engines' settings (64 MiB block cache, WAL on,
// sync off, snappy and every other option at db_bench's default).
func dbBenchCommonFlags(c *Config, dir string, threads int, sync, fresh bool) []string {
	seed := c.Seed
	if seed == 0 {
		seed = 1 // db_bench takes 0 to mean "from the clock"
	}
	f := []string{
		"--db=" + dir,
		"--num=" + strconv.FormatInt(c.Num, 10),
		"--key_size=" + strconv.Itoa(c.KeySize),
		"--value_size=" + strconv.Itoa(c.ValueSize),
		"--compression_ratio=" + strconv.FormatFloat(c.Compressibility, 'f', -1, 64),
		"--cache_size=" + strconv.FormatInt(c.CacheSize, 10),
		"--threads=" + strconv.Itoa(threads),
		"--seed=" + strconv.FormatUint(seed&math.MaxInt64, 10),
		"--disable_wal=0",
		"--histogram=1",
		"--use_existing_db=" + boolFlag(!fresh),
	}
	if sync {
		f = append(f, "--sync=1")
	}
	if c.ValueThreshold > 0 {
		f = append(f, "--enable_blob_files=1", "--min_blob_size="+strconv.Itoa(c.ValueThreshold), "--enable_blob_garbage_collection=1")
	}
	if c.Duration > 0 {
		f = append(f, "--duration="+strconv.Itoa(max(1, int(math.Ceil(c.Duration.Seconds())))))
	}
	return f
}

func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// rocksdbSettings documents how db_bench is run.
func rocksdbSettings(c *Config) string {
	blob := ""
	if c.ValueThreshold > 0 {
		blob = fmt.Sprintf(" --enable_blob_files=1 --min_blob_size=%d --enable_blob_garbage_collection=1", c.ValueThreshold)
	}
	return fmt.Sprintf("db_bench (one process per workload, --use_existing_db=1 except for fills) with --cache_size=%d "+
		"--disable_wal=0 --compression_ratio=%g --histogram=1%s, --sync=1 only for fillsync; every other option db_bench's "+
		"default (snappy, 64 MiB write buffer, bloom filter off); fillrandom=filluniquerandom, "+
		"mixed=readrandomwriterandom, fillsync=fillrandom --sync=1; keys and values from db_bench's own generator "+
		"(same sizes and compression ratio, not the identical stream)", c.CacheSize, c.Compressibility, blob)
}

// rocksdbRunner runs the workloads of a Config through db_bench.
type rocksdbRunner struct {
	cfg  *Config
	dir  string
	bin  string
	emit func(event)
	st   dbState
}

func runRocksdb(cfg *Config, dir string, emit func(event)) error {
	bin, err := dbBenchPath()
	if err != nil {
		return err
	}
	rr := &rocksdbRunner{cfg: cfg, dir: dir, bin: bin, emit: emit, st: dbState{keySpace: cfg.Num}}
	for _, w := range cfg.Workloads {
		res := rr.runWorkload(w)
		emit(event{Result: &res})
	}
	return nil
}

func (rr *rocksdbRunner) runWorkload(w WorkloadSpec) Result {
	c := rr.cfg
	def := workloads[w.Name]
	res := Result{Engine: rocksdbName, Workload: w.Name, Threads: c.threads(w)}
	if c.Distribution != Uniform {
		res.Error = "db_bench has no " + string(c.Distribution) + " key distribution for this benchmark"
		return res
	}
	bench, flags, err := dbBenchWorkload(c, w)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if !def.fresh && !rr.st.full {
		res.Prefilled = true
		pre := append(dbBenchCommonFlags(c, rr.dir, 1, c.Sync, true), "--benchmarks=filluniquerandom", "--duration=0")
		if _, _, err := rr.exec(w.Name, "prefill", pre); err != nil {
			res.Error = "prefill: " + err.Error()
			return res
		}
		rr.st.full, rr.st.live = true, c.Num
	}
	if w.Name == "settle" {
		return rr.settle(res)
	}
	args := append(dbBenchCommonFlags(c, rr.dir, res.Threads, c.Sync, def.fresh), "--benchmarks="+bench)
	args = append(args, flags...)
	out, usage, err := rr.exec(w.Name, "", args)
	if err != nil {
		res.Error = err.Error()
		rr.st.full = false
		return res
	}
	p, err := parseDBBench(out, bench)
	if err != nil {
		res.Error = err.Error()
		rr.st.full = false
		return res
	}
	if def.after != nil {
		def.after(&rr.st, p.ops)
	}
	if t := int64(res.Threads); t > 1 && (p.found > 0 || p.writes > 0) {
		// db_bench's "found" and "writes" come from one thread's
		// message; every thread did the same number of operations.
		p.found, p.writes = p.found*t, p.writes*t
		res.Note = joinNote(res.Note, "found/writes: one db_bench thread's counts times the thread count")
	}
	entry := int64(c.KeySize + c.ValueSize)
	res.Ops, res.Seconds, res.Found = p.ops, p.seconds, p.found
	res.P50Ns, res.P99Ns, res.P999Ns, res.MaxNs, res.MeanNs = p.p50, p.p99, p.p999, p.max, p.mean
	switch {
	case def.fresh || w.Name == "overwrite":
		res.UserBytesWritten = p.ops * entry
	case w.Name == "mixed":
		res.UserBytesWritten = p.writes * entry
	}
	if usage != nil {
		res.DiskBytesWritten = usage.Oublock * 512
		res.PeakRSS = usage.Maxrss << 10
		res.CPUSeconds = rusageCPU(usage)
	}
	res.DiskBytes = diskUsage(rr.dir)
	res.LiveBytes = rr.st.live * entry
	res.setRates(p.ops * entry)
	if p.opsPerSec > 0 {
		// db_bench's own rate, from its own clock.
		res.OpsPerSec = p.opsPerSec
	}
	if p.assertions {
		res.Note = joinNote(res.Note, "db_bench built with assertions")
	}
	if w.Name == "readwhilewriting" {
		res.Note = joinNote(res.Note, "db_bench does not report the writer's rate")
	}
	if res.Threads > 1 && def.fresh {
		res.Note = joinNote(res.Note, "db_bench's fill threads each write their own copy of the key sequence")
	}
	return res
}

// settle runs db_bench's flush and waitforcompaction, which print no
// result line: the row's one operation is the whole run, timed here.
func (rr *rocksdbRunner) settle(res Result) Result {
	args := append(dbBenchCommonFlags(rr.cfg, rr.dir, 1, rr.cfg.Sync, false), "--benchmarks=flush,waitforcompaction")
	start := time.Now()
	_, usage, err := rr.exec(res.Workload, "", args)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Ops, res.Seconds = 1, time.Since(start).Seconds()
	res.P50Ns = time.Since(start).Nanoseconds()
	res.P99Ns, res.P999Ns, res.MaxNs, res.MeanNs = res.P50Ns, res.P50Ns, res.P50Ns, float64(res.P50Ns)
	if usage != nil {
		res.DiskBytesWritten = usage.Oublock * 512
		res.PeakRSS = usage.Maxrss << 10
		res.CPUSeconds = rusageCPU(usage)
	}
	res.DiskBytes = diskUsage(rr.dir)
	res.LiveBytes = rr.st.live * int64(rr.cfg.KeySize+rr.cfg.ValueSize)
	res.setRates(0)
	return res
}

// finishedRE matches db_bench's progress lines on stderr.
var finishedRE = regexp.MustCompile(`finished (\d+) ops`)

// exec runs db_bench, relaying its progress, and returns its stdout and
// resource usage.
func (rr *rocksdbRunner) exec(workload, phase string, args []string) (string, *syscall.Rusage, error) {
	cmd := exec.Command(rr.bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var tail []string
	sc := bufio.NewScanner(errPipe)
	sc.Split(scanCRLF)
	for sc.Scan() {
		line := sc.Text()
		if m := finishedRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			rr.emit(event{Progress: &progress{Engine: rocksdbName, Workload: workload, Phase: phase, Done: n, Elapsed: time.Since(begin).Seconds()}})
			continue
		}
		if strings.TrimSpace(line) != "" {
			tail = append(tail, line)
		}
	}
	err = cmd.Wait()
	var usage *syscall.Rusage
	if cmd.ProcessState != nil {
		usage, _ = cmd.ProcessState.SysUsage().(*syscall.Rusage)
	}
	if err != nil {
		if len(tail) > 5 {
			tail = tail[len(tail)-5:]
		}
		return "", usage, fmt.Errorf("db_bench: %w: %s", err, strings.Join(tail, " | "))
	}
	return stdout.String(), usage, nil
}

// scanCRLF splits at \n or \r: db_bench redraws its progress with \r.
func scanCRLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// dbBenchResult is what one benchmark's section of db_bench output says.
type dbBenchResult struct {
	ops            int64
	seconds        float64
	opsPerSec      float64
	found, writes  int64
	p50, p99, p999 int64 // ns
	max            int64 // ns
	mean           float64
	// assertions is set when db_bench says it was built with assertions
	// enabled, which slows it down.
	assertions bool
}

var (
	// e.g. "readrandom   :   2.010 micros/op 949645 ops/sec 0.042 seconds 40000 operations; ..."
	dbBenchLineRE = regexp.MustCompile(`^(\S+)\s*:\s*([\d.]+) micros/op (\d+) ops/sec\s+([\d.]+) seconds\s+(\d+) operations;(.*)$`)
	foundOfRE     = regexp.MustCompile(`\((\d+) of (\d+) found\)`)
	foundColonRE  = regexp.MustCompile(`found:(\d+)`)
	writesRE      = regexp.MustCompile(`writes:(\d+)`)
	countRE       = regexp.MustCompile(`^Count: (\d+) Average: ([\d.]+)`)
	maxRE         = regexp.MustCompile(`Max: ([\d.]+)`)
	percentileRE  = regexp.MustCompile(`P50: ([\d.]+) .*P99: ([\d.]+) P99\.9: ([\d.]+)`)
	bucketRE      = regexp.MustCompile(`^[\[(]\s*([\d.]+),\s*([\d.]+) \]\s+(\d+)\s`)
)

// dbBenchHistogram is one "Microseconds per ..." section.
type dbBenchHistogram struct {
	count          int64
	mean, max      float64 // µs
	p50, p99, p999 float64 // µs
	buckets        []dbBenchBucket
}

type dbBenchBucket struct {
	lo, hi float64
	count  int64
}

// parseDBBench finds the result line of bench and the histograms after
// it, up to the next result line.
func parseDBBench(out, bench string) (dbBenchResult, error) {
	var r dbBenchResult
	var hists []*dbBenchHistogram
	var cur *dbBenchHistogram
	in := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \r")
		if m := dbBenchLineRE.FindStringSubmatch(line); m != nil {
			if in {
				break
			}
			if m[1] != bench {
				continue
			}
			in = true
			r.opsPerSec, _ = strconv.ParseFloat(m[3], 64)
			r.seconds, _ = strconv.ParseFloat(m[4], 64)
			r.ops, _ = strconv.ParseInt(m[5], 10, 64)
			if f := foundOfRE.FindStringSubmatch(m[6]); f != nil {
				r.found, _ = strconv.ParseInt(f[1], 10, 64)
			} else if f := foundColonRE.FindStringSubmatch(m[6]); f != nil {
				r.found, _ = strconv.ParseInt(f[1], 10, 64)
			}
			if f := writesRE.FindStringSubmatch(m[6]); f != nil {
				r.writes, _ = strconv.ParseInt(f[1], 10, 64)
			}
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(line, "Microseconds per "):
			cur = &dbBenchHistogram{}
			hists = append(hists, cur)
		case cur == nil:
		case countRE.MatchString(line):
			m := countRE.FindStringSubmatch(line)
			cur.count, _ = strconv.ParseInt(m[1], 10, 64)
			cur.mean, _ = strconv.ParseFloat(m[2], 64)
		case strings.HasPrefix(line, "Min:"):
			if m := maxRE.FindStringSubmatch(line); m != nil {
				cur.max, _ = strconv.ParseFloat(m[1], 64)
			}
		case strings.HasPrefix(line, "Percentiles:"):
			if m := percentileRE.FindStringSubmatch(line); m != nil {
				cur.p50, _ = strconv.ParseFloat(m[1], 64)
				cur.p99, _ = strconv.ParseFloat(m[2], 64)
				cur.p999, _ = strconv.ParseFloat(m[3], 64)
			}
		default:
			if m := bucketRE.FindStringSubmatch(line); m != nil {
				b := dbBenchBucket{}
				b.lo, _ = strconv.ParseFloat(m[1], 64)
				b.hi, _ = strconv.ParseFloat(m[2], 64)
				b.count, _ = strconv.ParseInt(m[3], 10, 64)
				cur.buckets = append(cur.buckets, b)
			}
		}
	}
	if !in {
		return r, fmt.Errorf("db_bench printed no result line for %s", bench)
	}
	if len(hists) == 0 {
		return r, errors.New("db_bench printed no histogram")
	}
	r.assertions = strings.Contains(out, "Assertions are enabled")
	us := func(v float64) int64 { return int64(math.Round(v * 1000)) }
	if len(hists) == 1 {
		h := hists[0]
		r.p50, r.p99, r.p999, r.max, r.mean = us(h.p50), us(h.p99), us(h.p999), us(h.max), h.mean*1000
		return r, nil
	}
	// Several operation types (mixed: reads and writes) have separate
	// histograms; merge their buckets so the row has one distribution
	// like the Go engines' rows.
	merged, total, maxUs, sum := map[[2]float64]int64{}, int64(0), 0.0, 0.0
	for _, h := range hists {
		for _, b := range h.buckets {
			merged[[2]float64{b.lo, b.hi}] += b.count
		}
		total += h.count
		maxUs = math.Max(maxUs, h.max)
		sum += h.mean * float64(h.count)
	}
	var buckets []dbBenchBucket
	for k, n := range merged {
		buckets = append(buckets, dbBenchBucket{lo: k[0], hi: k[1], count: n})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].lo < buckets[j].lo })
	r.p50 = us(bucketPercentile(buckets, 50, maxUs))
	r.p99 = us(bucketPercentile(buckets, 99, maxUs))
	r.p999 = us(bucketPercentile(buckets, 99.9, maxUs))
	r.max = us(maxUs)
	if total > 0 {
		r.mean = sum / float64(total) * 1000
	}
	return r, nil
}

// bucketPercentile interpolates linearly inside the bucket that holds the
// p-th percentile, never past the largest value seen.
func bucketPercentile(buckets []dbBenchBucket, p, maxV float64) float64 {
	var total int64
	for _, b := range buckets {
		total += b.count
	}
	if total == 0 {
		return 0
	}
	want := float64(total) * p / 100
	var cum float64
	for _, b := range buckets {
		if cum+float64(b.count) >= want {
			v := b.lo + (b.hi-b.lo)*(want-cum)/float64(b.count)
			return math.Min(v, maxV)
		}
		cum += float64(b.count)
	}
	return maxV
}

// dbBenchVersion returns db_bench's version line, or "" when unknown.
func dbBenchVersion() string {
	bin, err := dbBenchPath()
	if err != nil {
		return ""
	}
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	return strings.TrimSpace(string(out))
}
