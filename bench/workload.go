package bench

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// workloadDef is one workload: what state it needs, how many operations it
// does and the loop each client goroutine runs.
type workloadDef struct {
	name string
	// doc is the one-line meaning shown in --help and the report.
	doc string
	// fresh workloads start on a new, empty database; the others need
	// every key of the key space present and get an unmeasured
	// fillrandom first when it is not.
	fresh bool
	// sync workloads sync every write.
	sync bool
	// ops is the operation count without --duration.
	ops func(c *Config) int64
	// order, for workloads that visit keys in a fixed order, returns the
	// key indexes to visit (nil means 0, 1, 2, ...); the threads deal
	// them out round-robin.
	order func(c *Config) []uint32
	// body is the loop of one client goroutine.
	body func(r *run, w *worker) error
	// writer, when set, runs on its own goroutine beside the clients until
	// they finish; its rate is reported beside theirs. The clients start
	// after its first write, which it announces by closing run.writing.
	writer func(r *run, w *worker) error
	// after records what the workload left in the database.
	after func(st *dbState, done int64)
	// named workloads run only when --workloads names them.
	named bool
	// mix, for YCSB's workloads, is their operation mix.
	mix *ycsbMix
}

// fillSyncDivisor: fillsync does Num/100 writes, because synced writes
// are ~100 times slower (db_bench divides by 1000, which leaves too few
// operations for a p99.9 at 16 threads).
const fillSyncDivisor = 100

// seekNexts is how many keys seekrandom reads after each seek.
const seekNexts = 10

func numOps(c *Config) int64 { return c.Num }

var workloadList = append([]*workloadDef{
	{
		name: "fillseq", doc: "write every key once in key order into an empty DB",
		fresh: true, ops: numOps, body: fillBody, after: afterFill,
	},
	{
		name: "fillrandom", doc: "write every key once in random order into an empty DB (db_bench's filluniquerandom)",
		fresh: true, ops: numOps, order: fullPermutation, body: fillBody, after: afterFill,
	},
	{
		name: "overwrite", doc: "overwrite keys chosen by --distribution",
		ops: numOps, body: overwriteBody,
	},
	{
		name: "readrandom", doc: "read keys chosen by --distribution; every key exists",
		ops: numOps, body: readBody(putKey),
	},
	{
		name: "readmissing", doc: "read keys that were never written (each sorts between two present keys)",
		ops: numOps, body: readBody(putMissingKey),
	},
	{
		name: "readseq", doc: "iterate forward from the first key (each thread scans Num/threads keys)",
		ops: numOps, body: scanBody(false),
	},
	{
		name: "readreverse", doc: "iterate backward from the last key",
		ops: numOps, body: scanBody(true),
	},
	{
		name: "seekrandom", doc: "new iterator, seek to a key chosen by --distribution, then 10 nexts",
		ops: numOps, body: seekRandomBody,
	},
	{
		name: "readwhilewriting", doc: "--threads readers as readrandom while one unthrottled writer overwrites; the row is the readers'",
		ops: numOps, body: readBody(putKey), writer: pacedWriterBody,
	},
	{
		name: "mixed", doc: "each operation a read or an overwrite of a key chosen by --distribution, in --mixed-ratio",
		ops: numOps, body: mixedBody,
	},
	{
		name: "settle", doc: "one operation: flush, then wait until the engine's background compaction and blob GC are done (lsmgo, pebble, rocksdb; badger: value log GC until nothing is left to rewrite; bbolt, goleveldb: returns at once); its disk and s-amp are what is left",
		ops: func(*Config) int64 { return 1 }, body: settleBody,
	},
	{
		name: "deleterandom", doc: "delete every key once in random order",
		ops: numOps, order: fullPermutation, body: deleteBody, after: afterDelete,
	},
	{
		name: "fillsync", doc: "write Num/100 random keys into an empty DB, every write synced",
		fresh: true, sync: true, ops: func(c *Config) int64 { return max(1, c.Num/fillSyncDivisor) },
		order: fullPermutation, body: fillBody, after: afterFillSync,
	},
}, ycsbWorkloads...)

// workloads indexes workloadList by name.
var workloads = func() map[string]*workloadDef {
	m := map[string]*workloadDef{}
	for _, w := range workloadList {
		m[w.name] = w
	}
	return m
}()

// WorkloadNames lists the workloads that run by default, in their
// default order.
func WorkloadNames() []string {
	var names []string
	for _, w := range workloadList {
		if !w.named {
			names = append(names, w.name)
		}
	}
	return names
}

// allWorkloadNames lists every workload, the named-only ones last.
func allWorkloadNames() []string {
	names := make([]string, len(workloadList))
	for i, w := range workloadList {
		names[i] = w.name
	}
	return names
}

