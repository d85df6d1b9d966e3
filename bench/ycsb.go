package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// YCSB's core workloads A-F, as operation mixes over "records" (YCSB's
// numbered rows) with YCSB's own key choices. They run only when
// --workloads names them and ignore --distribution.
//
// Records and keys: record k < Num is the k-th key the load wrote, in
// fillrandom's order (the prefill's); record Num+j, the j-th insert,
// takes the never-written twin (putMissingKey) of a key picked by a
// second permutation. So records are spread over the key space as YCSB's
// hashed insert order spreads them, and the records "latest" favours are
// not neighbours sharing blocks: the newest inserts land between loaded
// keys all over the range.

// ycsbMix is the operation mix of one YCSB workload, in percent.
type ycsbMix struct {
	read, update, insert, scan, readModifyWrite int
	// latest chooses records with YCSB's "latest" distribution (the
	// newest favoured); otherwise its scrambled zipfian.
	latest bool
}

// ycsbMaxScan is YCSB's maxscanlength: E's scans read 1 to 100 records,
// uniformly.
const ycsbMaxScan = 100

// ycsbItems is the item count YCSB's scrambled zipfian draws its ranks
// from, whatever the record count: the ranks are then hashed onto the
// records. Drawing from so many items makes the hottest record about half
// as hot as a zipfian over 1M records would (3.8% of draws against 6.5%).
const ycsbItems = 10_000_000_000

// ycsbZipf holds the constants of the rank generator over ycsbItems.
var ycsbZipf = sync.OnceValue(func() *zipf { return newZipf(ycsbItems) })

// fnv64 is YCSB's hash of a rank: 64-bit FNV-1a over its eight bytes,
// low byte first, read as a signed number and made non-negative.
func fnv64(x uint64) uint64 {
	const (
		offset = 0xcbf29ce484222325
		prime  = 0x100000001b3
	)
	h := uint64(offset)
	for range 8 {
		h ^= x & 0xff
		h *= prime
		x >>= 8
	}
	if int64(h) < 0 {
		h = -h
	}
	return h
}

// scrambledZipfian returns a record in [0, n): a zipfian rank over
// ycsbItems, hashed so that the popular records are scattered.
func scrambledZipfian(z *zipf, rng *rand.Rand, n uint64) uint64 {
	return fnv64(z.rank(rng)) % n
}

// latestRecord returns a record in [0, newest]: newest minus a zipfian
// rank, so the newest record is the most popular. z spans the records
// present when the workload began, as YCSB's does; ranks beyond newest
// (only possible if z spans more) read record 0.
func latestRecord(z *zipf, rng *rand.Rand, newest uint64) uint64 {
	return newest - min(z.rank(rng), newest)
}

// ycsbRun is the state one run of a YCSB workload shares across its
// threads: the record-to-key maps and the rank generators.
type ycsbRun struct {
	num uint64
	// load maps records below num to key indexes; slots maps insert j
	// to the index whose missing twin it writes.
	load, slots []uint32
	// zipf draws ranks over ycsbItems; latest over the records present
	// at the start.
	zipf, latest *zipf
	// records is the record count at the start: the scrambled
	// zipfian's range, as YCSB fixes it when the workload starts.
	records uint64
}

// seedInserts is mixed with Config.Seed into the order of insert slots.
const seedInserts = 0x696e7365727473

func newYCSBRun(c *Config, st *dbState, mix *ycsbMix) *ycsbRun {
	num := uint64(c.Num)
	y := &ycsbRun{num: num, load: fullPermutation(c), records: num + uint64(st.inserted.Load())}
	// Records inserted by an earlier workload are read through slots
	// too.
	if mix.insert > 0 || y.records > num {
		y.slots = permutation(num, c.Seed^seedInserts)
	}
	if mix.latest {
		y.latest = newZipf(y.records)
	} else {
		y.zipf = ycsbZipf()
	}
	return y
}

