package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// The corruption tests build one small DB through the engine and save its
// files. Each case then rebuilds the directory on a fresh MemFS with one
// file damaged, runs Check, opens the DB, reads every key with Get and with
// full scans in both directions, and judges every answer against the
// fixture's known history.

const corruptDir = "/db"

// corruptSeed fixes the fixture's values; failure messages print it.
const corruptSeed = 20240607

// corruptNow is the fixture's clock, so expiring keys are deterministic.
var corruptNow = time.Unix(1_700_000_000, 0)

// corruptOp is one write of the fixture.
type corruptOp struct {
	kind     base.Kind
	key      string
	value    string
	expireAt time.Time
}

// corruptBatch is one Apply of the fixture, with the seqnum its first
// write got.
type corruptBatch struct {
	seq base.SeqNum
	ops []corruptOp
}

// corruptFixture is the pristine DB: its files and the history that made it.
type corruptFixture struct {
	files   map[string][]byte // base name -> contents
	batches []corruptBatch
	// keys is every key ever written plus a few never written, sorted.
	keys []string
	// walRecords maps each WAL's name to its records' [start, end) offsets
	// and first seqnums.
	walRecords map[string][]walRecordSpan
	pristine   map[string]string
}

type walRecordSpan struct {
	start, end int64
	seq        base.SeqNum
}

func corruptOptions(fs vfs.FS) *Options {
	return &Options{
		FS: fs,
		// Not SyncAlways: the WAL then ends at its last record instead of
		// in zeros written ahead, and the cases can flip every byte of a
		// small file. TestCorruptionZeroedWALTail covers the zeros.
		Sync:                  SyncNone,
		MemTableSize:          64 << 10,
		L0CompactionThreshold: 4,
		TargetFileSize:        1 << 10,
		BlockSize:             256,
		Now:                   func() time.Time { return corruptNow },
		Logger:                slog.New(slog.DiscardHandler),
	}
}

// buildCorruptFixture writes a DB with tables in L0 and the bottom level,
// a manifest with a snapshot and several edits, and a WAL with several
// batches, each file a few KB at most so that every byte can be damaged.
func buildCorruptFixture(t testing.TB) *corruptFixture {
	t.Helper()
	fs := vfs.NewMem()
	db := openTestDB(t, corruptDir, corruptOptions(fs))
	rng := rand.New(rand.NewPCG(corruptSeed, 0))
	fx := &corruptFixture{files: map[string][]byte{}, walRecords: map[string][]walRecordSpan{}}
	nextSeq := base.SeqNum(1)
	keySet := map[string]bool{}
	apply := func(ops ...corruptOp) {
		t.Helper()
		b := db.NewBatch()
		for _, o := range ops {
			switch o.kind {
			case base.KindSet:
				b.Set([]byte(o.key), []byte(o.value))
			case base.KindSetExpiry:
				b.SetWithExpiry([]byte(o.key), []byte(o.value), o.expireAt)
			case base.KindDelete:
				b.Delete([]byte(o.key))
			}
			keySet[o.key] = true
		}
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		fx.batches = append(fx.batches, corruptBatch{seq: nextSeq, ops: ops})
		nextSeq += base.SeqNum(len(ops))
	}
	value := func() string {
		v := make([]byte, 4+rng.IntN(24))
		for i := range v {
			v[i] = byte('a' + rng.IntN(26))
		}
		return string(v)
	}
	key := func(i int) string { return fmt.Sprintf("key%03d", i) }
	set := func(i int) corruptOp { return corruptOp{kind: base.KindSet, key: key(i), value: value()} }
	del := func(i int) corruptOp { return corruptOp{kind: base.KindDelete, key: key(i)} }
	setEx := func(i int, d time.Duration) corruptOp {
		return corruptOp{kind: base.KindSetExpiry, key: key(i), value: value(), expireAt: corruptNow.Add(d)}
	}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Two flushed generations, compacted into several bottom-level tables.
	for i := 0; i < 40; i += 2 {
		apply(set(i), set(i+1))
	}
	step("flush", db.Flush())
	for i := 0; i < 40; i += 5 {
		apply(set(i), del(i+1))
	}
	apply(setEx(3, -time.Minute))
	step("flush", db.Flush())
	step("compact", db.Compact(nil, nil))
	// One L0 table over part of the range, shadowing the bottom level.
	for i := 10; i < 20; i++ {
		apply(set(i))
	}
	apply(setEx(12, time.Hour))
	step("flush", db.Flush())
	// Batches left in the WAL.
	apply(set(41), set(42), set(43))
	apply(del(14))
	apply(set(15))
	apply(setEx(44, time.Hour))
	apply(set(16), del(17))
	step("close", db.Close())
	// The cases judge the WAL's end as after a crash.
	dropCloseMarker(t, fs, corruptDir)

	for k := range keySet {
		fx.keys = append(fx.keys, k)
	}
	fx.keys = append(fx.keys, "", "key", "key0405", "zzz")
	slices.Sort(fx.keys)
	fx.pristine = fx.stateBefore(base.SeqNumMax)

	names, err := fs.List(corruptDir)
	step("list", err)
	for _, name := range names {
		data := readAllFile(t, fs, fs.PathJoin(corruptDir, name))
		fx.files[name] = data
		if typ, _, ok := base.ParseFilename(name); ok && typ == base.FileTypeLog {
			fx.walRecords[name] = fx.walRecordSpans(t, name, data)
		}
	}
	for _, typ := range []base.FileType{base.FileTypeLog, base.FileTypeTable, base.FileTypeManifest} {
		if len(fx.filesOfType(typ)) == 0 {
			t.Fatalf("fixture has no %s file: %s", fileTypeName(typ), fx.describe())
		}
	}
	return fx
}

func readAllFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// walRecordSpans returns where each record of a pristine WAL lies, and
// checks that each is one of the fixture's batches. The WAL is smaller
// than a block, so every record is one fragment and records are adjacent.
func (fx *corruptFixture) walRecordSpans(t testing.TB, name string, data []byte) []walRecordSpan {
	t.Helper()
	if len(data) >= record.BlockSize {
		t.Fatalf("fixture WAL %s is %d bytes; the cases assume less than one block", name, len(data))
	}
	r := record.NewReader(bytes.NewReader(data), name)
	var spans []walRecordSpan
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("pristine WAL %s: %v", name, err)
		}
		seq := batchrepr.Seq(rec)
		if !slices.ContainsFunc(fx.batches, func(b corruptBatch) bool { return b.seq == seq }) {
			t.Fatalf("pristine WAL %s: record with seqnum %d is none of the fixture's batches", name, seq)
		}
		spans = append(spans, walRecordSpan{start: r.Offset(), end: r.Offset() + record.HeaderSize + int64(len(rec)), seq: seq})
	}
	if len(spans) < 2 || spans[len(spans)-1].end != int64(len(data)) {
		t.Fatalf("pristine WAL %s: records %v do not tile its %d bytes", name, spans, len(data))
	}
	return spans
}

// stateBefore is what a reader sees after every batch whose seqnum is
// below seq, at corruptNow.
func (fx *corruptFixture) stateBefore(seq base.SeqNum) map[string]string {
	type entry struct {
		value    string
		expireAt time.Time
	}
	m := map[string]entry{}
	for _, b := range fx.batches {
		if b.seq >= seq {
			break
		}
		for _, o := range b.ops {
			if o.kind == base.KindDelete {
				delete(m, o.key)
			} else {
				m[o.key] = entry{o.value, o.expireAt}
			}
		}
	}
	out := map[string]string{}
	for k, e := range m {
		if e.expireAt.IsZero() || e.expireAt.After(corruptNow) {
			out[k] = e.value
		}
	}
	return out
}

