// Package inspect prints what lsmgo's files hold — a DB directory's current
// version, a table's properties and entries, a WAL's batches, a manifest's
// version edits — for people debugging a DB (`lsmgo dump`). It only reads,
// so it works on an open DB too, though what it prints may then be stale.
//
// It lives in the engine's module, not with the lsmgo binary, because it
// reads the files through the engine's internal packages, which change with
// any engine version; the binary's module (server) builds on the engine's
// public API alone, so that the two can be versioned apart.
//
// The output is for people; its wording may change between versions.
package inspect

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// DumpOptions says what Dump reads and how much it prints. The zero value
// reads the operating system's files and prints table properties only.
type DumpOptions struct {
	// FS is the file system to read; nil means vfs.Default.
	FS vfs.FS
	// Entries, for a table file, prints every entry after the properties.
	Entries bool
	// MaxValue cuts each printed value to this many bytes; 0 prints all.
	MaxValue int
}

// Dump prints target to w: for a DB directory, the current version level
// by level; for a table (.sst), its properties and, with Entries, its
// entries; for a WAL (.log, or .rlog: retained), every batch with its entries; for a MANIFEST,
// every version edit. An error means target could not be read whole; what
// was printed before it stands.
func Dump(w io.Writer, target string, opts DumpOptions) error {
	d := &dumper{fs: opts.FS, out: w, entries: opts.Entries, maxValue: opts.MaxValue}
	if d.fs == nil {
		d.fs = vfs.Default
	}
	return d.dump(target)
}

// dumper prints one dump.
type dumper struct {
	fs       vfs.FS
	out      io.Writer
	entries  bool
	maxValue int
}

func (d *dumper) dump(target string) error {
	st, err := d.fs.Stat(target)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return d.dumpDir(target)
	}
	t, _, ok := base.ParseFilename(filepath.Base(target))
	switch {
	case ok && t == base.FileTypeTable:
		return d.dumpTable(target, st.Size())
	case ok && (t == base.FileTypeLog || t == base.FileTypeRetainedLog):
		return d.dumpLog(target)
	case ok && t == base.FileTypeManifest:
		return d.dumpManifest(target)
	}
	return fmt.Errorf("%s: not a table (.sst), WAL (.log, .rlog) or MANIFEST file", target)
}

// dumpDir prints the current version the manifest describes, then the
// directory's blob files.
func (d *dumper) dumpDir(dir string) error {
	vs, err := manifest.Load(manifest.Options{FS: d.fs, Dir: dir})
	if err != nil {
		return err
	}
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	fmt.Fprintf(d.out, "manifest: %s\n", base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum()))
	fmt.Fprintf(d.out, "log number: %d\nlast seqnum: %d\n", vs.LogNum(), vs.LastSeq())
	for level, files := range v.Files {
		fmt.Fprintf(d.out, "L%d: %d file(s), %d bytes\n", level, len(files), v.LevelSize(level))
		for _, f := range files {
			fmt.Fprintf(d.out, "  %s\n", f)
		}
	}
	return d.dumpBlobs(dir, v)
}

// dumpBlobs lists the directory's blob files with their size on disk and
// the record bytes (header, key and value) the current version's tables
// point to in each. Values
// still only in the WAL or memtable count as unreferenced here, so a blob
// file written since the last flush may show 0 live bytes; the
// difference between total and live bytes is what GC could reclaim once
// flushed.
func (d *dumper) dumpBlobs(dir string, v *manifest.Version) error {
	live := make(map[base.FileNum]uint64)
	for _, files := range v.Files {
		for _, f := range files {
			for _, r := range f.BlobRefs {
				live[r.FileNum] += r.Bytes
			}
		}
	}
	names, err := d.fs.List(dir)
	if err != nil {
		return err
	}
	type blobFile struct {
		num  base.FileNum
		size int64
	}
	var blobs []blobFile
	var total int64
	var totalLive uint64
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeBlob {
			st, err := d.fs.Stat(d.fs.PathJoin(dir, name))
			if err != nil {
				return err
			}
			blobs = append(blobs, blobFile{num, st.Size()})
			total += st.Size()
			totalLive += live[num]
		}
	}
	slices.SortFunc(blobs, func(a, b blobFile) int { return cmp.Compare(a.num, b.num) })
	fmt.Fprintf(d.out, "blobs: %d file(s), %d bytes, %d live\n", len(blobs), total, totalLive)
	for _, b := range blobs {
		fmt.Fprintf(d.out, "  %s: %d bytes, %d live\n", base.MakeFilename(base.FileTypeBlob, b.num), b.size, live[b.num])
		delete(live, b.num)
	}
	// A referenced blob file that is gone is damage `lsmgo check` reports
	// in detail; the dump names it so the listing is not silently short.
	missing := slices.Sorted(maps.Keys(live))
	for _, num := range missing {
		fmt.Fprintf(d.out, "  %s: missing, %d live bytes referenced\n", base.MakeFilename(base.FileTypeBlob, num), live[num])
	}
	return nil
}

