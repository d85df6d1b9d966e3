package lsmgo

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// LostDir is the subdirectory of a DB directory where Repair moves the
// tables it takes out of the DB, for an operator to inspect or delete.
const LostDir = "lost"

// RepairReport says what Repair found and did.
type RepairReport struct {
	// Tables is the number of tables the manifest named and Repair read.
	Tables int
	// Damaged lists the tables that failed verification, each replaced by
	// what could be read of it.
	Damaged []DamagedTable
	// WALDroppedBytes is what replaying the WALs dropped at a torn or
	// damaged record (see Options.StrictWALRecovery).
	WALDroppedBytes int64
}

// DamagedTable is one table Repair took out of the DB.
type DamagedTable struct {
	// File is the table's name; it now lies in the LostDir subdirectory.
	File  string
	Level int
	// Smallest and Largest are the user keys the table covered, from the
	// manifest: every lost entry is in this range.
	Smallest, Largest []byte
	// Entries is what the table held (0 when its properties are
	// unreadable); Salvaged what Repair saved into Replacement (empty when
	// nothing was saved). Entries - Salvaged were lost.
	Entries, Salvaged uint64
	Replacement       string
	// BlocksLost counts the data blocks skipped; -1 when the table could
	// not be opened at all (its footer, index or properties are damaged).
	BlocksLost int
	// Err is the first problem found.
	Err error
}

// Lost is the number of entries lost, when known.
func (d *DamagedTable) Lost() uint64 { return d.Entries - min(d.Salvaged, d.Entries) }

// String prints the report for an operator: one line per damaged table,
// naming the key range that lost data.
func (r *RepairReport) String() string {
	var b strings.Builder
	for _, d := range r.Damaged {
		fmt.Fprintf(&b, "damaged: L%d %s keys [%q, %q]: saved %d entries", d.Level, d.File, d.Smallest, d.Largest, d.Salvaged)
		if d.Replacement != "" {
			fmt.Fprintf(&b, " into %s", d.Replacement)
		}
		if d.Entries > 0 {
			fmt.Fprintf(&b, ", lost %d of %d", d.Lost(), d.Entries)
		} else {
			b.WriteString(", lost an unknown number")
		}
		if d.BlocksLost >= 0 {
			fmt.Fprintf(&b, " (%d data blocks unreadable)", d.BlocksLost)
		}
		fmt.Fprintf(&b, "; moved to %s/: %v\n", LostDir, d.Err)
	}
	fmt.Fprintf(&b, "%d tables checked, %d damaged; WAL replay dropped %d bytes", r.Tables, len(r.Damaged), r.WALDroppedBytes)
	return b.String()
}

// Repair saves what it can of a DB directory that holds damaged tables;
// the DB must be closed (Repair takes its lock). It reads every table the
// manifest names, checksums included. Each damaged one is replaced, at
// the same level, by a new table holding the entries of every data block
// that still reads intact, and moved to the LostDir subdirectory; the
// manifest is updated in one edit. Repair then opens the DB once, which
// replays the WALs as Open always does, and closes it. The report names
// each damaged table, its key range and how many entries were lost.
//
// What was lost cannot come back, and losing a newer version of a key can
// make an older version (in a deeper level) visible again, or a deleted
// key reappear if its tombstone was lost: check the reported key ranges
// against the application's own records. Repair needs a readable manifest;
// a damaged manifest or WAL is reported by Check and refused by Open.
func Repair(dir string, opts *Options) (*RepairReport, error) {
	o := opts.withDefaults()
	fs := o.FS
	report := &RepairReport{}
	lock, err := fs.Lock(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return nil, fmt.Errorf("lsmgo: repair %s: the DB must be closed: %w", dir, err)
	}
	err = repairTables(fs, dir, &o, report)
	if cerr := lock.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return report, err
	}
	db, err := Open(dir, opts)
	if err != nil {
		return report, fmt.Errorf("lsmgo: repair %s: open after repairing the tables: %w", dir, err)
	}
	report.WALDroppedBytes = db.Metrics().WAL.RecoveryDroppedBytes
	return report, db.Close()
}

