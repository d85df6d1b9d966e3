package manifest

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/testutil/datadriven"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// scriptFile reads "num:smallest-largest[@seqlo-seqhi]"; the sequence
// numbers default to 1-1. The smallest key carries seqhi and the largest
// seqlo, so a one-key file's bounds are in order.
func scriptFile(t testing.TB, c *datadriven.Case, s string) *FileMetadata {
	t.Helper()
	desc, seqs, hasSeqs := strings.Cut(s, "@")
	numStr, keys, ok := strings.Cut(desc, ":")
	lo, hi, ok2 := strings.Cut(keys, "-")
	num, err := strconv.ParseUint(numStr, 10, 64)
	if !ok || !ok2 || err != nil {
		c.Fatalf(t, "bad file %q, want num:smallest-largest[@seqlo-seqhi]", s)
	}
	seqLo, seqHi := uint64(1), uint64(1)
	if hasSeqs {
		a, b, ok := strings.Cut(seqs, "-")
		var errA, errB error
		seqLo, errA = strconv.ParseUint(a, 10, 56)
		seqHi, errB = strconv.ParseUint(b, 10, 56)
		if !ok || errA != nil || errB != nil {
			c.Fatalf(t, "bad sequence numbers in %q", s)
		}
	}
	return &FileMetadata{
		FileNum:     base.FileNum(num),
		Size:        100,
		Smallest:    base.MakeInternalKey([]byte(lo), base.SeqNum(seqHi), base.KindSet),
		Largest:     base.MakeInternalKey([]byte(hi), base.SeqNum(seqLo), base.KindSet),
		SmallestSeq: base.SeqNum(seqLo),
		LargestSeq:  base.SeqNum(seqHi),
	}
}

func formatFile(f *FileMetadata) string {
	return fmt.Sprintf("%d:%s-%s@%d-%d", f.FileNum, f.Smallest.UserKey, f.Largest.UserKey, f.SmallestSeq, f.LargestSeq)
}

func parseLevelName(t testing.TB, c *datadriven.Case, s string) int {
	t.Helper()
	level, err := strconv.Atoi(strings.TrimPrefix(s, "L"))
	if err != nil || !strings.HasPrefix(s, "L") {
		c.Fatalf(t, "bad level %q", s)
	}
	return level
}

// parseEdit reads an edit: log=N and seq=N from the command line, and
// input lines "add Ln file" and "del Ln num".
func parseEdit(t testing.TB, c *datadriven.Case) *VersionEdit {
	t.Helper()
	e := &VersionEdit{
		LogNum:  base.FileNum(c.IntArg(t, "log", 0)),
		LastSeq: base.SeqNum(c.IntArg(t, "seq", 0)),
	}
	for _, line := range strings.Split(c.Input, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			c.Fatalf(t, "bad edit line %q", line)
		}
		level := parseLevelName(t, c, f[1])
		switch f[0] {
		case "add":
			e.NewFiles = append(e.NewFiles, NewFile{Level: level, Meta: scriptFile(t, c, f[2])})
		case "del":
			num, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				c.Fatalf(t, "bad file number in %q", line)
			}
			e.DeletedFiles = append(e.DeletedFiles, DeletedFile{Level: level, FileNum: base.FileNum(num)})
		default:
			c.Fatalf(t, "bad edit line %q", line)
		}
	}
	return e
}

