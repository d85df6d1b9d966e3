package lsmgo

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/testutil/datadriven"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// recoveryScript is the state a recovery script works on: one in-memory
// filesystem, replaced by its crash image on "crash", and the DB open on it.
type recoveryScript struct {
	fs *vfs.MemFS
	db *DB
}

const recoveryDir = "/db"

// options are small enough that a script controls every flush itself: the
// memtable never fills and compactions run only when asked for.
func (s *recoveryScript) options(t testing.TB, c *datadriven.Case) *Options {
	o := &Options{
		FS:                    s.fs,
		Logger:                slog.New(slog.DiscardHandler),
		MemTableSize:          1 << 20,
		L0CompactionThreshold: 1000,
		L0StopWritesThreshold: 2000,
		StrictWALRecovery:     c.HasArg("strict"),
	}
	switch mode, _ := c.Arg("sync"); mode {
	case "", "always":
		o.Sync = SyncAlways
	case "none":
		o.Sync = SyncNone
	default:
		c.Fatalf(t, "bad sync=%q", mode)
	}
	return o
}

// TestRecoveryDataDriven runs testdata/recovery. Commands:
//
//	open [sync=always|none] [strict]   Open the DB on the current filesystem
//	write [sync] [batch]               apply the input lines "set K V" and
//	                                   "del K", one write each or as one batch
//	flush / compact                    DB.Flush, DB.Compact(nil, nil)
//	close                              DB.Close
//	crash                              keep only what was synced (the image
//	                                   vfs.MemFS.CrashClone makes), then
//	                                   close the abandoned DB on the old one
//	tear-wal bytes=N                   zero the last N bytes of the newest
//	                                   WAL's records
//	scan [lower=K] [upper=K]           every key=value, in order
//	iter [lower=K] [upper=K]           positioning calls, one per input line:
//	                                   first, last, next, prev, seek-ge K,
//	                                   seek-lt K
//	lsm                                the number of tables in each level
//	ls                                 the directory's files
func TestRecoveryDataDriven(t *testing.T) {
	s := &recoveryScript{fs: vfs.NewMem()}
	datadriven.RunFile(t, "testdata/recovery", func(t testing.TB, c *datadriven.Case) string {
		out, err := s.run(t, c)
		if err != nil {
			return "error: " + err.Error()
		}
		return out
	})
}

func (s *recoveryScript) run(t testing.TB, c *datadriven.Case) (string, error) {
	switch c.Cmd {
	case "open":
		db, err := Open(recoveryDir, s.options(t, c))
		if err != nil {
			return "", err
		}
		s.db = db
		t.Cleanup(func() { db.Close() })
		return "", nil
	case "write":
		return "", s.write(t, c)
	case "flush":
		return "", s.db.Flush()
	case "compact":
		return "", s.db.Compact(nil, nil)
	case "close":
		return "", s.db.Close()
	case "crash":
		old := s.fs
		s.fs = old.CrashClone()
		// The abandoned DB may still sync to the old filesystem as it
		// closes; the image is already taken.
		s.db.Close()
		return "", nil
	case "tear-wal":
		return "", s.tearWAL(t, c)
	case "scan":
		it, err := s.db.NewIter(s.bounds(c))
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for valid := it.First(); valid; valid = it.Next() {
			fmt.Fprintf(&b, "%s=%s\n", it.Key(), it.Value())
		}
		if err := it.Close(); err != nil {
			return "", err
		}
		if b.Len() == 0 {
			return "(empty)", nil
		}
		return b.String(), nil
	case "iter":
		return s.iter(t, c)
	case "lsm":
		var b strings.Builder
		for level, l := range s.db.Metrics().Levels {
			if l.Files > 0 {
				fmt.Fprintf(&b, "L%d: %d table(s)\n", level, l.Files)
			}
		}
		return b.String(), nil
	case "ls":
		names, err := s.fs.List(recoveryDir)
		slices.Sort(names)
		return strings.Join(names, "\n"), err
	}
	c.Fatalf(t, "unknown command")
	return "", nil
}

func (s *recoveryScript) bounds(c *datadriven.Case) *IterOptions {
	o := &IterOptions{}
	if v, ok := c.Arg("lower"); ok {
		o.LowerBound = []byte(v)
	}
	if v, ok := c.Arg("upper"); ok {
		o.UpperBound = []byte(v)
	}
	return o
}

func (s *recoveryScript) write(t testing.TB, c *datadriven.Case) error {
	wo := &WriteOptions{Sync: c.HasArg("sync")}
	b := s.db.NewBatch()
	for _, line := range strings.Split(c.Input, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "set":
			b.Set([]byte(f[1]), []byte(f[2]))
		case len(f) == 2 && f[0] == "del":
			b.Delete([]byte(f[1]))
		default:
			c.Fatalf(t, "bad write %q", line)
		}
		if !c.HasArg("batch") {
			if err := s.db.Apply(b, wo); err != nil {
				return err
			}
			b = s.db.NewBatch()
		}
	}
	if c.HasArg("batch") {
		return s.db.Apply(b, wo)
	}
	return nil
}

func (s *recoveryScript) iter(t testing.TB, c *datadriven.Case) (string, error) {
	it, err := s.db.NewIter(s.bounds(c))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.Split(c.Input, "\n") {
		valid, known := datadriven.Position(it, line)
		if !known {
			c.Fatalf(t, "unknown operation %q", line)
		}
		if valid {
			fmt.Fprintf(&b, "%s: %s=%s\n", line, it.Key(), it.Value())
		} else {
			fmt.Fprintf(&b, "%s: .\n", line)
		}
	}
	return b.String(), it.Close()
}

// tearWAL zeroes the last bytes of the newest WAL's records, synced, as a
// write torn by the crash that follows. WALs are preallocated, so the
// records end at the last nonzero byte (a record's last byte is payload,
// which the script's values keep nonzero) and zeros follow.
func (s *recoveryScript) tearWAL(t testing.TB, c *datadriven.Case) error {
	names, err := s.fs.List(recoveryDir)
	if err != nil {
		return err
	}
	var newest string
	var newestNum base.FileNum
	for _, n := range names {
		if typ, num, ok := base.ParseFilename(n); ok && typ == base.FileTypeLog && (newest == "" || num > newestNum) {
			newest, newestNum = n, num
		}
	}
	if newest == "" {
		c.Fatalf(t, "no WAL in %v", names)
	}
	name := s.fs.PathJoin(recoveryDir, newest)
	f, err := s.fs.Open(name)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	f.Close()
	end := len(bytes.TrimRight(data, "\x00"))
	n := c.IntArg(t, "bytes", 0)
	if err != nil || n > end {
		c.Fatalf(t, "reading %s (%d bytes of records) to tear %d: %v", name, end, n, err)
	}
	clear(data[end-n : end])
	w, err := s.fs.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	return w.Close()
}