// dumpTable prints a table's properties and, with --entries, its entries.
func (d *dumper) dumpTable(name string, size int64) error {
	f, err := d.fs.Open(name)
	if err != nil {
		return err
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{FileName: name})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(d.out, "%s: %d bytes\n%s", name, size, r.Properties())
	if !d.entries {
		return nil
	}
	it := r.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(d.out, "%s = %s\n", it.Key(), d.formatValue(it.Key().Kind(), it.Value()))
	}
	return it.Close()
}

// dumpLog prints every batch of a WAL file with its entries.
func (d *dumper) dumpLog(name string) error {
	return d.readRecords(name, func(off int64, rec []byte) error {
		r, err := batchrepr.NewReader(rec)
		if err != nil {
			return base.Corruptf(name, off, "WAL record: %v", err)
		}
		seq := batchrepr.Seq(rec)
		fmt.Fprintf(d.out, "offset %d: batch seqnum %d, %d record(s), %d bytes\n", off, seq, batchrepr.Count(rec), len(rec))
		for i := base.SeqNum(0); ; i++ {
			kind, key, value, ok, err := r.Next()
			if err != nil {
				return base.Corruptf(name, off, "WAL record: %v", err)
			}
			if !ok {
				return nil
			}
			fmt.Fprintf(d.out, "  %s = %s\n", base.MakeInternalKey(key, seq+i, kind), d.formatValue(kind, value))
		}
	})
}

// dumpManifest prints every version edit of a manifest.
func (d *dumper) dumpManifest(name string) error {
	return d.readRecords(name, func(off int64, rec []byte) error {
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			return base.Corruptf(name, off, "decoding version edit: %v", err)
		}
		fmt.Fprintf(d.out, "offset %d: version edit\n", off)
		if e.LogNum != 0 {
			fmt.Fprintf(d.out, "  log number: %d\n", e.LogNum)
		}
		if e.NextFileNum != 0 {
			fmt.Fprintf(d.out, "  next file number: %d\n", e.NextFileNum)
		}
		if e.LastSeq != 0 {
			fmt.Fprintf(d.out, "  last seqnum: %d\n", e.LastSeq)
		}
		for _, df := range e.DeletedFiles {
			fmt.Fprintf(d.out, "  delete L%d %s\n", df.Level, base.MakeFilename(base.FileTypeTable, df.FileNum))
		}
		for _, nf := range e.NewFiles {
			fmt.Fprintf(d.out, "  add L%d %s\n", nf.Level, nf.Meta)
		}
		return nil
	})
}

// readRecords hands each record of a log-format file to fn with its
// offset, and reports a torn tail.
func (d *dumper) readRecords(name string, fn func(off int64, rec []byte) error) error {
	f, err := d.fs.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := record.NewReader(f, name)
	for rec, err := range r.All() {
		if err != nil {
			return err
		}
		if err := fn(r.Offset(), rec); err != nil {
			return err
		}
	}
	if off, torn := r.TornTail(); torn {
		fmt.Fprintf(d.out, "offset %d: torn tail (an interrupted write; recovery stops here)\n", off)
	}
	return nil
}

// formatValue quotes a value, cut to maxValue bytes, and shows the expiry
// of an expiring one.
func (d *dumper) formatValue(kind base.Kind, v []byte) string {
	var expiry string
	switch kind {
	case base.KindDelete:
		return "(tombstone)"
	case base.KindSetExpiry:
		ms, rest, ok := base.DecodeExpiryValue(v)
		if !ok {
			return fmt.Sprintf("%q (too short for its expiry)", v)
		}
		v = rest
		expiry = " expires " + time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	}
	s := fmt.Sprintf("%q", v)
	if d.maxValue > 0 && len(v) > d.maxValue {
		s = fmt.Sprintf("%q... (%d bytes)", v[:d.maxValue], len(v))
	}
	return s + expiry
}