// Seeds of the fixed orders, mixed with Config.Seed.
const (
	seedPermutation = 0x9e3779b97f4a7c15
	seedThread      = 0x632be59bd9b4e019
)

// fullPermutation is the order of fillrandom, fillsync and deleterandom:
// every key once, shuffled by the seed.
func fullPermutation(c *Config) []uint32 { return permutation(uint64(c.Num), c.Seed^seedPermutation) }

// dbState is what the child knows about the database between workloads.
type dbState struct {
	eng  Engine
	sync bool
	// full means every key of the key space is present with a value of
	// the configured size.
	full bool
	// live is the number of keys present.
	live int64
	// keySpace is Config.Num.
	keySpace int64
	// claimed and inserted count the records YCSB's inserts claimed and
	// wrote beyond the key space (ycsb.go).
	claimed, inserted atomic.Int64
}

func afterFill(st *dbState, done int64) {
	st.live = done
	st.full = done == st.keySpace
}

// afterFillSync records fillsync's done keys, never the full key space:
// it writes Num/100.
func afterFillSync(st *dbState, done int64) {
	st.live = done
	st.full = false
}

func afterDelete(st *dbState, done int64) {
	st.live = max(0, st.live-done)
	st.full = false
}

// run is one execution of a workload on one engine.
type run struct {
	cfg     *Config
	def     *workloadDef
	eng     Engine
	threads int
	// limit is the operation count across threads; math.MaxInt64 with
	// --duration for workloads without an order.
	limit int64
	order []uint32
	pool  []byte
	zipf  *zipf
	// st is the database's state, which YCSB's inserts advance; ycsb is
	// the shared state of a YCSB workload.
	st   *dbState
	ycsb *ycsbRun
	// done counts finished client operations, for the progress line.
	done atomic.Int64
	// stop ends the clients' loops when --duration has passed;
	// writerStop ends the writer's once the clients are done, since a
	// writer outliving them would only load a database no one reads.
	stop       atomic.Bool
	writerStop atomic.Bool
	// writing is closed by the writer after its first write.
	writing chan struct{}
}

// worker is the state of one client goroutine.
type worker struct {
	r      *run
	id     int
	n      int64 // operations this worker does at most
	hist   *hdrhistogram.Histogram
	key    []byte
	values *valueStream
	keys   keyChooser
	// stop is the flag this worker's loop watches.
	stop *atomic.Bool

	// ops, bytes (key and value bytes moved), found and writes are this
	// worker's totals, summed into the outcome when the workload ends.
	ops, bytes, found, writes int64
	// pending counts operations not yet added to run.done: adding every
	// one would make the shared counter a point of contention.
	pending int64
}

// Histogram range: 1 ns to 100 s at 3 significant digits.
const (
	histMin = 1
	histMax = 100_000_000_000
	histSig = 3
)

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSig) }

// newWorker makes the state of client goroutine id, which does at most n
// operations and stops early when stop is set.
func (r *run) newWorker(id int, n int64, stop *atomic.Bool) *worker {
	return &worker{
		r:      r,
		id:     id,
		n:      n,
		hist:   newHistogram(),
		key:    make([]byte, r.cfg.KeySize),
		values: newValueStream(r.pool, r.cfg.ValueSize, id),
		keys:   newKeyChooser(r.cfg, r.zipf, r.def.name, id),
		stop:   stop,
	}
}

// newKeyChooser seeds thread's key choices from the seed, the workload's
// name and the thread number only, so every engine sees the same keys.
func newKeyChooser(c *Config, z *zipf, workload string, thread int) keyChooser {
	seed := c.Seed ^ seedThread*uint64(thread+1)
	for _, b := range []byte(workload) {
		seed = seed*31 + uint64(b)
	}
	return keyChooser{rng: newRand(seed), n: uint64(c.Num), dist: c.Distribution, z: z}
}

// more reports whether the worker goes on to its i-th operation.
func (w *worker) more(i int64) bool { return i < w.n && !w.stop.Load() }

// record notes one finished operation that began at start.
func (w *worker) record(start time.Time, bytes int) {
	d := time.Since(start).Nanoseconds()
	// Out-of-range values would be dropped by RecordValue; clamp instead,
	// a 100-second operation is news either way.
	_ = w.hist.RecordValue(min(max(d, histMin), histMax))
	w.ops++
	w.bytes += int64(bytes)
	w.pending++
	if w.pending == 64 {
		w.r.done.Add(w.pending)
		w.pending = 0
	}
}

// flush adds the operations pending on the worker to run.done.
func (w *worker) flush() {
	w.r.done.Add(w.pending)
	w.pending = 0
}

// index is the key index of the worker's i-th operation in an ordered
// workload: the threads deal the order out round-robin.
func (w *worker) index(i int64) uint64 {
	j := int64(w.id) + i*int64(w.r.threads)
	if w.r.order != nil {
		return uint64(w.r.order[j])
	}
	return uint64(j)
}

