package lsmgo

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// CheckReport is what Check found in a DB directory.
type CheckReport struct {
	// Problems lists damage and broken invariants, in the order found.
	// Damage is a *CorruptionError (matching ErrCorruption) that names the
	// file and, where known, the offset; an I/O error that kept a file
	// from being read is reported as it came; a WAL write too large to
	// flush (accepted by an older version) matches ErrValueTooLarge
	// unless Open would store its large values in blob files (value
	// separation on), which makes it a warning.
	// Open, or a read, would fail on each of these, with one exception:
	// damage followed by intact records in the last WAL that has records,
	// which Open recovers from by dropping the log from the damaged record
	// on (unless Options.StrictWALRecovery); its message says so.
	Problems []error
	// Warnings lists what Open repairs by itself and so is not a problem:
	// a torn tail at the end of the newest WAL or of the manifest (an
	// interrupted write that recovery discards; a *CorruptionError with
	// the offset where the tail starts), files Open deletes as obsolete,
	// and a manifest without CURRENT left by an interrupted first Open.
	Warnings []error

	// Manifest is the path of the manifest CURRENT names, and
	// ManifestEdits the number of version edits replayed from it.
	Manifest      string
	ManifestEdits int
	// Tables and TableBytes count the live tables Check could open, and
	// TableEntries the entries of those that verified.
	Tables       int
	TableBytes   uint64
	TableEntries uint64
	// Logs and LogRecords count the WAL files recovery would replay and
	// the batches in them.
	Logs       int
	LogRecords int
	// BlobPointers counts the pointers to separated values (in tables and
	// WAL records) whose values Check read and verified.
	BlobPointers int
	// Options lists the options the DB was last opened with, from its
	// OPTIONS file, in the file's order; nil when the directory has none
	// (a DB last opened by a version that did not write it).
	Options []OptionSetting
}

// OK reports whether Check found no problem. Warnings do not count.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Err returns every problem joined into one error, or nil when OK.
func (r *CheckReport) Err() error { return errors.Join(r.Problems...) }

// String summarizes the report in one line.
func (r *CheckReport) String() string {
	status := "OK"
	if !r.OK() {
		status = fmt.Sprintf("%d problem(s)", len(r.Problems))
	}
	return fmt.Sprintf("%s: %d edit(s); %d table(s), %d bytes, %d entries; %d WAL(s), %d record(s); %d blob pointer(s); %d warning(s); %s",
		r.Manifest, r.ManifestEdits, r.Tables, r.TableBytes, r.TableEntries, r.Logs, r.LogRecords, r.BlobPointers, len(r.Warnings), status)
}

// Check verifies the DB in dir without opening it and without writing
// anything: CURRENT and every record of the manifest it names, the level
// invariants of the version the manifest describes, every live table
// (existence, size, every block checksum, block structure, key order,
// properties, and agreement of keys and sequence numbers with the
// manifest), and every record and batch of the WAL files recovery would
// replay. It reports all it finds in the CheckReport.
//
// The error is for failures to check at all: dir holds no DB, cannot be
// listed, or is locked by an open DB. Check takes the DB's LOCK while it
// reads (when a LOCK file exists: a DB without one has never been opened
// here), so it refuses to run on an open DB and Open fails while it runs.
// Where the LOCK cannot be taken for lack of permission (read-only media)
// Check reads without it and says so in a warning: reading never harms an
// open DB, though its concurrent changes could then show as problems.
// Only opts.FS and opts.ValueThreshold (what Open with the same options
// would recover) are used; nil means vfs.Default and the default threshold.
func Check(dir string, opts *Options) (*CheckReport, error) {
	o := opts.withDefaults()
	fs := o.FS
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("lsmgo: check %s: %w", dir, err)
	}
	c := &checker{fs: fs, dir: dir, names: names, report: &CheckReport{}, valueThreshold: o.ValueThreshold}
	c.blobs.init(fs, dir, &dbMetrics{}, nil)
	defer c.blobs.close()
	d := classifyDir(names)
	if !d.current && !d.data && !d.manifest {
		return nil, fmt.Errorf("lsmgo: check %s: no lsmgo database there: %w", dir, os.ErrNotExist)
	}
	if d.lock {
		lock, err := fs.Lock(c.path(base.MakeFilename(base.FileTypeLock, 0)))
		switch {
		case errors.Is(err, os.ErrPermission):
			c.warn(fmt.Errorf("lsmgo: check %s: reading without the DB's lock: %w", dir, err))
		case errors.Is(err, vfs.ErrLocked):
			return nil, fmt.Errorf("lsmgo: check %s: the DB is open (its LOCK is held): %w", dir, err)
		case err != nil:
			return nil, fmt.Errorf("lsmgo: check %s: cannot take the DB's LOCK file: %w", dir, err)
		default:
			defer lock.Close()
		}
	}
	if !d.current && !d.data {
		// A crash during the first Open, before CURRENT was in place:
		// nothing was ever written, and Open starts over.
		c.warn(base.Corruptf(c.path(base.MakeFilename(base.FileTypeCurrent, 0)), -1, "missing: the first Open was interrupted; Open will start over"))
		return c.report, nil
	}
	if !d.current {
		c.problem(base.Corruptf(c.path(base.MakeFilename(base.FileTypeCurrent, 0)), -1, "missing, but the directory holds tables or logs"))
		return c.report, nil
	}
	c.checkOptionsFile()
	c.run()
	return c.report, nil
}