// repairTables verifies every table of the manifest in dir and replaces
// the damaged ones; the caller holds the lock.
func repairTables(fs vfs.FS, dir string, o *Options, report *RepairReport) error {
	// Nothing is deleted behind Repair's back: the damaged tables are
	// moved once the edit that drops them is durable.
	vs, err := manifest.Load(manifest.Options{FS: fs, Dir: dir, OnObsoleteFile: func(base.FileNum) {}})
	if err != nil {
		return fmt.Errorf("lsmgo: repair %s: the manifest is unreadable, which repair cannot rebuild: %w", dir, err)
	}
	defer vs.Close()
	if names, err := fs.List(dir); err == nil {
		// New tables must not reuse a number a stray file holds.
		logsToReplay(vs, names)
	}
	v := vs.Current()
	defer v.Unref()
	edit := &manifest.VersionEdit{}
	for level, files := range v.Files {
		for _, f := range files {
			report.Tables++
			d, err := repairTable(fs, dir, o, vs, level, f)
			if err != nil {
				return err
			}
			if d == nil {
				continue
			}
			report.Damaged = append(report.Damaged, d.DamagedTable)
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFile{Level: level, FileNum: f.FileNum})
			if d.meta != nil {
				edit.NewFiles = append(edit.NewFiles, manifest.NewFile{Level: level, Meta: d.meta})
			}
		}
	}
	if len(report.Damaged) == 0 {
		return nil
	}
	if err := syncDir(fs, dir); err != nil {
		return err
	}
	if err := vs.LogAndApply(edit); err != nil {
		return fmt.Errorf("lsmgo: repair %s: %w", dir, err)
	}
	lost := fs.PathJoin(dir, LostDir)
	if err := fs.MkdirAll(lost, 0o755); err != nil {
		return fmt.Errorf("lsmgo: repair: %w", err)
	}
	for _, d := range report.Damaged {
		if err := fs.Rename(fs.PathJoin(dir, d.File), fs.PathJoin(lost, d.File)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("lsmgo: repair: move %s to %s: %w", d.File, LostDir, err)
		}
	}
	if err := syncDir(fs, lost); err != nil {
		return err
	}
	return syncDir(fs, dir)
}

// repairedTable is a damaged table and its replacement, if any.
type repairedTable struct {
	DamagedTable
	meta *manifest.FileMetadata
}

// repairTable verifies table f and, when it is damaged, writes what can
// be read of it into a new table. It returns nil for an intact table; an
// error only when Repair itself cannot go on.
func repairTable(fs vfs.FS, dir string, o *Options, vs *manifest.VersionSet, level int, f *manifest.FileMetadata) (*repairedTable, error) {
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	path := fs.PathJoin(dir, name)
	d := &repairedTable{DamagedTable: DamagedTable{
		File: name, Level: level, BlocksLost: -1,
		Smallest: append([]byte(nil), f.Smallest.UserKey...), Largest: append([]byte(nil), f.Largest.UserKey...),
	}}
	file, err := fs.Open(path)
	if err != nil {
		d.Err = err
		return d, nil
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		d.Err = err
		return d, nil
	}
	r, err := sstable.NewReader(file, st.Size(), sstable.ReaderOptions{FileNum: f.FileNum, FileName: path})
	if err != nil {
		// NewReader has closed the file.
		d.Err = err
		return d, nil
	}
	defer r.Close()
	if d.Err = r.VerifyChecksums(); d.Err == nil {
		return nil, nil
	}
	d.Entries = r.Properties().NumEntries

	num := vs.NewFileNum()
	outName := base.MakeFilename(base.FileTypeTable, num)
	out, err := fs.Create(fs.PathJoin(dir, outName))
	if err != nil {
		return nil, fmt.Errorf("lsmgo: repair: create %s: %w", outName, err)
	}
	w := sstable.NewWriter(out, sstable.WriterOptions{
		BlockSize:       o.BlockSize,
		BloomBitsPerKey: o.BloomBitsPerKey,
		Compression:     o.Compression.sstableCompression(),
	})
	// The salvaged pointers keep their blob files alive only if the new
	// table counts them, as a compaction's output does.
	refs := map[base.FileNum]uint64{}
	skipped, _, err := r.Salvage(func(key base.InternalKey, value []byte) error {
		d.Salvaged++
		if key.Kind().IsBlob() {
			p, err := entryPointer(key.Kind(), value)
			if err != nil {
				return base.Corruptf(name, -1, "key %s: blob pointer: %v", key, err)
			}
			refs[p.FileNum] += p.RecordLen(len(key.UserKey))
		}
		return w.Add(key, value)
	})
	d.BlocksLost = skipped
	if err != nil {
		w.Close()
		fs.Remove(fs.PathJoin(dir, outName))
		return nil, fmt.Errorf("lsmgo: repair: write %s: %w", outName, err)
	}
	wm, err := w.Close()
	if err != nil {
		fs.Remove(fs.PathJoin(dir, outName))
		return nil, fmt.Errorf("lsmgo: repair: write %s: %w", outName, err)
	}
	if d.Salvaged == 0 {
		fs.Remove(fs.PathJoin(dir, outName))
		return d, nil
	}
	d.Replacement = outName
	d.meta = &manifest.FileMetadata{
		FileNum: num, Size: wm.Size,
		Smallest: wm.Smallest, Largest: wm.Largest,
		SmallestSeq: wm.SmallestSeq, LargestSeq: wm.LargestSeq,
		BlobRefs: blobRefs(refs),
	}
	return d, nil
}