// settleTimeout bounds the settle workload's wait.
const settleTimeout = 5 * time.Minute

// settleBody waits, as one operation, for the engine to finish its
// background work, so that space amplification after overwrites is
// measured once garbage collection has had its chance.
func settleBody(r *run, w *worker) error {
	if !w.more(0) {
		return nil
	}
	start := time.Now()
	// bbolt has no background work; goleveldb has no way to wait for it.
	if s, ok := r.eng.(settler); ok {
		if err := s.Settle(settleTimeout); err != nil {
			return err
		}
	}
	w.record(start, 0)
	return nil
}

func fillBody(r *run, w *worker) error {
	for i := int64(0); w.more(i); i++ {
		putKey(w.key, w.index(i))
		if err := w.write(); err != nil {
			return err
		}
	}
	return nil
}

func deleteBody(r *run, w *worker) error {
	for i := int64(0); w.more(i); i++ {
		putKey(w.key, w.index(i))
		start := time.Now()
		if err := r.eng.Delete(w.key); err != nil {
			return err
		}
		w.record(start, len(w.key))
	}
	return nil
}

func overwriteBody(r *run, w *worker) error {
	for i := int64(0); w.more(i); i++ {
		if err := w.overwrite(); err != nil {
			return err
		}
	}
	return nil
}

// overwrite writes the next value to a key --distribution picks: one
// write of overwrite, of mixed, or of readwhilewriting's writer.
func (w *worker) overwrite() error {
	putKey(w.key, w.keys.next())
	return w.write()
}

// write sets w.key to the next value, timed as one operation.
func (w *worker) write() error {
	v := w.values.next()
	start := time.Now()
	if err := w.r.eng.Set(w.key, v); err != nil {
		return err
	}
	w.record(start, len(w.key)+len(v))
	w.writes++
	return nil
}

// put sets w.key to the next value untimed, for an operation that times
// more than the write, and returns the bytes it moved.
func (w *worker) put() (int, error) {
	v := w.values.next()
	if err := w.r.eng.Set(w.key, v); err != nil {
		return 0, err
	}
	w.writes++
	return len(w.key) + len(v), nil
}

// pacedWriterBody overwrites like overwriteBody, at most --writer-rate
// times a second when that is set. It paces against an absolute schedule,
// so a late sleep is made up by the writes after it. It closes r.writing
// after its first write.
func pacedWriterBody(r *run, w *worker) error {
	var interval time.Duration
	if r.cfg.WriterRate > 0 {
		interval = time.Second / time.Duration(r.cfg.WriterRate)
	}
	next := time.Now()
	for i := int64(0); w.more(i); i++ {
		if interval > 0 {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(interval)
		}
		if err := w.overwrite(); err != nil {
			return err
		}
		if i == 0 {
			close(r.writing)
		}
	}
	return nil
}

// readBody reads keys chosen by --distribution, each written into the
// key buffer by put: putKey for keys that exist, putMissingKey for their
// never-written twins.
func readBody(put func(dst []byte, i uint64)) func(r *run, w *worker) error {
	return func(r *run, w *worker) error {
		for i := int64(0); w.more(i); i++ {
			put(w.key, w.keys.next())
			if err := w.read(); err != nil {
				return err
			}
		}
		return nil
	}
}

// read gets w.key, timed as one operation.
func (w *worker) read() error {
	start := time.Now()
	n, err := w.get()
	if err != nil {
		return err
	}
	w.record(start, len(w.key)+n)
	return nil
}

// get looks w.key up untimed and checks that a value found has the size
// every workload writes, so a broken adapter or engine cannot pass for
// fast. It returns the value's length.
func (w *worker) get() (int, error) {
	n, found, err := w.r.eng.Get(w.key)
	if err != nil {
		return 0, err
	}
	if found {
		if n != w.r.cfg.ValueSize {
			return 0, fmt.Errorf("key %x: value of %d bytes, want %d", w.key, n, w.r.cfg.ValueSize)
		}
		w.found++
	}
	return n, nil
}

// mixedBody reads or overwrites keys chosen by --distribution, reading
// with probability ReadPercent.
func mixedBody(r *run, w *worker) error {
	for i := int64(0); w.more(i); i++ {
		if w.keys.rng.IntN(100) >= r.cfg.ReadPercent {
			if err := w.overwrite(); err != nil {
				return err
			}
			continue
		}
		putKey(w.key, w.keys.next())
		if err := w.read(); err != nil {
			return err
		}
	}
	return nil
}