// putRecord writes record rec's key into dst.
func (y *ycsbRun) putRecord(dst []byte, rec uint64) {
	if rec < y.num {
		putKey(dst, uint64(y.load[rec]))
		return
	}
	putMissingKey(dst, uint64(y.slots[rec-y.num]))
}

// choose picks the record of a read, update, scan or read-modify-write.
func (y *ycsbRun) choose(w *worker) uint64 {
	if y.latest != nil {
		return latestRecord(y.latest, w.keys.rng, y.num+uint64(w.r.st.inserted.Load())-1)
	}
	return scrambledZipfian(y.zipf, w.keys.rng, y.records)
}

// ycsbBody runs the workload's mix: each operation drawn by its share,
// its record by the workload's distribution.
func ycsbBody(r *run, w *worker) error {
	m, y := r.def.mix, r.ycsb
	rng := w.keys.rng
	for i := int64(0); w.more(i); i++ {
		var err error
		switch p := rng.IntN(100); {
		case p < m.read:
			y.putRecord(w.key, y.choose(w))
			err = w.read()
		case p < m.read+m.update:
			y.putRecord(w.key, y.choose(w))
			err = w.write()
		case p < m.read+m.update+m.insert:
			err = w.insert(y)
		case p < m.read+m.update+m.insert+m.scan:
			y.putRecord(w.key, y.choose(w))
			err = w.scan(1 + rng.IntN(ycsbMaxScan))
		default:
			y.putRecord(w.key, y.choose(w))
			err = w.readModifyWrite()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// insert writes the next new record. Records are numbered in the order
// threads claim them and become visible to "latest" once written; with
// several threads a read may pick a record claimed but not yet written,
// and then finds nothing (Found says how often).
func (w *worker) insert(y *ycsbRun) error {
	st := w.r.st
	j := uint64(st.claimed.Add(1) - 1)
	if j >= y.num {
		return fmt.Errorf("ycsb: more than --num (%d) inserts into one database", y.num)
	}
	y.putRecord(w.key, y.num+j)
	if err := w.write(); err != nil {
		return err
	}
	st.inserted.Add(1)
	return nil
}

// readModifyWrite reads w.key and writes it back with a new value, timed
// as one operation (YCSB's READ-MODIFY-WRITE).
func (w *worker) readModifyWrite() error {
	start := time.Now()
	n, err := w.get()
	if err != nil {
		return err
	}
	m, err := w.put()
	if err != nil {
		return err
	}
	w.record(start, len(w.key)+n+m)
	return nil
}

// afterYCSB counts the records the workload inserted.
func afterYCSB(st *dbState, _ int64) {
	st.live = st.keySpace + st.inserted.Load()
}

// ycsbWorkloads are YCSB's core workloads; workloadList ends with them.
var ycsbWorkloads = []*workloadDef{
	ycsbDef("a", "50% reads, 50% updates", ycsbMix{read: 50, update: 50}),
	ycsbDef("b", "95% reads, 5% updates", ycsbMix{read: 95, update: 5}),
	ycsbDef("c", "reads only", ycsbMix{read: 100}),
	ycsbDef("d", "95% reads, 5% inserts", ycsbMix{read: 95, insert: 5, latest: true}),
	ycsbDef("e", "95% scans of 1-100 records, 5% inserts", ycsbMix{scan: 95, insert: 5}),
	ycsbDef("f", "50% reads, 50% read-modify-writes", ycsbMix{read: 50, readModifyWrite: 50}),
}

func ycsbDef(letter, doc string, mix ycsbMix) *workloadDef {
	dist := "records by scrambled zipfian"
	if mix.latest {
		dist = "records by latest (the newest favoured)"
	}
	return &workloadDef{
		name:  "ycsb-" + letter,
		doc:   fmt.Sprintf("YCSB %s: %s, %s (only when named; ignores --distribution)", strings.ToUpper(letter), doc, dist),
		named: true, ops: numOps, body: ycsbBody, after: afterYCSB, mix: &mix,
	}
}
