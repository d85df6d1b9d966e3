package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// memEngine is an in-memory Engine: a model to check the workloads'
// bookkeeping against, without any real engine's noise.
type memEngine struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (e *memEngine) Set(k, v []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[string(k)] = bytes.Clone(v)
	return nil
}

func (e *memEngine) Get(k []byte) (int, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[string(k)]
	return len(v), ok, nil
}

func (e *memEngine) Delete(k []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, string(k))
	return nil
}

func (e *memEngine) NewIter(reverse bool) (Iter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]string, 0, len(e.m))
	for k := range e.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if reverse {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = e.m[k]
	}
	return &memIter{keys: keys, vals: vals, pos: -1}, nil
}

func (e *memEngine) Close() error { return nil }

type memIter struct {
	keys []string
	vals [][]byte
	pos  int
}

func (i *memIter) First() bool { i.pos = 0; return i.pos < len(i.keys) }
func (i *memIter) Next() bool  { i.pos++; return i.pos < len(i.keys) }
func (i *memIter) SeekGE(k []byte) bool {
	i.pos = sort.SearchStrings(i.keys, string(k))
	return i.pos < len(i.keys)
}
func (i *memIter) Key() []byte   { return []byte(i.keys[i.pos]) }
func (i *memIter) Value() []byte { return i.vals[i.pos] }
func (i *memIter) Close() error  { return nil }

// memStore keeps the model's data across reopen, as a real engine's
// directory would; a marker file in the directory tells whether the child
// removed it (a fresh open) since.
type memStore struct{ engines map[string]*memEngine }

func (s *memStore) spec() engineSpec {
	return engineSpec{
		name: "mem",
		open: func(dir string, cfg EngineConfig) (Engine, error) {
			marker := filepath.Join(dir, "MEM")
			e, ok := s.engines[dir]
			if _, err := os.Stat(marker); !ok || err != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, err
				}
				if err := os.WriteFile(marker, nil, 0o644); err != nil {
					return nil, err
				}
				e = &memEngine{m: map[string][]byte{}}
				s.engines[dir] = e
			}
			return e, nil
		},
	}
}

func newTestChild(t *testing.T, cfg Config) (*child, *memStore) {
	store := &memStore{engines: map[string]*memEngine{}}
	dir := filepath.Join(t.TempDir(), "db")
	ch := &child{
		job:  childJob{Engine: "mem", Dir: dir, Config: cfg},
		spec: store.spec(),
		cfg:  &cfg,
		out:  &eventWriter{out: io.Discard},
		st:   &dbState{keySpace: cfg.Num},
		pool: valuePool(cfg.Seed, cfg.Compressibility, cfg.ValueSize),
	}
	if cfg.Distribution != Uniform {
		ch.zipf = newZipf(uint64(cfg.Num))
	}
	return ch, store
}

func TestWorkloadsAgainstModel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 3000
	cfg.Threads = 3
	for _, name := range WorkloadNames() {
		cfg.Workloads = append(cfg.Workloads, WorkloadSpec{Name: name})
	}
	ch, store := newTestChild(t, cfg)
	n := cfg.Num
	model := func() *memEngine { return store.engines[ch.job.Dir] }
	for step, w := range cfg.Workloads {
		r := ch.runWorkload(step, w)
		if r.Error != "" {
			t.Fatalf("%s: %s", w.Name, r.Error)
		}
		if r.Threads != 3 || r.P99Ns <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s: %+v", w.Name, r)
		}
		entries := int64(len(model().m))
		switch w.Name {
		case "fillseq", "fillrandom", "overwrite", "mixed":
			if entries != n || r.Ops != n || r.LiveBytes != n*int64(cfg.KeySize+cfg.ValueSize) {
				t.Errorf("%s: %d ops, %d keys in the DB, live %d B; want %d keys", w.Name, r.Ops, entries, r.LiveBytes, n)
			}
		case "readrandom", "seekrandom":
			if r.Found != n {
				t.Errorf("%s: found %d of %d", w.Name, r.Found, n)
			}
		case "readmissing":
			if r.Found != 0 {
				t.Errorf("readmissing found %d", r.Found)
			}
		case "readseq", "readreverse":
			if r.Found != n || r.Ops != n {
				t.Errorf("%s: visited %d, %d ops", w.Name, r.Found, r.Ops)
			}
		case "readwhilewriting":
			if r.Found != n || r.WriterOpsPerSec <= 0 {
				t.Errorf("readwhilewriting: found %d, writer %f/s", r.Found, r.WriterOpsPerSec)
			}
		case "deleterandom":
			if entries != 0 || r.LiveBytes != 0 {
				t.Errorf("deleterandom left %d keys (live %d B)", entries, r.LiveBytes)
			}
		case "fillsync":
			if !ch.st.sync || entries != n/fillSyncDivisor {
				t.Errorf("fillsync: sync %t, %d keys", ch.st.sync, entries)
			}
		}
		if r.Prefilled {
			t.Errorf("%s: prefilled although the previous workload left every key", w.Name)
		}
	}
	// fillsync left a partial DB opened with sync: the next read workload
	// must start from a full, unsynced one.
	r := ch.runWorkload(len(cfg.Workloads), WorkloadSpec{Name: "readrandom"})
	if !r.Prefilled || r.Found != n || ch.st.sync {
		t.Errorf("readrandom after fillsync: prefilled %t, found %d, sync %t", r.Prefilled, r.Found, ch.st.sync)
	}
}

