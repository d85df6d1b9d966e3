package iter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/testutil/datadriven"
)

// parseEntry reads "key#seq,KIND" or "key#seq,KIND=value"; KIND is SET,
// DEL or SETEX as base.Kind prints it.
func parseEntry(t testing.TB, c *datadriven.Case, s string) Entry {
	t.Helper()
	k, value, _ := strings.Cut(s, "=")
	user, trailer, ok := strings.Cut(k, "#")
	seqStr, kindStr, ok2 := strings.Cut(trailer, ",")
	seq, err := strconv.ParseUint(seqStr, 10, 56)
	if !ok || !ok2 || err != nil {
		c.Fatalf(t, "bad entry %q, want key#seq,KIND[=value]", s)
	}
	for kind := base.Kind(0); kind <= base.KindMax; kind++ {
		if kind.String() == kindStr {
			return Entry{Key: base.MakeInternalKey([]byte(user), base.SeqNum(seq), kind), Value: []byte(value)}
		}
	}
	c.Fatalf(t, "bad kind in %q", s)
	return Entry{}
}

// parseEntries reads space-separated entries, which must be in
// base.CompareInternal order as every iterator's source must be.
func parseEntries(t testing.TB, c *datadriven.Case, s string) []Entry {
	t.Helper()
	var es []Entry
	for _, f := range strings.Fields(s) {
		e := parseEntry(t, c, f)
		if len(es) > 0 && base.CompareInternal(es[len(es)-1].Key, e.Key) >= 0 {
			c.Fatalf(t, "entry %s is not after %s", f, formatKey(es[len(es)-1].Key))
		}
		es = append(es, e)
	}
	return es
}

func formatKey(k base.InternalKey) string {
	return fmt.Sprintf("%s#%d,%s", k.UserKey, k.Seq(), k.Kind())
}

// errOpen is what a level file marked "!" returns when opened.
var errOpen = errors.New("cannot open")

// scriptLevel is a level iterator's files with a log of the files it
// opens and closes, which the script prints to show laziness.
type scriptLevel struct {
	files  []*testFile
	broken map[int]bool // files whose open fails
	log    []string
}

func (l *scriptLevel) open(f *testFile) (base.InternalIterator, error) {
	l.log = append(l.log, fmt.Sprintf("open %d", f.num))
	if l.broken[f.num] {
		return nil, fmt.Errorf("file %d: %w", f.num, errOpen)
	}
	return &loggedIter{InternalIterator: NewSliceIter(f.entries), l: l, num: f.num}, nil
}

// loggedIter records its Close in the level's log.
type loggedIter struct {
	base.InternalIterator
	l   *scriptLevel
	num int
}

func (it *loggedIter) Close() error {
	it.l.log = append(it.l.log, fmt.Sprintf("close %d", it.num))
	return it.InternalIterator.Close()
}

// parseLevel reads one file per line, "smallest-largest: entries", in
// level order; "smallest-largest!" is a file whose open fails. A file's
// bounds may be wider than its entries, as after garbage collection.
func parseLevel(t testing.TB, c *datadriven.Case) *scriptLevel {
	t.Helper()
	l := &scriptLevel{broken: map[int]bool{}}
	for _, line := range strings.Split(c.Input, "\n") {
		bounds, entries, ok := strings.Cut(line, ":")
		lo, hi, ok2 := strings.Cut(strings.TrimSuffix(bounds, "!"), "-")
		if !ok || !ok2 {
			c.Fatalf(t, "bad file line %q, want smallest-largest: entries", line)
		}
		f := &testFile{num: len(l.files), smallest: []byte(lo), largest: []byte(hi)}
		l.broken[f.num] = strings.HasSuffix(bounds, "!")
		f.entries = parseEntries(t, c, entries)
		l.files = append(l.files, f)
	}
	return l
}

// runOps applies the positioning calls listed in c.Input to it, one per
// line, and prints where each leaves it: "key#seq,KIND[=value]", "." when
// invalid, the sticky error if any, and the level's open/close log.
func runOps(t testing.TB, c *datadriven.Case, it base.InternalIterator, l *scriptLevel) string {
	var b strings.Builder
	for _, line := range strings.Split(c.Input, "\n") {
		valid, known := datadriven.Position(it, line)
		switch {
		case line == "close":
			fmt.Fprintf(&b, "close: err=%v", it.Close())
		case !known:
			c.Fatalf(t, "unknown operation %q", line)
		}
		if known {
			if valid != it.Valid() {
				c.Fatalf(t, "%s returned %v but Valid() is %v", line, valid, it.Valid())
			}
			fmt.Fprintf(&b, "%s: ", line)
			if valid {
				b.WriteString(formatKey(it.Key()))
				if v := it.Value(); len(v) > 0 {
					fmt.Fprintf(&b, "=%s", v)
				}
			} else {
				b.WriteString(".")
			}
			if err := it.Error(); err != nil {
				fmt.Fprintf(&b, " err=%v", err)
			}
		}
		if l != nil && len(l.log) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(l.log, ", "))
			l.log = l.log[:0]
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestIterDataDriven runs testdata/iter. Commands:
//
//	merge               one child per input line: entries in order
//	level               one file per input line: "smallest-largest: entries";
//	                    "smallest-largest!:" is a file that fails to open
//	iter                positioning calls, one per line: first, last, next,
//	                    prev, seek-ge KEY, seek-lt KEY, close; on the
//	                    iterator the last merge or level command built
//
// Entries are written key#seq,KIND[=value].
func TestIterDataDriven(t *testing.T) {
	var it base.InternalIterator
	var level *scriptLevel
	datadriven.RunFile(t, "testdata/iter", func(t testing.TB, c *datadriven.Case) string {
		switch c.Cmd {
		case "merge":
			var children []base.InternalIterator
			for _, line := range strings.Split(c.Input, "\n") {
				children = append(children, NewSliceIter(parseEntries(t, c, line)))
			}
			it, level = NewMergingIter(children...), nil
			return ""
		case "level":
			level = parseLevel(t, c)
			it = NewLevelIter(level.files, testFileBounds, level.open)
			return ""
		case "iter":
			if it == nil {
				c.Fatalf(t, "no iterator defined")
			}
			return runOps(t, c, it, level)
		}
		c.Fatalf(t, "unknown command")
		return ""
	})
}
