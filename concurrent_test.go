package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestConcurrentBank runs writers, readers, iterators, snapshots and
// manual flushes and compactions at once, with memtables so small that
// background flushes and compactions never stop, and checks a bank
// invariant: money moves between accounts only in atomic batches, so every
// consistent view — a snapshot, an iterator — sees the same total. It is
// meant for -race, which CI runs.
func TestConcurrentBank(t *testing.T) { testConcurrentBank(t, modelTinyOptions()) }

// TestConcurrentBankBlobs is the bank with every balance in a blob file
// (value separation with a 1-byte threshold): concurrent Apply calls write
// blob files, flushes and compactions pass pointers on, garbage
// collection relocates them, and readers resolve them, all at once.
func TestConcurrentBankBlobs(t *testing.T) {
	opts := modelTinyOptions()
	opts.ValueThreshold = 1
	testConcurrentBank(t, opts)
}

func testConcurrentBank(t *testing.T, opts Options) {
	const (
		accounts     = 40
		initial      = 1000
		total        = accounts * initial
		transferors  = 3
		readers      = 3
		maxTransfers = 200000
	)
	duration := 2500 * time.Millisecond
	if testing.Short() {
		duration = 500 * time.Millisecond
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	opts.FS = vfs.NewMem()
	opts.Logger = slog.New(slog.DiscardHandler)
	db := openTestDB(t, "/db", &opts)
	acct := func(i int) []byte { return fmt.Appendf(nil, "acct/%03d", i) }
	bounds := &IterOptions{LowerBound: []byte("acct/"), UpperBound: []byte("acct0")}
	b := db.NewBatch()
	for i := range accounts {
		b.Set(acct(i), strconv.AppendInt(nil, initial, 10))
	}
	if err := db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	initialSnap := db.NewSnapshot()
	initialBalances := make([]int64, accounts)

	// balances is what the writers committed; an account's lock is held
	// from its read to the commit of its new balance, so a transfer's
	// read-modify-write never races another's.
	var (
		locks    [accounts]sync.Mutex
		balances [accounts]int64
	)
	for i := range balances {
		balances[i] = initial
		initialBalances[i] = initial
	}
	parse := func(who string, k, v []byte) int64 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			t.Errorf("%s: %s holds %q", who, k, v)
		}
		return n
	}

	var (
		wg        sync.WaitGroup
		stop      atomic.Bool
		transfers atomic.Int64
		views     atomic.Int64
		churned   atomic.Int64
		manual    atomic.Int64
	)
	deadline := time.Now().Add(duration)
	done := func() bool {
		if stop.Load() || time.Now().After(deadline) || t.Failed() {
			stop.Store(true)
			return true
		}
		return false
	}
	spawn := func(id int, f func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(rand.New(rand.NewPCG(seed, uint64(id))))
		}()
	}

	// Transferors move money between two accounts in one batch, reading
	// the balances back from the DB: every committed write must be visible
	// at once.
	for w := range transferors {
		spawn(w, func(rng *rand.Rand) {
			for !done() && transfers.Load() < maxTransfers {
				a, c := rng.IntN(accounts), rng.IntN(accounts-1)
				if c >= a {
					c++
				}
				lo, hi := min(a, c), max(a, c)
				locks[lo].Lock()
				locks[hi].Lock()
				va, errA := db.Get(acct(a))
				vc, errC := db.Get(acct(c))
				if errA != nil || errC != nil {
					t.Errorf("transfer: Get: %v, %v", errA, errC)
				} else if ba, bc := parse("transfer", acct(a), va), parse("transfer", acct(c), vc); ba != balances[a] || bc != balances[c] {
					t.Errorf("transfer: read %d and %d, but %d and %d were committed", ba, bc, balances[a], balances[c])
				} else {
					amount := int64(rng.IntN(200)) - 100
					b := db.NewBatch()
					b.Set(acct(a), strconv.AppendInt(nil, ba-amount, 10))
					b.Set(acct(c), strconv.AppendInt(nil, bc+amount, 10))
					if err := db.Apply(b, nil); err != nil {
						t.Errorf("transfer: Apply: %v", err)
					} else {
						balances[a], balances[c] = ba-amount, bc+amount
						transfers.Add(1)
					}
				}
				locks[hi].Unlock()
				locks[lo].Unlock()
			}
		})
	}

	// The churner writes unrelated keys with values of every size, some
	// expiring, to keep memtables rotating and tables compacting.
	spawn(100, func(rng *rand.Rand) {
		ks := testutil.KeySpace{N: 2000}
		for i := uint64(0); !done(); i++ {
			b := db.NewBatch()
			for range 1 + rng.IntN(8) {
				k := append([]byte("junk/"), ks.Random(rng)...)
				switch rng.IntN(6) {
				case 0:
					b.Delete(k)
				case 1:
					b.SetWithExpiry(k, testutil.Value(rng, k, i), time.Now().Add(time.Duration(rng.IntN(100))*time.Millisecond))
				default:
					b.Set(k, testutil.Value(rng, k, i))
				}
			}
			if err := db.Apply(b, nil); err != nil {
				t.Errorf("churn: Apply: %v", err)
			}
			churned.Add(1)
		}
	})

	// Readers check the invariant through every consistent view. When
	// gets holds the balances that Gets on the same snapshot returned, the
	// iterator must show exactly those.
	sum := func(who string, it *Iterator, forward bool, pause bool, gets []int64) {
		var n, s int64
		move := it.Prev
		ok := it.Last()
		if forward {
			move, ok = it.Next, it.First()
		}
		for ; ok; ok = move() {
			if !bytes.HasPrefix(it.Key(), []byte("acct/")) {
				continue
			}
			n++
			balance := parse(who, it.Key(), it.Value())
			s += balance
			if i, err := strconv.Atoi(string(it.Key()[len("acct/"):])); gets != nil && (err != nil || i >= len(gets) || gets[i] != balance) {
				t.Errorf("%s: %s = %d, but Get on the same snapshot said %v", who, it.Key(), balance, gets)
			}
			if pause && n == accounts/2 {
				// Let writers, flushes and compactions run while the
				// iterator is half way: its view must not change.
				time.Sleep(time.Millisecond)
			}
		}
		if err := it.Close(); err != nil {
			t.Errorf("%s: iterator: %v", who, err)
		}
		if n != accounts || s != total {
			t.Errorf("%s: %d accounts holding %d, want %d holding %d", who, n, s, accounts, total)
		}
		views.Add(1)
	}
	for r := range readers {
		spawn(200+r, func(rng *rand.Rand) {
			for i := 0; !done(); i++ {
				switch i % 5 {
				case 0:
					s := db.NewSnapshot()
					var got int64
					gets := make([]int64, accounts)
					for a := range accounts {
						v, err := s.Get(acct(a))
						if err != nil {
							t.Errorf("snapshot Get: %v", err)
							continue
						}
						gets[a] = parse("snapshot Get", acct(a), v)
						got += gets[a]
					}
					if got != total {
						t.Errorf("snapshot Gets: total %d, want %d", got, total)
					}
					views.Add(1)
					it, err := s.NewIter(bounds)
					if err != nil {
						t.Errorf("snapshot NewIter: %v", err)
					} else {
						sum("snapshot iterator", it, rng.IntN(2) == 0, true, gets)
					}
					if err := s.Close(); err != nil {
						t.Errorf("snapshot Close: %v", err)
					}
				case 1:
					it, err := db.NewIter(bounds)
					if err != nil {
						t.Errorf("NewIter: %v", err)
					} else {
						sum("bounded iterator", it, rng.IntN(2) == 0, true, nil)
					}
				case 2:
					// Unbounded, so the merge crosses the churned keys.
					it, err := db.NewIter(nil)
					if err != nil {
						t.Errorf("NewIter: %v", err)
					} else {
						sum("full iterator", it, rng.IntN(2) == 0, false, nil)
					}
				case 3:
					// The snapshot taken before any transfer keeps every
					// initial balance, however much was compacted since.
					it, err := initialSnap.NewIter(bounds)
					if err != nil {
						t.Errorf("initial snapshot NewIter: %v", err)
					} else {
						sum("initial snapshot iterator", it, rng.IntN(2) == 0, false, initialBalances)
					}
				case 4:
					for range 20 {
						k := append([]byte("junk/"), testutil.KeySpace{N: 2000}.Random(rng)...)
						if _, err := db.Get(k); err != nil && !errors.Is(err, ErrNotFound) {
							t.Errorf("Get(%q): %v", k, err)
						}
					}
				}
			}
		})
	}

	// Manual flushes and compactions race the background ones.
	spawn(300, func(rng *rand.Rand) {
		ks := testutil.KeySpace{N: 2000}
		// At least one Flush and one Compact run, however late a loaded
		// machine schedules this goroutine: the test demands both.
		for i := 0; i < 2 || !done(); i++ {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			var err error
			if i%2 == 0 {
				err = db.Flush()
			} else {
				start, end := ks.Bound(rng, 30), ks.Bound(rng, 30)
				if start != nil && end != nil && bytes.Compare(start, end) > 0 {
					start, end = end, start
				}
				err = db.Compact(start, end)
			}
			if err != nil {
				t.Errorf("maintenance %d: %v", i, err)
			}
			_ = db.Metrics().String()
			manual.Add(1)
		}
	})

	wg.Wait()
	if err := initialSnap.Close(); err != nil {
		t.Error(err)
	}
	m := db.Metrics()
	t.Logf("%d transfers, %d churn batches, %d consistent views checked, %d manual flushes/compactions",
		transfers.Load(), churned.Load(), views.Load(), manual.Load())
	t.Logf("metrics:\n%s", m)
	if m.Flush.Count == 0 || m.Compaction.Count+m.Compaction.Moves == 0 {
		t.Errorf("no background work ran: %d flushes, %d compactions", m.Flush.Count, m.Compaction.Count)
	}

	check := func(db *DB, when string) {
		for i := range accounts {
			v, err := db.Get(acct(i))
			if err != nil {
				t.Fatalf("%s: Get(%s): %v", when, acct(i), err)
			}
			if got := parse(when, acct(i), v); got != balances[i] {
				t.Fatalf("%s: %s = %d, want %d", when, acct(i), got, balances[i])
			}
		}
	}
	check(db, "after the workload")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "/db", &opts)
	check(db, "after reopen")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMemtableReadsDuringInserts checks memtable reads against one writer,