// scriptState prints what a VersionSet holds: its numbers, then each
// non-empty level in Version order.
func scriptState(vs *VersionSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "manifest=%d next=%d log=%d seq=%d\n",
		vs.ManifestFileNum(), vs.nextFileNum.Load(), vs.LogNum(), vs.LastSeq())
	v := vs.Current()
	defer v.Unref()
	for level, files := range v.Files {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:", level)
		for _, f := range files {
			fmt.Fprintf(&b, " %s", formatFile(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// manifestScript is the state a manifest script works on.
type manifestScript struct {
	fs       *vfs.MemFS
	vs       *VersionSet
	held     map[string]*Version
	obsolete []string
}

const scriptDir = "/db"

func (s *manifestScript) opts(t testing.TB, c *datadriven.Case) Options {
	return Options{
		FS: s.fs, Dir: scriptDir, MaxManifestSize: int64(c.IntArg(t, "max-size", 0)),
		OnObsoleteFile: func(n base.FileNum) { s.obsolete = append(s.obsolete, strconv.Itoa(int(n))) },
	}
}

// TestManifestDataDriven runs testdata/manifest. Commands:
//
//	create [max-size=N]        a new version set in an empty in-memory dir
//	apply [log=N] [seq=N]      LogAndApply an edit of "add Ln num:lo-hi[@s-s]"
//	                           and "del Ln num" lines; prints the state
//	ref NAME / unref NAME      hold and release the current Version
//	new-file-num               NewFileNum
//	ls                         the directory's files and sizes
//	truncate FILE bytes=N      cut N bytes off the end of FILE, as a torn
//	                           write; FILE "manifest" is the current one
//	crash                      close the version set and keep only what was
//	                           synced (vfs.MemFS.CrashClone)
//	load [max-size=N]          Load the version set again; prints the state
//
// Every command also prints the files reported obsolete while it ran.
func TestManifestDataDriven(t *testing.T) {
	s := &manifestScript{held: map[string]*Version{}}
	datadriven.RunFile(t, "testdata/manifest", func(t testing.TB, c *datadriven.Case) string {
		out := s.run(t, c)
		if len(s.obsolete) > 0 {
			out += "obsolete: " + strings.Join(s.obsolete, " ") + "\n"
			s.obsolete = s.obsolete[:0]
		}
		return out
	})
}

func (s *manifestScript) run(t testing.TB, c *datadriven.Case) string {
	var err error
	switch c.Cmd {
	case "create":
		s.fs = newMemDir(t, scriptDir)
		if s.vs, err = Create(s.opts(t, c)); err != nil {
			return "error: " + err.Error()
		}
		return scriptState(s.vs)
	case "apply":
		if err := s.vs.LogAndApply(parseEdit(t, c)); err != nil {
			return "error: " + err.Error()
		}
		return scriptState(s.vs)
	case "ref":
		s.held[c.Fields[0]] = s.vs.Current()
		return ""
	case "unref":
		s.held[c.Fields[0]].Unref()
		delete(s.held, c.Fields[0])
		return ""
	case "new-file-num":
		return strconv.Itoa(int(s.vs.NewFileNum()))
	case "ls":
		var b strings.Builder
		for _, name := range listDir(t, s.fs, scriptDir) {
			st, err := s.fs.Stat(s.fs.PathJoin(scriptDir, name))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d\n", name, st.Size())
		}
		return b.String()
	case "truncate":
		name := c.Fields[0]
		if name == "manifest" {
			name = base.MakeFilename(base.FileTypeManifest, s.vs.ManifestFileNum())
		}
		truncate(t, c, s.fs, s.fs.PathJoin(scriptDir, name), c.IntArg(t, "bytes", 0))
		return ""
	case "crash":
		if err := s.vs.Close(); err != nil {
			t.Fatal(err)
		}
		s.fs = s.fs.CrashClone()
		clear(s.held)
		return ""
	case "load":
		if s.vs, err = Load(s.opts(t, c)); err != nil {
			return "error: " + err.Error()
		}
		return scriptState(s.vs)
	}
	c.Fatalf(t, "unknown command")
	return ""
}

// truncate rewrites the file at name without its last n bytes, synced, so
// that a crash keeps the cut.
func truncate(t testing.TB, c *datadriven.Case, fs vfs.FS, name string, n int) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		c.Fatalf(t, "%v", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || n > len(data) {
		c.Fatalf(t, "reading %s (%d bytes) to cut %d: %v", name, len(data), n, err)
	}
	w, err := fs.Create(name)
	if err == nil {
		_, err = w.Write(data[:len(data)-n])
	}
	if err == nil {
		err = w.Sync()
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}
