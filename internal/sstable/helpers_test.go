package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// memFile is a byte-slice vfs.File: tables built by tests live in one, and
// the corruption and fuzz tests open arbitrary bytes through one.
type memFile struct {
	data   []byte
	pos    int
	closed bool
}

func (m *memFile) Read(p []byte) (int, error) {
	if m.pos >= len(m.data) {
		return 0, io.EOF
	}
	n := copy(p, m.data[m.pos:])
	m.pos += n
	return n, nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// mappedBytes lets a Reader opened with Map read the table through its
// mapping code.
func (m *memFile) mappedBytes() []byte { return m.data }

func (m *memFile) Write(p []byte) (int, error) {
	m.data = append(m.data, p...)
	return len(p), nil
}

func (m *memFile) Close() error {
	if m.closed {
		return errors.New("already closed")
	}
	m.closed = true
	return nil
}

func (m *memFile) Sync() error { return nil }

func (m *memFile) Stat() (os.FileInfo, error) { return memInfo(len(m.data)), nil }

type memInfo int64

func (s memInfo) Name() string       { return "mem" }
func (s memInfo) Size() int64        { return int64(s) }
func (s memInfo) Mode() fs.FileMode  { return 0o644 }
func (s memInfo) ModTime() time.Time { return time.Time{} }
func (s memInfo) IsDir() bool        { return false }
func (s memInfo) Sys() any           { return nil }

// entry is one key/value of the model.
type entry struct {
	key   base.InternalKey
	value []byte
}

// randomEntries returns n or so sorted entries over a mix of user keys:
// shared prefixes, varied lengths, 0xff bytes (which stress separator
// shortening), the empty key, and several versions per key.
func randomEntries(rng *rand.Rand, n int) []entry {
	users := map[string]bool{"": true}
	for len(users) < n/2 {
		var k []byte
		switch rng.IntN(4) {
		case 0:
			k = fmt.Appendf(nil, "key%06d", rng.IntN(n*10))
		case 1:
			k = fmt.Appendf(nil, "key%06d/%x", rng.IntN(n*10), rng.Uint32())
		case 2:
			k = []byte{byte(rng.IntN(3)), 0xff, 0xff}
			for j := rng.IntN(4); j > 0; j-- {
				k = append(k, byte(rng.IntN(256)))
			}
		default:
			k = make([]byte, 1+rng.IntN(40))
			for j := range k {
				k[j] = byte('a' + rng.IntN(3))
			}
		}
		users[string(k)] = true
	}
	keys := make([]string, 0, len(users))
	for k := range users {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []entry
	for _, k := range keys {
		versions := 1 + rng.IntN(3)
		seqs := map[base.SeqNum]bool{}
		for len(seqs) < versions {
			seqs[base.SeqNum(rng.IntN(2*n))] = true
		}
		sorted := make([]base.SeqNum, 0, versions)
		for s := range seqs {
			sorted = append(sorted, s)
		}
		slices.Sort(sorted)
		slices.Reverse(sorted)
		for _, s := range sorted {
			kind := base.KindSet
			var v []byte
			switch r := rng.IntN(10); {
			case r < 2:
				kind = base.KindDelete
			case r < 3:
				kind = base.KindSetExpiry
				v = base.EncodeExpiryValue(nil, rng.Int64(), []byte("exp"))
			case r < 4:
				v = bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(3000))
			default:
				v = fmt.Appendf(nil, "value-%d-%s", s, k)
			}
			out = append(out, entry{base.MakeInternalKey([]byte(k), s, kind), v})
		}
	}
	return out
}

// buildTable writes entries with opts and returns the file bytes and the
// writer's metadata.
func buildTable(t testing.TB, entries []entry, opts WriterOptions) ([]byte, WriterMetadata) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatalf("Add(%s): %v", e.key, err)
		}
	}
	md, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !f.closed {
		t.Fatal("writer did not close the file")
	}
	return f.data, md
}

func openTable(data []byte, opts ReaderOptions) (*Reader, error) {
	return NewReader(&memFile{data: data}, int64(len(data)), opts)
}

// model answers the questions the reader answers, from a sorted slice.
type model []entry

func (m model) get(userKey []byte, readSeq base.SeqNum) (entry, bool) {
	i := sort.Search(len(m), func(i int) bool {
		return base.CompareInternal(m[i].key, base.InternalKey{UserKey: userKey, Trailer: ^uint64(0)}) >= 0
	})
	for ; i < len(m) && bytes.Equal(m[i].key.UserKey, userKey); i++ {
		if base.Visible(m[i].key.Seq(), readSeq) {
			return m[i], true
		}
	}
	return entry{}, false
}

// bounded returns the entries with user keys in [lower, upper).
func (m model) bounded(lower, upper []byte) model {
	lo := sort.Search(len(m), func(i int) bool { return lower == nil || bytes.Compare(m[i].key.UserKey, lower) >= 0 })
	hi := sort.Search(len(m), func(i int) bool { return upper != nil && bytes.Compare(m[i].key.UserKey, upper) >= 0 })
	if hi < lo {
		hi = lo
	}
	return m[lo:hi]
}

// cursor mirrors the table iterator's positions over a bounded model: -1
// is before the start, len is after the end.
type cursor struct {
	m   model
	pos int
}

func (c *cursor) valid() bool { return c.pos >= 0 && c.pos < len(c.m) }

func (c *cursor) seekGE(k []byte) {
	c.pos = sort.Search(len(c.m), func(i int) bool { return bytes.Compare(c.m[i].key.UserKey, k) >= 0 })
}

func (c *cursor) seekLT(k []byte) {
	c.pos = sort.Search(len(c.m), func(i int) bool { return bytes.Compare(c.m[i].key.UserKey, k) >= 0 }) - 1
}

func (c *cursor) first() {
	c.pos = 0
}

func (c *cursor) last() {
	c.pos = len(c.m) - 1
}

func (c *cursor) next() {
	switch {
	case c.pos == -1:
		c.first()
	case c.pos < len(c.m):
		c.pos++
	}
}

func (c *cursor) prev() {
	switch {
	case c.pos == len(c.m):
		c.last()
	case c.pos >= 0:
		c.pos--
	}
}

// checkPos compares an iterator's state with the cursor's.
func checkPos(t *testing.T, what string, it base.InternalIterator, ok bool, c *cursor) {
	t.Helper()
	if err := it.Error(); err != nil {
		t.Fatalf("%s: error %v", what, err)
	}
	if ok != c.valid() || it.Valid() != ok {
		var want string
		if c.valid() {
			want = c.m[c.pos].key.String()
		}
		t.Fatalf("%s: ok=%v valid=%v, model valid=%v (pos %d of %d, %s)", what, ok, it.Valid(), c.valid(), c.pos, len(c.m), want)
	}
	if !ok {
		return
	}
	e := c.m[c.pos]
	if base.CompareInternal(it.Key(), e.key) != 0 || it.Key().Trailer != e.key.Trailer {
		t.Fatalf("%s: key %s, want %s", what, it.Key(), e.key)
	}
	if !bytes.Equal(it.Value(), e.value) {
		t.Fatalf("%s: key %s: value %q, want %q", what, e.key, it.Value(), e.value)
	}
}
