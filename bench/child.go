package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// childEnv carries a childJob, as JSON, to a child process: the same
// binary re-executed, which runs one engine and exits.
const childEnv = "LSMGO_BENCH_CHILD"

// eventFD is the child's file descriptor of the event pipe: the first of
// exec.Cmd.ExtraFiles.
const eventFD = 3

// childJob is what a child runs: every workload of cfg on one engine.
type childJob struct {
	Engine string `json:"engine"`
	Dir    string `json:"dir"`
	Config Config `json:"config"`
}

// event is one line a child writes to its event pipe.
type event struct {
	Progress *progress `json:"progress,omitempty"`
	Result   *Result   `json:"result,omitempty"`
}

// progress is the state of the running workload.
type progress struct {
	Engine   string  `json:"engine"`
	Workload string  `json:"workload"`
	Done     int64   `json:"done"`
	Total    int64   `json:"total"` // 0 when bounded by time
	Elapsed  float64 `json:"elapsed"`
	Phase    string  `json:"phase,omitempty"`
}

// progressInterval is how often a child reports progress.
const progressInterval = 250 * time.Millisecond

// RunChildIfRequested turns the process into an engine child when the
// parent asked for one, and exits; otherwise it returns at once. The
// binary's main and a test binary's TestMain call it first thing.
func RunChildIfRequested() {
	spec, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	// Events go to file descriptor 3, not stdout, so an engine that
	// prints cannot corrupt them; the parent relays stdout and stderr.
	events := os.NewFile(eventFD, "events")
	code := 0
	if err := runChild(spec, events); err != nil {
		fmt.Fprintf(os.Stderr, "lsmgo-bench child: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// eventWriter serializes events from the workload and progress goroutines.
type eventWriter struct {
	mu  sync.Mutex
	out io.Writer
	err error
	// written counts the bytes of events, which the workload's write
	// counters must not include.
	written atomic.Int64
}

func (w *eventWriter) emit(e event) {
	b, err := json.Marshal(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && err != nil {
		w.err = err
	}
	if w.err == nil {
		n, err := w.out.Write(append(b, '\n'))
		w.written.Add(int64(n))
		w.err = err
	}
}

// runChild runs the job spec (a childJob in JSON) and writes its events
// to events: every workload in order, each ending in a Result event. A
// workload that fails gets a Result with Error and the next one still
// runs; only a job that cannot start, a database that will not close or
// a broken event pipe fails the child.
func runChild(spec string, events io.Writer) error {
	var job childJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		return fmt.Errorf("bad job: %w", err)
	}
	es, ok := goEngines[job.Engine]
	if !ok {
		return fmt.Errorf("unknown engine %q", job.Engine)
	}
	c := &job.Config
	ch := &child{
		job:  job,
		spec: es,
		cfg:  c,
		out:  &eventWriter{out: events},
		st:   &dbState{keySpace: c.Num},
		pool: valuePool(c.Seed, c.Compressibility, c.ValueSize),
	}
	if c.Distribution != Uniform {
		ch.zipf = newZipf(uint64(c.Num))
	}
	for step, w := range c.Workloads {
		res := ch.runWorkload(step, w)
		ch.out.emit(event{Result: &res})
	}
	if ch.st.eng != nil {
		if err := ch.st.eng.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	return ch.out.err
}

// child runs the workloads of one engine in order on one database.
type child struct {
	job  childJob
	spec engineSpec
	cfg  *Config
	out  *eventWriter
	st   *dbState
	pool []byte
	zipf *zipf
}

// open (re)opens the engine, on an empty directory when fresh.
func (ch *child) open(sync, fresh bool) error {
	if ch.st.eng != nil {
		err := ch.st.eng.Close()
		ch.st.eng = nil
		if err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	if fresh {
		if err := os.RemoveAll(ch.job.Dir); err != nil {
			return err
		}
		ch.st.live, ch.st.full = 0, false
		ch.st.claimed.Store(0)
		ch.st.inserted.Store(0)
	}
	eng, err := ch.spec.open(ch.job.Dir, EngineConfig{CacheSize: ch.cfg.CacheSize, Sync: sync, ValueThreshold: ch.cfg.ValueThreshold})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	ch.st.eng, ch.st.sync = eng, sync
	return nil
}

// runWorkload runs workload w, the step-th of the job, and measures it.
// The counters are read right around execute, so neither preparing the
// database nor writing the profiles counts.
func (ch *child) runWorkload(step int, w WorkloadSpec) Result {
	def := workloads[w.Name]
	res := Result{Engine: ch.job.Engine, Workload: w.Name, Threads: ch.cfg.threads(w)}
	if err := ch.prepareDB(def, &res); err != nil {
		res.Error = err.Error()
		ch.st.full = false
		return res
	}
	r := &run{cfg: ch.cfg, def: def, eng: ch.st.eng, threads: res.Threads, pool: ch.pool, zipf: ch.zipf, st: ch.st}
	r.prepare()

	stopProfile, err := ch.startProfile(step, w.Name)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	rssOK := resetPeakRSS()
	io0, out0, cpu0 := readIOCounters(), ch.out.written.Load(), cpuSeconds()
	stopProgress := ch.reportProgress(r, "")
	out, err := r.execute()
	stopProgress()
	io1, out1, cpu1 := readIOCounters(), ch.out.written.Load(), cpuSeconds()
	if perr := stopProfile(); perr != nil && err == nil {
		err = perr
	}
	res.PeakRSS = peakRSS()
	if err != nil {
		res.Error = err.Error()
		ch.st.full = false
		return res
	}
	if def.after != nil {
		def.after(ch.st, out.ops)
	}
	entry := int64(ch.cfg.KeySize + ch.cfg.ValueSize)
	res.Ops = out.ops
	res.Seconds = out.elapsed.Seconds()
	res.Found = out.found
	res.CPUSeconds = cpu1 - cpu0
	res.setLatency(out.hist)
	if out.writerOps > 0 {
		res.WriterOpsPerSec = float64(out.writerOps) / out.writerElapsed.Seconds()
	}
	res.UserBytesWritten = out.writes * entry
	if io0.ok && io1.ok {
		res.DiskBytesWritten = io1.storage - io0.storage
		// The child's own event lines are write calls too.
		res.SyscallBytesWritten = io1.syscall - io0.syscall - (out1 - out0)
	}
	res.DiskBytes = diskUsage(ch.job.Dir)
	res.LiveBytes = ch.st.live * entry
	res.setRates(out.bytes)
	if !rssOK {
		res.Note = joinNote(res.Note, "peak RSS since process start")
	}
	return res
}

// prepareDB puts the database into the state def needs: empty for fills,
// every key present for the rest.
func (ch *child) prepareDB(def *workloadDef, res *Result) error {
	sync := ch.cfg.Sync || def.sync
	switch {
	case def.fresh:
		return ch.open(sync, true)
	case !ch.st.full:
		if err := ch.open(sync, true); err != nil {
			return err
		}
		res.Prefilled = true
		return ch.prefill()
	case ch.st.sync != sync || ch.st.eng == nil:
		return ch.open(sync, false)
	}
	return nil
}

// prefill writes every key once (fillrandom, one thread, no time limit).
func (ch *child) prefill() error {
	c := *ch.cfg
	c.Duration = 0
	def := workloads["fillrandom"]
	r := &run{cfg: &c, def: def, eng: ch.st.eng, threads: 1, pool: ch.pool}
	r.prepare()
	stop := ch.reportProgress(r, "prefill")
	out, err := r.execute()
	stop()
	if err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	def.after(ch.st, out.ops)
	return nil
}

// reportProgress emits progress events for r until the returned function
// is called.
func (ch *child) reportProgress(r *run, phase string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	begin := time.Now()
	total := r.limit
	if ch.cfg.Duration > 0 && r.def.order == nil {
		total = 0
	}
	wg.Go(func() {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ch.out.emit(event{Progress: &progress{
					Engine: ch.job.Engine, Workload: r.def.name, Phase: phase,
					Done: r.done.Load(), Total: total, Elapsed: time.Since(begin).Seconds(),
				}})
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// joinNote appends b to the note a.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// startProfile starts the CPU profile of a workload and snapshots the
// allocation profile, when profiles were asked for. The allocation
// profile is cumulative over the process, so the snapshot taken before
// (.allocs-base.pprof) lets pprof's -diff_base isolate the workload.
func (ch *child) startProfile(step int, workload string) (stop func() error, err error) {
	dir := ch.cfg.ProfileDir
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prefix := filepath.Join(dir, fmt.Sprintf("%s-%02d-%s", ch.job.Engine, step, workload))
	if err := writeHeapProfile(prefix + ".allocs-base.pprof"); err != nil {
		return nil, err
	}
	f, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		return writeHeapProfile(prefix + ".allocs.pprof")
	}, nil
}

// writeHeapProfile writes the process's allocation profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// The allocation counts are only up to date after a GC.
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