// checker holds the state of one Check.
type checker struct {
	fs     vfs.FS
	dir    string
	names  []string
	report *CheckReport
	// blobs reads the values pointers refer to; pointedTo collects the
	// blob files they point into.
	blobs     blobFiles
	blobBuf   []byte
	pointedTo map[base.FileNum]bool
	// valueThreshold is Options.ValueThreshold as Open would use it:
	// positive when recovery separates large values.
	valueThreshold int
}

func (c *checker) path(name string) string { return c.fs.PathJoin(c.dir, name) }

func (c *checker) problem(err error) { c.report.Problems = append(c.report.Problems, err) }

func (c *checker) warn(err error) { c.report.Warnings = append(c.report.Warnings, err) }

func (c *checker) run() {
	// Load replays the manifest exactly as Open does and writes nothing;
	// without an OnObsoleteFile callback it never reports files either.
	vs, err := manifest.Load(manifest.Options{FS: c.fs, Dir: c.dir})
	if err != nil {
		c.problem(err)
		return
	}
	defer vs.Close()
	c.report.Manifest = c.path(base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum()))
	c.checkManifestTail(c.report.Manifest)

	v := vs.Current()
	defer v.Unref()
	if err := v.CheckOrdering(); err != nil {
		c.problem(base.Corruptf(c.report.Manifest, -1, "version breaks the level invariants: %v", err))
	}
	c.report.Problems = append(c.report.Problems, missingManifestFiles(c.fs, c.dir, vs, c.names)...)
	for _, files := range v.Files {
		for _, f := range files {
			c.checkTable(f, vs.LastSeq())
		}
	}
	c.checkLogs(vs.LogNum(), vs.LastSeq())
	c.checkStrayFiles(vs)
}

// checkManifestTail counts the manifest's edits and warns about a torn
// tail, which Load silently drops.
func (c *checker) checkManifestTail(name string) {
	f, err := c.fs.Open(name)
	if err != nil {
		c.problem(fmt.Errorf("lsmgo: check: %w", err))
		return
	}
	defer f.Close()
	r := record.NewReader(f, name)
	for _, err := range r.All() {
		if err != nil {
			// Load succeeded, so this is a read error, not damage.
			c.problem(err)
			break
		}
		c.report.ManifestEdits++
	}
	if off, torn := r.TornTail(); torn {
		c.warn(base.Corruptf(name, off, "torn tail: an interrupted version edit that Open discards"))
	}
}

// checkTable verifies one live table against its manifest entry. It
// reports at most one problem about the table's contents, since the first
// damage usually makes what follows meaningless.
func (c *checker) checkTable(m *manifest.FileMetadata, lastSeq base.SeqNum) {
	name := c.path(base.MakeFilename(base.FileTypeTable, m.FileNum))
	f, err := c.fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		// missingManifestFiles has reported it.
		return
	} else if err != nil {
		c.problem(fmt.Errorf("lsmgo: check: %w", err))
		return
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		c.problem(fmt.Errorf("lsmgo: check: stat %s: %w", name, err))
		return
	}
	if uint64(st.Size()) != m.Size {
		f.Close()
		c.problem(base.Corruptf(name, -1, "file is %d bytes, the manifest says %d", st.Size(), m.Size))
		return
	}
	r, err := sstable.NewReader(f, st.Size(), sstable.ReaderOptions{FileNum: m.FileNum, FileName: name})
	if err != nil {
		c.problem(err)
		return
	}
	defer r.Close()
	c.report.Tables++
	c.report.TableBytes += m.Size
	if err := r.VerifyChecksums(); err != nil {
		c.problem(err)
		return
	}
	props := r.Properties()
	if props.SmallestSeq != m.SmallestSeq || props.LargestSeq != m.LargestSeq {
		c.problem(base.Corruptf(name, -1, "properties give seqnums [%d,%d], the manifest [%d,%d]",
			props.SmallestSeq, props.LargestSeq, m.SmallestSeq, m.LargestSeq))
		return
	}
	if m.LargestSeq > lastSeq {
		c.problem(base.Corruptf(name, -1, "holds seqnum %d, above the manifest's last seqnum %d", m.LargestSeq, lastSeq))
		return
	}
	if err := c.checkEntries(name, r, m, props); err != nil {
		c.problem(err)
	}
}