// fsWith rebuilds the fixture's directory on a fresh MemFS with file name
// holding data instead, or absent when data is nil.
func (fx *corruptFixture) fsWith(name string, data []byte) (*vfs.MemFS, error) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll(corruptDir, 0o755); err != nil {
		return nil, err
	}
	for n, contents := range fx.files {
		if n == name {
			if data == nil {
				continue
			}
			contents = data
		}
		f, err := fs.Create(fs.PathJoin(corruptDir, n))
		if err != nil {
			return nil, err
		}
		_, err = f.Write(contents)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// filesOfType returns the fixture's file names of one type, sorted.
func (fx *corruptFixture) filesOfType(typ base.FileType) []string {
	var out []string
	for name := range fx.files {
		if t, _, ok := base.ParseFilename(name); ok && t == typ {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// describe lists the fixture's files and sizes.
func (fx *corruptFixture) describe() string {
	var names []string
	for name := range fx.files {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s (%d B) ", name, len(fx.files[name]))
	}
	return b.String()
}

func fileTypeName(t base.FileType) string {
	switch t {
	case base.FileTypeLog:
		return "WAL"
	case base.FileTypeTable:
		return "table"
	case base.FileTypeManifest:
		return "MANIFEST"
	case base.FileTypeCurrent:
		return "CURRENT"
	}
	return fmt.Sprintf("type %d", t)
}

func corruptPath(name string) string { return corruptDir + "/" + name }

// corruptCase is one damaged variant of the fixture and what must come of
// it: either a clean open at a known state, or corruption errors that name
// one of the blamed files.
type corruptCase struct {
	what string
	file string // base name of the damaged file
	data []byte // its new contents; nil removes it
	// clean, when set, is the state the DB must read as after opening
	// without any error; Check must then report no problem, and warn of a
	// torn tail at or before warnAt when warnAt >= 0.
	clean  map[string]string
	warnAt int64
	// blame lists the paths a corruption error may name, and maxOff the
	// largest offset it may give (-1: any); used when clean is nil, or
	// with dropped.
	blame  []string
	maxOff int64
	// dropped marks damage in the newest WAL followed by intact records:
	// Open must recover clean, the records before the damaged one, but
	// Check must report it as a problem naming blame, and Open with
	// StrictWALRecovery must refuse with a corruption error naming it.
	dropped bool
}

// outcome tallies.
const (
	outcomeCorrupt = iota
	outcomeTorn
	outcomeClean
	outcomeDropped
)

// runCorruptCases runs cases on a few goroutines and reports failures; it
// returns how many cases ended in each outcome.
func runCorruptCases(t *testing.T, fx *corruptFixture, cases []corruptCase) (tally [4]int) {
	t.Helper()
	var (
		mu       sync.Mutex
		failures []string
		failed   atomic.Bool
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	workers := min(4, runtime.GOMAXPROCS(0))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(cases) {
					return
				}
				outcome, errs := fx.judge(&cases[i])
				mu.Lock()
				if len(errs) > 0 {
					failed.Store(true)
					failures = append(failures, fmt.Sprintf("seed %d: %s:\n\t%s", corruptSeed, cases[i].what, strings.Join(errs, "\n\t")))
				} else {
					tally[outcome]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(failures)
	for _, f := range failures[:min(len(failures), 5)] {
		t.Error(f)
	}
	return tally
}

// judge runs one case and returns its outcome and every way it failed.
func (fx *corruptFixture) judge(c *corruptCase) (outcome int, failures []string) {
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	fs, err := fx.fsWith(c.file, c.data)
	if err != nil {
		fail("building the directory: %v", err)
		return 0, failures
	}
	report, err := Check(corruptDir, &Options{FS: fs})
	if err != nil {
		fail("Check: %v", err)
		return 0, failures
	}
	want := c.clean
	if want == nil {
		want = fx.pristine
	}
	r := fx.readAll(fs, want)
	failures = append(failures, r.wrong...)

	if c.dropped {
		if errs := r.errs(); len(errs) > 0 {
			fail("must recover the records before the damage, got %v", errs)
		}
		if !slices.ContainsFunc(report.Problems, func(err error) bool {
			return namesAny(err, c.blame, c.maxOff) && strings.Contains(err.Error(), "Open recovers the records before offset")
		}) {
			fail("Check reports no problem naming %v at or before offset %d that says Open recovers: %v", c.blame, c.maxOff, report.Problems)
		}
		if after, err := Check(corruptDir, &Options{FS: fs}); err != nil || !after.OK() || len(after.Warnings) > 0 {
			fail("Check after recovery: %v, problems %v, warnings %v", err, after.Problems, after.Warnings)
		}
		strictFS, err := fx.fsWith(c.file, c.data)
		if err != nil {
			fail("building the directory: %v", err)
			return 0, failures
		}
		opts := corruptOptions(strictFS)
		opts.StrictWALRecovery = true
		db, err := Open(corruptDir, opts)
		if err == nil {
			db.Close()
		}
		if !namesAny(err, c.blame, c.maxOff) {
			fail("Open with StrictWALRecovery = %v, want a corruption error naming %v at or before offset %d", err, c.blame, c.maxOff)
		}
		return outcomeDropped, failures
	}
	if c.clean != nil {
		if errs := r.errs(); len(errs) > 0 {
			fail("must open and read cleanly, got %v", errs)
		}
		if !report.OK() {
			fail("Check reports problems: %v", report.Problems)
		}
		switch {
		case c.warnAt >= 0 && !anyNamesFile(report.Warnings, corruptPath(c.file), c.warnAt):
			fail("Check does not warn of a torn tail of %s at or before %d: warnings %v", c.file, c.warnAt, report.Warnings)
		case c.warnAt < 0 && len(report.Warnings) > 0:
			fail("Check warns needlessly: %v", report.Warnings)
		}
		// Open repaired what it found: the DB must now check clean.
		if after, err := Check(corruptDir, &Options{FS: fs}); err != nil || !after.OK() || len(after.Warnings) > 0 {
			fail("Check after recovery: %v, problems %v, warnings %v", err, after.Problems, after.Warnings)
		}
		if c.warnAt >= 0 {
			return outcomeTorn, failures
		}
		return outcomeClean, failures
	}

	if !slices.ContainsFunc(r.errs(), func(err error) bool { return namesAny(err, c.blame, c.maxOff) }) {
		fail("no corruption error names %v at or before offset %d: open %v, reads %v", c.blame, c.maxOff, r.openErr, r.readErrs)
	}
	if !slices.ContainsFunc(report.Problems, func(err error) bool { return namesAny(err, c.blame, c.maxOff) }) {
		fail("Check reports no problem naming %v at or before offset %d: problems %v", c.blame, c.maxOff, report.Problems)
	}
	return outcomeCorrupt, failures
}

// namesAny reports whether err is a *CorruptionError naming one of paths,
// at an offset no later than maxOff when it gives one (maxOff < 0: any).
func namesAny(err error, paths []string, maxOff int64) bool {
	var ce *CorruptionError
	if !errors.As(err, &ce) || !slices.Contains(paths, ce.File) {
		return false
	}
	return maxOff < 0 || ce.Offset <= maxOff
}

func anyNamesFile(errs []error, path string, maxOff int64) bool {
	return slices.ContainsFunc(errs, func(err error) bool { return namesAny(err, []string{path}, maxOff) })
}

// readBack is what opening and reading a damaged DB gave.
type readBack struct {
	openErr  error
	readErrs []error
	// wrong lists every answer that was neither right nor an error, and
	// every error that was not a corruption error.
	wrong []string
}

func (r *readBack) errs() []error {
	if r.openErr != nil {
		return []error{r.openErr}
	}
	return r.readErrs
}

// readAll opens fs's DB, Gets every key, scans forward and backward, and
// closes it, judging each answer against want: a value or a not-found
// must be right; an error must be a corruption error. A scan cut short by
// an error must have returned a correct run of entries before it.
func (fx *corruptFixture) readAll(fs vfs.FS, want map[string]string) *readBack {
	r := &readBack{}
	noteErr := func(what string, err error) {
		if !errors.Is(err, ErrCorruption) {
			r.wrong = append(r.wrong, fmt.Sprintf("%s: error is not corruption: %v", what, err))
		}
		r.readErrs = append(r.readErrs, err)
	}
	db, err := Open(corruptDir, corruptOptions(fs))
	if err != nil {
		r.openErr = err
		if !errors.Is(err, ErrCorruption) {
			r.wrong = append(r.wrong, fmt.Sprintf("Open: error is not corruption: %v", err))
		}
		return r
	}
	for _, k := range fx.keys {
		v, err := db.Get([]byte(k))
		w, ok := want[k]
		switch {
		case err == nil:
			if !ok || w != string(v) {
				r.wrong = append(r.wrong, fmt.Sprintf("Get(%q) = %q, want %q (present %v)", k, v, w, ok))
			}
		case errors.Is(err, ErrNotFound):
			if ok {
				r.wrong = append(r.wrong, fmt.Sprintf("Get(%q) = not found, want %q", k, w))
			}
		default:
			noteErr(fmt.Sprintf("Get(%q)", k), err)
		}
	}
	wantSorted := make([][2]string, 0, len(want))
	for k, v := range want {
		wantSorted = append(wantSorted, [2]string{k, v})
	}
	slices.SortFunc(wantSorted, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, forward := range []bool{true, false} {
		it, err := db.NewIter(nil)
		if err != nil {
			noteErr("NewIter", err)
			continue
		}
		var got [][2]string
		if forward {
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, [2]string{string(it.Key()), string(it.Value())})
			}
		} else {
			for ok := it.Last(); ok; ok = it.Prev() {
				got = append(got, [2]string{string(it.Key()), string(it.Value())})
			}
			slices.Reverse(got)
		}
		ierr := it.Error()
		if cerr := it.Close(); ierr == nil {
			ierr = cerr
		}
		ref := wantSorted
		if ierr != nil {
			noteErr("iteration", ierr)
			// Only a run from the scan's starting end was returned.
			n := min(len(got), len(ref))
			if forward {
				ref = ref[:n]
			} else {
				ref = ref[len(ref)-n:]
			}
		}
		if !slices.Equal(got, ref) {
			r.wrong = append(r.wrong, fmt.Sprintf("scan (forward %v, error %v) returned %q, want %q", forward, ierr, got, ref))
		}
	}
	if err := db.Close(); err != nil {
		noteErr("Close", err)
	}
	return r
}

// flipByte returns a copy of data with one bit of the byte at pos
// inverted; which bit varies with pos so every bit lane is exercised.
func flipByte(data []byte, pos int) []byte { return xorByte(data, pos, 1<<(pos%8)) }

// xorByte returns a copy of data with the byte at pos XORed with mask.
func xorByte(data []byte, pos int, mask byte) []byte {
	d := bytes.Clone(data)
	d[pos] ^= mask
	return d
}

// walPrefixCase is the case of a WAL whose bytes from off on are damaged
// or gone: the records wholly before off survive, the rest are lost, and
// a tail that does not end exactly at a record boundary is torn.
func (fx *corruptFixture) walPrefixCase(what, name string, data []byte, off int64) corruptCase {
	spans := fx.walRecords[name]
	i := 0
	for i < len(spans) && spans[i].end <= off {
		i++
	}
	c := corruptCase{what: what, file: name, data: data, warnAt: -1}
	if i == len(spans) {
		c.clean = fx.pristine
		return c
	}
	c.clean = fx.stateBefore(spans[i].seq)
	if off > spans[i].start || int64(len(data)) > off {
		c.warnAt = spans[i].start
	}
	return c
}

// flipCases damages every byte of every WAL, table and manifest, one at a
// time (every flipTableStrideShort-th table byte under -short). A flip in the WAL's last record is a torn tail; anywhere else it
// is corruption of the file flipped.
func (fx *corruptFixture) flipCases() map[base.FileType][]corruptCase {
	out := map[base.FileType][]corruptCase{}
	for _, typ := range []base.FileType{base.FileTypeLog, base.FileTypeTable, base.FileTypeManifest} {
		stride := 1
		if typ == base.FileTypeTable && testing.Short() {
			stride = flipTableStrideShort
		}
		for _, name := range fx.filesOfType(typ) {
			for pos := 0; pos < len(fx.files[name]); pos += stride {
				out[typ] = append(out[typ], fx.xorCase(name, pos, 1<<(pos%8)))
			}
		}
	}
	return out
}

// flipTableStrideShort is the step between the table bytes flipped under
// -short. Every table byte is under a block's CRC and all of them fail
// the same way, so a sample still damages every block, the footer and
// every bit position (7 is coprime with the 8 bits the mask cycles
// through) at a seventh of the cost: the table flips were 85% of the
// test. WAL and MANIFEST bytes, whose damage has position-dependent
// outcomes (torn tail, recovery up to the record), are all flipped.
const flipTableStrideShort = 7

// xorCase damages one byte of a WAL, table or manifest. Every stored byte
// of those files is under a CRC-32C, which catches any change confined to
// one byte. In the fixture's WAL, the newest, damage in the last record is
// a torn tail, and damage in an earlier record makes Open recover exactly
// the records before that one.
func (fx *corruptFixture) xorCase(name string, pos int, mask byte) corruptCase {
	what := fmt.Sprintf("%s with byte %d XORed with %#02x", name, pos, mask)
	damaged := xorByte(fx.files[name], pos, mask)
	spans := fx.walRecords[name]
	switch {
	case spans != nil && int64(pos) >= spans[len(spans)-1].start:
		return fx.walPrefixCase(what, name, damaged, int64(pos))
	case spans != nil:
		i := 0
		for spans[i].end <= int64(pos) {
			i++
		}
		return corruptCase{what: what, file: name, data: damaged, clean: fx.stateBefore(spans[i].seq), warnAt: -1,
			dropped: true, blame: []string{corruptPath(name)}, maxOff: int64(pos)}
	}
	return corruptCase{what: what, file: name, data: damaged, blame: []string{corruptPath(name)}, maxOff: int64(pos)}
}

func TestCorruptionFlipBytes(t *testing.T) {
	start := time.Now()
	fx := buildCorruptFixture(t)
	t.Logf("seed %d; fixture: %s", corruptSeed, fx.describe())
	runCorruptCases(t, fx, []corruptCase{{what: "pristine fixture", clean: fx.pristine, warnAt: -1}})
	if t.Failed() {
		t.FailNow()
	}
	cases := fx.flipCases()
	for _, typ := range []base.FileType{base.FileTypeLog, base.FileTypeTable, base.FileTypeManifest} {
		tally := runCorruptCases(t, fx, cases[typ])
		t.Logf("%s: %d flipped positions: %d reported as corruption, %d torn WAL tails recovered, %d WALs recovered up to the damaged record",
			fileTypeName(typ), len(cases[typ]), tally[outcomeCorrupt], tally[outcomeTorn], tally[outcomeDropped])
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("took %s", time.Since(start))
}

// TestCorruptionDamagedFiles covers damage other than a flipped byte:
// truncation at every length, each file missing, a garbage or empty
// CURRENT, an empty or zeroed MANIFEST, and one file swapped for another.
func TestCorruptionDamagedFiles(t *testing.T) {
	start := time.Now()
	fx := buildCorruptFixture(t)
	manifests := fx.filesOfType(base.FileTypeManifest)
	logs := fx.filesOfType(base.FileTypeLog)
	tables := fx.filesOfType(base.FileTypeTable)
	manifest := manifests[0]
	blameCurrent := []string{corruptPath("CURRENT")}

	var cases []corruptCase
	add := func(c corruptCase) {
		if c.clean == nil && c.blame == nil {
			panic("case without expectation: " + c.what)
		}
		if c.clean == nil {
			c.maxOff = -1
		}
		cases = append(cases, c)
	}
	for name, data := range fx.files {
		t, _, _ := base.ParseFilename(name)
		for n := range len(data) {
			what := fmt.Sprintf("%s truncated to %d bytes", name, n)
			switch t {
			case base.FileTypeLog:
				add(fx.walPrefixCase(what, name, data[:n], int64(n)))
			case base.FileTypeTable:
				// Every length fails the same size check; sample the
				// middle, keep both ends (the footer and the first block).
				if n < 64 || n >= len(data)-64 || n%16 == 0 {
					add(corruptCase{what: what, file: name, data: data[:n], blame: []string{corruptPath(name)}})
				}
			case base.FileTypeManifest, base.FileTypeCurrent:
				add(corruptCase{what: what, file: name, data: data[:n], blame: []string{corruptPath(name)}})
			}
		}
		what := name + " missing"
		switch t {
		case base.FileTypeLock, base.FileTypeOptions:
			// Neither holds data: Open creates them.
			add(corruptCase{what: what, file: name, clean: fx.pristine, warnAt: -1})
		case base.FileTypeLog:
			// The manifest names the WAL recovery starts from.
			add(corruptCase{what: what, file: name, blame: []string{corruptPath(manifest)}})
		default:
			add(corruptCase{what: what, file: name, blame: []string{corruptPath(name)}})
		}
	}
	for _, garbage := range []string{
		"", "\n", "garbage\n", "MANIFEST-000001", "MANIFEST-1\n", "000019.log\n", "CURRENT\n",
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", strings.Repeat("M", 300) + "\n",
		manifest + "\n\n", " " + manifest + "\n",
	} {
		add(corruptCase{what: fmt.Sprintf("CURRENT holding %q", garbage), file: "CURRENT", data: []byte(garbage), blame: blameCurrent})
	}
	// CURRENT naming a manifest that does not exist blames that manifest.
	add(corruptCase{what: "CURRENT naming a missing manifest", file: "CURRENT", data: []byte("MANIFEST-000999\n"),
		blame: []string{corruptPath("MANIFEST-000999")}})
	for i := range fx.files["CURRENT"] {
		data := flipByte(fx.files["CURRENT"], i)
		blame := blameCurrent
		if typ, _, ok := base.ParseFilename(strings.TrimSuffix(string(data), "\n")); ok && typ == base.FileTypeManifest {
			blame = []string{corruptPath(strings.TrimSuffix(string(data), "\n"))}
		}
		add(corruptCase{what: fmt.Sprintf("CURRENT with byte %d flipped", i), file: "CURRENT", data: data, blame: blame})
	}
	add(corruptCase{what: "empty MANIFEST", file: manifest, data: []byte{}, blame: []string{corruptPath(manifest)}})
	add(corruptCase{what: "zeroed MANIFEST", file: manifest, data: make([]byte, len(fx.files[manifest])), blame: []string{corruptPath(manifest)}})
	add(corruptCase{what: "MANIFEST holding the WAL", file: manifest, data: fx.files[logs[0]], blame: []string{corruptPath(manifest)}})
	add(corruptCase{what: "WAL holding the MANIFEST", file: logs[0], data: fx.files[manifest], blame: []string{corruptPath(logs[0])}})
	add(corruptCase{what: "zeroed WAL", file: logs[0], data: make([]byte, len(fx.files[logs[0]])), clean: fx.stateBefore(fx.walRecords[logs[0]][0].seq), warnAt: -1})
	add(corruptCase{what: "table swapped for another", file: tables[0], data: fx.files[tables[1]], blame: []string{corruptPath(tables[0])}})

	tally := runCorruptCases(t, fx, cases)
	t.Logf("%d damaged directories: %d reported as corruption, %d torn WAL tails recovered, %d clean",
		len(cases), tally[outcomeCorrupt], tally[outcomeTorn], tally[outcomeClean])
	t.Logf("took %s", time.Since(start))
}

// TestCorruptionReverseScanStopsAtError pins a bug the byte flips found:
// a reverse scan that met a damaged block while collecting the versions of
// a key returned the older version it had already seen, although the
// newest one, in another table, was still to come.
func TestCorruptionReverseScanStopsAtError(t *testing.T) {
	fs := vfs.NewMem()
	opts := corruptOptions(fs)
	db := openTestDB(t, corruptDir, opts)
	big := strings.Repeat("v", 300) // one entry per 256-byte block
	for _, k := range []string{"a", "b"} {
		if err := db.Set([]byte(k), []byte("old-"+k+big), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("b"), []byte("new"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	v := db.rs.Load().version
	bottom := v.Files[6]
	db.mu.Unlock()
	if len(bottom) != 1 || len(v.Files[0]) != 1 {
		t.Fatalf("unexpected shape:\n%s", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage the bottom table's first block, which holds only "a".
	name := fs.PathJoin(corruptDir, base.MakeFilename(base.FileTypeTable, bottom[0].FileNum))
	data := readAllFile(t, fs, name)
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(flipByte(data, 0)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	db = openTestDB(t, corruptDir, opts)
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		if string(it.Key()) == "b" && string(it.Value()) != "new" {
			t.Errorf("reverse scan returned b = %.10q..., want \"new\" or an error", it.Value())
		}
	}
	if err := it.Close(); !namesAny(err, []string{name}, 0) {
		t.Errorf("reverse scan error = %v, want corruption of %s at offset 0", err, name)
	}
}

var (
	fuzzFixtureOnce sync.Once
	fuzzFixture     *corruptFixture
)

// FuzzCorruption damages one byte of one of the fixture's WAL, table and
// manifest files with any mask; the seed corpus runs under plain go test.
func FuzzCorruption(f *testing.F) {
	f.Add(uint8(0), uint16(0), byte(0xff))
	f.Add(uint8(1), uint16(100), byte(0x01))
	f.Add(uint8(2), uint16(5), byte(0x80))
	f.Add(uint8(3), uint16(700), byte(0x5a))
	f.Add(uint8(4), uint16(300), byte(0x10))
	f.Fuzz(func(t *testing.T, file uint8, pos uint16, mask byte) {
		fuzzFixtureOnce.Do(func() { fuzzFixture = buildCorruptFixture(t) })
		fx := fuzzFixture
		var names []string
		for _, typ := range []base.FileType{base.FileTypeLog, base.FileTypeTable, base.FileTypeManifest} {
			names = append(names, fx.filesOfType(typ)...)
		}
		name := names[int(file)%len(names)]
		if mask == 0 || len(fx.files[name]) == 0 {
			t.Skip()
		}
		runCorruptCases(t, fx, []corruptCase{fx.xorCase(name, int(pos)%len(fx.files[name]), mask)})
	})
}