// scanBody iterates from one end; with --duration it starts over at the
// other end, otherwise it stops there.
func scanBody(reverse bool) func(r *run, w *worker) error {
	return func(r *run, w *worker) error {
		var i int64
		for w.more(i) {
			start := time.Now()
			it, err := r.eng.NewIter(reverse)
			if err != nil {
				return err
			}
			ok := it.First()
			for ; ok && w.more(i); i++ {
				w.record(start, len(it.Key())+len(it.Value()))
				w.found++
				start = time.Now()
				ok = it.Next()
			}
			if err := it.Close(); err != nil {
				return err
			}
			if i == 0 || r.cfg.Duration == 0 {
				return nil
			}
		}
		return nil
	}
}

// seekRandomBody seeks to a key chosen by --distribution and reads it
// and seekNexts keys after it.
func seekRandomBody(r *run, w *worker) error {
	for i := int64(0); w.more(i); i++ {
		putKey(w.key, w.keys.next())
		if err := w.scan(1 + seekNexts); err != nil {
			return err
		}
	}
	return nil
}

// scan reads up to n keys from the first at or after w.key, through a
// new iterator, timed as one operation; found counts scans that found a
// first key. The latency includes creating the iterator: for an LSM tree
// that is a real part of a short scan's cost.
func (w *worker) scan(n int) error {
	start := time.Now()
	it, err := w.r.eng.NewIter(false)
	if err != nil {
		return err
	}
	bytes := 0
	if it.SeekGE(w.key) {
		w.found++
		bytes += len(it.Key()) + len(it.Value())
		for j := 1; j < n && it.Next(); j++ {
			bytes += len(it.Key()) + len(it.Value())
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	w.record(start, bytes)
	return nil
}

// outcome is what execute measured.
type outcome struct {
	elapsed           time.Duration
	hist              *hdrhistogram.Histogram
	ops, bytes, found int64
	writes, writerOps int64
	// writerElapsed is the writer's own running time, the span its
	// operations were done in.
	writerElapsed time.Duration
}

// prepare sets the operation limit and the key order.
func (r *run) prepare() {
	r.limit = r.def.ops(r.cfg)
	if r.def.order != nil {
		r.order = r.def.order(r.cfg)
		r.limit = min(r.limit, int64(len(r.order)))
	} else if r.cfg.Duration > 0 {
		r.limit = math.MaxInt64
	}
	if r.def.mix != nil {
		r.ycsb = newYCSBRun(r.cfg, r.st, r.def.mix)
	}
}

// execute runs the prepared workload's clients (and writer) to
// completion.
func (r *run) execute() (outcome, error) {
	total := r.limit
	var workers []*worker
	for id := range r.threads {
		n := total / int64(r.threads)
		if int64(id) < total%int64(r.threads) {
			n++
		}
		workers = append(workers, r.newWorker(id, n, &r.stop))
	}
	var writer *worker
	var writerElapsed time.Duration
	writerDone := make(chan error, 1)
	if r.def.writer != nil {
		writer = r.newWorker(r.threads, math.MaxInt64, &r.writerStop)
		r.writing = make(chan struct{})
		go func() {
			began := time.Now()
			err := r.def.writer(r, writer)
			writerElapsed = time.Since(began)
			writerDone <- err
		}()
		// The clients start once the writer has written: on a loaded
		// machine they could otherwise finish before it was scheduled at
		// all, and the row would not be reads while writing.
		select {
		case <-r.writing:
		case err := <-writerDone:
			return outcome{}, fmt.Errorf("writer: %w", err)
		}
	}
	startGate := make(chan struct{})

	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			<-startGate
			errs[i] = r.def.body(r, w)
			w.flush()
		})
	}
	begin := time.Now()
	// The clock starts after the workers exist: building them (slow
	// under -race) must not eat into the measured duration.
	if r.cfg.Duration > 0 {
		t := time.AfterFunc(r.cfg.Duration, func() { r.stop.Store(true) })
		defer t.Stop()
	}
	close(startGate)
	wg.Wait()
	elapsed := time.Since(begin)
	r.writerStop.Store(true)
	var writerErr error
	if writer != nil {
		writerErr = <-writerDone
	}

	var out outcome
	out.elapsed = elapsed
	out.hist = newHistogram()
	for i, w := range workers {
		if errs[i] != nil {
			return out, errs[i]
		}
		out.hist.Merge(w.hist)
		out.ops += w.ops
		out.bytes += w.bytes
		out.found += w.found
		out.writes += w.writes
	}
	if writer != nil {
		if writerErr != nil {
			return out, fmt.Errorf("writer: %w", writerErr)
		}
		out.writerOps = writer.ops
		out.writerElapsed = writerElapsed
		out.writes += writer.writes
	}
	return out, nil
}

// WorkloadHelp describes every workload, one line each, in default order,
// then those that run only when named.
func WorkloadHelp() []string {
	lines := make([]string, len(workloadList))
	for i, w := range workloadList {
		lines[i] = fmt.Sprintf("%-16s %s", w.name, w.doc)
	}
	return lines
}