// the way the commit pipeline uses it: a Get at a published sequence number
// returns exactly the newest version below it, and SeekGE never lands
// before its key, even while inserts link nodes next to where the read
// is looking. (Get once returned a newer version inserted right after the
// predecessor it had found.)
func TestMemtableReadsDuringInserts(t *testing.T) {
	const keys = 4
	total := 300000
	if raceEnabled {
		total = 20000
	}
	mt := memtable.New(64 << 20)
	type version struct {
		key int
		val uint64
	}
	// versions[seq] is written before the seq is published, so readers
	// compute the expected answer from it.
	versions := make([]version, total+1)
	var published atomic.Uint64
	published.Store(1)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%d", i) }
	var (
		wg   sync.WaitGroup
		stop atomic.Bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop.Store(true)
		rng := rand.New(rand.NewPCG(1, 2))
		for seq := uint64(1); seq <= uint64(total) && !stop.Load(); seq++ {
			versions[seq] = version{rng.IntN(keys), rng.Uint64()}
			v := versions[seq]
			if err := mt.Add(base.MakeInternalKey(key(v.key), base.SeqNum(seq), base.KindSet), strconv.AppendUint(nil, v.val, 10)); err != nil {
				t.Error(err)
				return
			}
			published.Store(seq + 1)
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			it := mt.NewIter()
			for !stop.Load() {
				readSeq := published.Load()
				k := rng.IntN(keys)
				var want *version
				for s := readSeq - 1; s >= 1 && s+64 > readSeq; s-- {
					if versions[s].key == k {
						want = &versions[s]
						break
					}
				}
				v, _, found := mt.Get(key(k), base.SeqNum(readSeq))
				if want != nil && (!found || string(v) != strconv.FormatUint(want.val, 10)) {
					t.Errorf("Get(%s) at seq %d = %q, %v; want %d", key(k), readSeq, v, found, want.val)
					stop.Store(true)
				}
				if it.SeekGE(key(k)) && bytes.Compare(it.Key().UserKey, key(k)) < 0 {
					t.Errorf("SeekGE(%s) landed on %s", key(k), it.Key())
					stop.Store(true)
				}
			}
			it.Close()
		}()
	}
	wg.Wait()
}

// TestReadRacingFlushAndCompaction makes a flush and a compaction complete
// while NewIter is being set up — from the clock hook, which NewIter
// consults between choosing its sequence number and pinning the files it
// reads. The iterator must still show the key, either version: an
// iterator once read at a sequence number taken before it pinned the
// files, so the compaction had dropped the old version it needed.
func TestReadRacingFlushAndCompaction(t *testing.T) {
	var db *DB
	var armed atomic.Bool
	opts := Options{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)}
	opts.Now = func() time.Time {
		if armed.CompareAndSwap(true, false) {
			if err := db.Set([]byte("k"), []byte("new"), nil); err != nil {
				t.Error(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Error(err)
			}
		}
		return time.Unix(1000, 0)
	}
	var err error
	db = openTestDB(t, "/db", &opts)
	if err := db.Set([]byte("k"), []byte("old"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() || string(it.Key()) != "k" {
		t.Errorf("iterator created while a write, flush and compaction completed does not see k (valid %v, err %v)", it.Valid(), it.Error())
	} else {
		t.Logf("k = %q", it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
