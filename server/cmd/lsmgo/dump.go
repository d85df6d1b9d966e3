package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
	"github.com/lsmgo-dev/lsmgo/internal/wal"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

func init() {
	commands["dump"] = command{
		summary: "print a DB's levels, or a table, WAL or manifest file",
		run:     runDump,
	}
}

// dumper prints one dump. It reads through fs so tests can use a MemFS.
type dumper struct {
	fs       vfs.FS
	out      io.Writer
	entries  bool
	maxValue int
}

// runDump implements `lsmgo dump [--entries] [--max-value N] DIR|FILE`.
// It only reads, so it works on an open DB too, though what it prints may
// then be stale. Exit status 1 means the target could not be read whole;
// what was printed before the error stands.
func runDump(args []string, stdout, stderr io.Writer) int {
	d := &dumper{fs: vfs.Default, out: stdout}
	fl := flag.NewFlagSet("dump", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.BoolVar(&d.entries, "entries", false, "with a .sst FILE, print every entry too")
	fl.IntVar(&d.maxValue, "max-value", 64, "print at most this many bytes of each value (0: all)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: lsmgo dump [--entries] [--max-value N] DIR|FILE")
		fmt.Fprintln(stderr, "DIR: the current version, level by level. FILE: a .sst's properties (and entries),")
		fmt.Fprintln(stderr, "a .log's batches, or a MANIFEST's version edits.")
		fl.PrintDefaults()
	}
	target, err := parseOnePositional(fl, args)
	if err != nil {
		// The flag package has already reported its own errors.
		if errors.Is(err, errArgCount) {
			fl.Usage()
		}
		return 2
	}
	if err := d.dump(target); err != nil {
		fmt.Fprintf(stderr, "lsmgo dump: %v\n", err)
		return 1
	}
	return 0
}

// errArgCount is a usage error: there must be exactly one positional argument.
var errArgCount = errors.New("want exactly one argument")

// parseOnePositional parses flags placed before or after the single
// positional argument, which the flag package alone does not allow.
func parseOnePositional(fl *flag.FlagSet, args []string) (string, error) {
	if err := fl.Parse(args); err != nil {
		return "", err
	}
	if fl.NArg() == 0 {
		return "", errArgCount
	}
	arg := fl.Arg(0)
	if err := fl.Parse(fl.Args()[1:]); err != nil {
		return "", err
	}
	if fl.NArg() != 0 {
		return "", errArgCount
	}
	return arg, nil
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
	case ok && t == base.FileTypeLog:
		return d.dumpLog(target)
	case ok && t == base.FileTypeManifest:
		return d.dumpManifest(target)
	}
	return fmt.Errorf("%s: not a table (.sst), WAL (.log) or MANIFEST file", target)
}

// dumpDir prints the current version the manifest describes.
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
	r := wal.NewReader(f, name)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		} else if err != nil {
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