// checkEntries walks the table's entries and checks them against the
// manifest's bounds and the table's own properties. VerifyChecksums has
// already checked key order and decoding.
func (c *checker) checkEntries(name string, r *sstable.Reader, m *manifest.FileMetadata, props sstable.Properties) error {
	it := r.NewIter(nil, nil)
	defer it.Close()
	var n, dels uint64
	var last base.InternalKey
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if n == 0 && base.CompareInternal(k, m.Smallest) != 0 {
			return base.Corruptf(name, -1, "first key %s is not the manifest's smallest %s", k, m.Smallest)
		}
		if s := k.Seq(); s < m.SmallestSeq || s > m.LargestSeq {
			return base.Corruptf(name, -1, "key %s outside the seqnum range [%d,%d]", k, m.SmallestSeq, m.LargestSeq)
		}
		switch {
		case k.Kind() == base.KindDelete:
			dels++
		case k.Kind().HasExpiry() && len(it.Value()) < base.ExpiryLen:
			return base.Corruptf(name, -1, "key %s: expiring value of %d bytes is shorter than its expiry", k, len(it.Value()))
		}
		if k.Kind().IsBlob() {
			if err := c.checkPointer(name, -1, k.Kind(), k.UserKey, it.Value()); err != nil {
				return err
			}
		}
		last.UserKey = append(last.UserKey[:0], k.UserKey...)
		last.Trailer = k.Trailer
		n++
	}
	if err := it.Error(); err != nil {
		return err
	}
	switch {
	case n == 0:
		return base.Corruptf(name, -1, "table holds no entries")
	case base.CompareInternal(last, m.Largest) != 0:
		return base.Corruptf(name, -1, "last key %s is not the manifest's largest %s", last, m.Largest)
	case n != props.NumEntries || dels != props.NumDeletions:
		return base.Corruptf(name, -1, "holds %d entries (%d deletions), the properties say %d (%d)",
			n, dels, props.NumEntries, props.NumDeletions)
	}
	c.report.TableEntries += n
	return nil
}