func TestDurationBoundsWorkloads(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 2000
	cfg.Duration = 50 * time.Millisecond
	cfg.Workloads = []WorkloadSpec{{Name: "fillrandom"}, {Name: "readrandom", Threads: 2}, {Name: "readseq"}}
	cfg.ProfileDir = t.TempDir()
	ch, _ := newTestChild(t, cfg)
	for step, w := range cfg.Workloads {
		r := ch.runWorkload(step, w)
		if r.Error != "" {
			t.Fatalf("%s: %s", w.Name, r.Error)
		}
		// Generous: descheduling under -race on a loaded machine can
		// stretch a 50ms run many times over, while a stop that ignored
		// the duration would leave readrandom and readseq running forever.
		if r.Seconds > 10 {
			t.Errorf("%s ran %.1fs under a 50ms duration", w.Name, r.Seconds)
		}
		if w.Name == "fillrandom" && r.Ops > cfg.Num {
			t.Errorf("fillrandom wrote %d keys of a %d-key space", r.Ops, cfg.Num)
		}
		for _, suffix := range []string{".cpu.pprof", ".allocs.pprof", ".allocs-base.pprof"} {
			path := filepath.Join(cfg.ProfileDir, fmt.Sprintf("mem-%02d-%s%s", step, w.Name, suffix))
			if st, err := os.Stat(path); err != nil || st.Size() == 0 {
				t.Errorf("profile %s: %v", path, err)
			}
		}
		if w.Name == "readrandom" && r.Seconds < 0.045 {
			t.Errorf("readrandom stopped after %d ops in %.3fs: before its duration", r.Ops, r.Seconds)
		}
	}
}

func TestWriterRateCapsTheWriter(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Num = 1000
	cfg.Duration = 200 * time.Millisecond
	cfg.WriterRate = 500
	cfg.Workloads = []WorkloadSpec{{Name: "readwhilewriting"}}
	ch, _ := newTestChild(t, cfg)
	r := ch.runWorkload(0, cfg.Workloads[0])
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	// The schedule is absolute, so over its running time T the writer
	// does at most 1+500T writes whatever the scheduler does; T is at
	// least the 0.2s the readers ran, so the rate is at most 500+1/0.2.
	if limit := 500 + 1/cfg.Duration.Seconds(); r.WriterOpsPerSec > limit+1e-6 {
		t.Errorf("writer ran at %.1f/s under a 500/s cap: above %.1f/s", r.WriterOpsPerSec, limit)
	}
	// Falling behind takes a starved writer (it catches up as soon as it
	// runs), so only a pacer that sleeps far too long falls below a
	// fifth of the rate.
	if r.WriterOpsPerSec < 100 {
		t.Errorf("writer ran at %.1f/s under a 500/s cap: a fifth of it or less", r.WriterOpsPerSec)
	}
}