// checkLogs verifies the WAL files Open would replay, oldest first, with
// the same rules: a torn tail, or damage followed by intact records, may
// end only the last log that has records; every record must decode as a
// batch; sequence numbers only grow. Unlike Open, Check stays strict: such
// damage is a problem even where Open would recover the records before it.
// A close marker (wal_close.go) after an early end, or with a larger
// sequence number than the one after the last record before it (from the
// manifest's lastSeq on), proves acknowledged writes lost: a problem.
func (c *checker) checkLogs(minLog base.FileNum, lastSeq base.SeqNum) {
	var logs []base.FileNum
	for _, name := range c.names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeLog && num >= minLog {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)
	// end is where the last log read so far ended early, pending until it
	// is known whether a later log holds records.
	var end *logEnd
	settle := func(recordsFollow bool) {
		if end != nil {
			end.report(c, recordsFollow)
			end = nil
		}
	}
	var nextSeq base.SeqNum
	contiguous := lastSeq + 1 // after the last record read
	for _, num := range logs {
		name := c.path(base.MakeFilename(base.FileTypeLog, num))
		c.report.Logs++
		f, err := c.fs.Open(name)
		if err != nil {
			c.problem(fmt.Errorf("lsmgo: check: %w", err))
			continue
		}
		r := record.NewReader(f, name)
		for rec, err := range r.All() {
			if err != nil {
				var ce *CorruptionError
				off, damaged := r.Damage()
				if damaged && end == nil && errors.As(err, &ce) {
					end = &logEnd{err: ce, recoverFrom: off}
				} else {
					settle(damaged)
					c.problem(err)
				}
				break
			}
			seq, count, berr := c.checkBatch(name, r.Offset(), rec)
			if berr == nil && isCloseMarker(rec) {
				if end != nil {
					end.closed = true
				} else if seq > contiguous {
					c.problem(base.Corruptf(name, r.Offset(), "%s", walLoss{from: contiguous, to: seq}.reason()))
				}
			}
			settle(true)
			c.report.LogRecords++
			if berr != nil {
				c.problem(walRecordError(name, r.Offset(), berr))
				break
			}
			if count == 0 {
				continue // a close marker: its seqnum is no record's
			}
			contiguous = seq + base.SeqNum(count)
			if seq < nextSeq {
				c.problem(base.Corruptf(name, r.Offset(), "batch seqnum %d is below %d, the next after the previous batch", seq, nextSeq))
				break
			}
			nextSeq = seq + base.SeqNum(count)
			if err := c.checkRecordPointers(name, r.Offset(), rec); err != nil {
				var ce *CorruptionError
				if end == nil && errors.As(err, &ce) && ce.File != name {
					// The value is missing or damaged in its blob file:
					// Open ends the replay at this record, as at damage.
					end = &logEnd{err: &CorruptionError{File: name, Offset: r.Offset(), Reason: err.Error()}, recoverFrom: r.Offset()}
				} else {
					c.problem(err)
				}
				break
			}
		}
		f.Close()
		if off, ok := r.TornTail(); ok {
			settle(false)
			end = &logEnd{err: &CorruptionError{File: name, Offset: off, Reason: "torn tail: an interrupted write that Open discards"}, recoverFrom: -1}
		}
	}
	settle(false)
}

// checkBatch is checkBatch as recovery applies it: a record too large for
// a table or a memtable only as written is a warning when Open would move
// its large values to a blob file, leaving it small enough.
func (c *checker) checkBatch(name string, off int64, rec []byte) (base.SeqNum, uint32, error) {
	seq, count, err := checkBatch(rec)
	if !errors.Is(err, ErrValueTooLarge) || c.valueThreshold <= 0 {
		return seq, count, err
	}
	// The longest pointer a value could get, without writing it.
	longest := func(key, value []byte) (blob.Pointer, error) {
		return blob.Pointer{FileNum: base.FileNum(math.MaxUint64), Offset: math.MaxUint64, Length: math.MaxUint64, Checksum: math.MaxUint32}, nil
	}
	sep, _ := separateRecord(rec, c.valueThreshold, longest)
	if sep == nil {
		return seq, count, err
	}
	if seq, count, serr := checkBatch(sep); serr == nil {
		c.warn(fmt.Errorf("lsmgo: WAL %s, record at offset %d: %w; Open moves its values of %d bytes or more to a blob file, which makes it fit",
			name, off, err, c.valueThreshold))
		return seq, count, nil
	}
	return seq, count, err
}

// checkRecordPointers verifies the pointers of a WAL record (at offset off
// of WAL name) that checkBatch accepted.
func (c *checker) checkRecordPointers(name string, off int64, rec []byte) error {
	r, err := batchrepr.NewReader(rec)
	if err != nil {
		return err
	}
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if kind.IsBlob() {
			if err := c.checkPointer(name, off, kind, key, value); err != nil {
				return err
			}
		}
	}
}

// checkPointer reads and verifies the value that an entry of a blob kind,
// found in file name (at offset off, or -1), points to. Damage in the blob
// file is reported as the blob reader found it, naming the blob file and
// the value's offset; the entry's own file is named for a bad pointer.
func (c *checker) checkPointer(name string, off int64, kind base.Kind, key, value []byte) error {
	p, err := entryPointer(kind, value)
	if err != nil {
		return base.Corruptf(name, off, "key %s: blob pointer: %v", quoteKey(key), err)
	}
	if c.pointedTo == nil {
		c.pointedTo = make(map[base.FileNum]bool)
	}
	c.pointedTo[p.FileNum] = true
	if c.blobBuf, err = c.blobs.readPointer(p, c.blobBuf[:0]); err != nil {
		return fmt.Errorf("key %s in %s: %w", quoteKey(key), name, err)
	}
	c.report.BlobPointers++
	return nil
}

// logEnd is a WAL that ended before its last byte: in a torn tail, or
// (recoverFrom >= 0) in damage followed by an intact record, which
// recovery drops from the damaged record's start at recoverFrom on.
type logEnd struct {
	err         *CorruptionError
	recoverFrom int64
	// closed is set when a close marker follows: the log was whole.
	closed bool
}

// report files the early end as a problem or a warning. Older logs were
// synced before a newer one was created, so an early end followed by
// records in a later log is not an interrupted write, and Open refuses it.
func (e *logEnd) report(c *checker, recordsFollow bool) {
	switch {
	case e.closed:
		c.problem(base.Corruptf(e.err.File, e.err.Offset,
			"%s, though the DB was closed cleanly after this WAL: acknowledged writes are lost (Open recovers the records before the offset)", e.err.Reason))
	case recordsFollow && e.recoverFrom >= 0:
		c.problem(e.err)
	case recordsFollow:
		c.problem(base.Corruptf(e.err.File, e.err.Offset, "damaged records in a WAL followed by a newer WAL with records"))
	case e.recoverFrom >= 0:
		c.problem(base.Corruptf(e.err.File, e.err.Offset,
			"%s; Open recovers the records before offset %d and drops the rest, unless Options.StrictWALRecovery is set",
			e.err.Reason, e.recoverFrom))
	default:
		c.warn(e.err)
	}
}

// checkStrayFiles warns about files Open would delete.
func (c *checker) checkStrayFiles(vs *manifest.VersionSet) {
	live := vs.LiveFiles()
	// Retained WAL files keep the blob files older than the live WALs
	// (loadRetained).
	heldForWAL := map[base.FileNum]bool{}
	for _, name := range c.names {
		if t, _, ok := base.ParseFilename(name); ok && t == base.FileTypeRetainedLog {
			for _, num := range oldBlobs(c.names, vs.LogNum()) {
				heldForWAL[num] = true
			}
			break
		}
	}
	for _, name := range c.names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		var why string
		switch {
		case t == base.FileTypeTable && !live[num]:
			why = "table not in the current version"
		case t == base.FileTypeLog && num < vs.LogNum():
			why = "WAL older than the manifest's log number"
		case t == base.FileTypeManifest && num != vs.ManifestFileNum():
			why = "manifest not named by CURRENT"
		case t == base.FileTypeTemp:
			why = "temporary file"
		case t == base.FileTypeBlob && !c.pointedTo[num] && !heldForWAL[num]:
			why = "blob file no table or WAL record points into"
		default:
			continue
		}
		c.warn(fmt.Errorf("%s: %s; Open deletes it", c.path(name), why))
	}
}

// missingManifestFiles returns a *CorruptionError for each file the
// manifest relies on that names (the directory listing) lacks: every live
// table, and the WAL it names as the oldest still needed. Neither can be
// missing after a crash: a table's or WAL's directory entry is synced
// before any edit names it, and it is deleted only after an edit has
// stopped naming it. So a missing one means the manifest lost acknowledged
// edits (a damaged last record that Load took for an interrupted write) or
// someone deleted a file, and reading on would silently drop data.
func missingManifestFiles(fs vfs.FS, dir string, vs *manifest.VersionSet, names []string) []error {
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
	}
	manifestName := base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())
	var errs []error
	switch n := vs.LogNum(); {
	case n != 0 && !present[base.MakeFilename(base.FileTypeLog, n)]:
		errs = append(errs, base.Corruptf(fs.PathJoin(dir, manifestName), -1,
			"WAL %s, the oldest it says recovery needs, is missing: the manifest may have lost edits",
			base.MakeFilename(base.FileTypeLog, n)))
	case n == 0:
		// Only the snapshot Create writes has no WAL number, and the
		// first Open records one before it writes any table: replaying
		// from here and deleting the unknown tables would lose them all.
		for _, name := range names {
			if t, _, ok := base.ParseFilename(name); ok && t == base.FileTypeTable {
				errs = append(errs, base.Corruptf(fs.PathJoin(dir, manifestName), -1,
					"records no WAL yet, but the directory holds table %s: the manifest may have lost edits", name))
				break
			}
		}
	}
	v := vs.Current()
	defer v.Unref()
	for level, files := range v.Files {
		for _, f := range files {
			if name := base.MakeFilename(base.FileTypeTable, f.FileNum); !present[name] {
				errs = append(errs, base.Corruptf(fs.PathJoin(dir, name), -1,
					"table of L%d in %s is missing", level, manifestName))
			}
		}
	}
	return errs
}
