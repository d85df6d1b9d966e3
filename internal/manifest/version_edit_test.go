package manifest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

func ikey(user string, seq base.SeqNum) base.InternalKey {
	return base.MakeInternalKey([]byte(user), seq, base.KindSet)
}

func meta(num base.FileNum, lo, hi string, seqLo, seqHi base.SeqNum) *FileMetadata {
	return &FileMetadata{
		FileNum: num, Size: uint64(num) * 100,
		Smallest: ikey(lo, seqHi), Largest: ikey(hi, seqLo),
		SmallestSeq: seqLo, LargestSeq: seqHi,
	}
}

func randomEdit(rng *rand.Rand) *VersionEdit {
	e := &VersionEdit{}
	if rng.IntN(2) == 0 {
		e.LogNum = base.FileNum(rng.Uint64N(1 << 40))
	}
	if rng.IntN(2) == 0 {
		e.NextFileNum = base.FileNum(rng.Uint64())
	}
	if rng.IntN(2) == 0 {
		e.LastSeq = base.SeqNum(rng.Uint64N(uint64(base.SeqNumMax)))
	}
	for range rng.IntN(4) {
		e.DeletedFiles = append(e.DeletedFiles, DeletedFile{Level: rng.IntN(NumLevels), FileNum: base.FileNum(rng.Uint64N(1000))})
	}
	for range rng.IntN(4) {
		lo := fmt.Sprintf("k%d", rng.IntN(1000))
		hi := lo + strings.Repeat("z", rng.IntN(3))
		seqLo := base.SeqNum(rng.Uint64N(1000))
		m := meta(base.FileNum(1+rng.Uint64N(1000)), lo, hi, seqLo, seqLo+base.SeqNum(rng.Uint64N(100)))
		if rng.IntN(5) == 0 {
			m.Smallest.UserKey = []byte{} // empty user keys are legal
		}
		if rng.IntN(3) == 0 {
			blobNum := base.FileNum(0)
			for range 1 + rng.IntN(3) {
				blobNum += base.FileNum(1 + rng.Uint64N(50))
				m.BlobRefs = append(m.BlobRefs, BlobRef{FileNum: blobNum, Bytes: rng.Uint64N(1 << 40)})
			}
		}
		e.NewFiles = append(e.NewFiles, NewFile{Level: rng.IntN(NumLevels), Meta: m})
	}
	return e
}

func TestEditRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := range 2000 {
		e := randomEdit(rng)
		var got VersionEdit
		if err := got.Decode(e.Encode()); err != nil {
			t.Fatalf("seed %d edit %d: %v", seed, i, err)
		}
		if !editsEqual(e, &got) {
			t.Fatalf("seed %d edit %d: round trip changed\n%+v\nto\n%+v", seed, i, e, &got)
		}
	}
}

// editsEqual compares edits by value, treating nil and empty lists alike.
func editsEqual(a, b *VersionEdit) bool {
	norm := func(e *VersionEdit) VersionEdit {
		c := *e
		if len(c.DeletedFiles) == 0 {
			c.DeletedFiles = nil
		}
		c.NewFiles = nil
		for _, n := range e.NewFiles {
			m := *n.Meta
			m.Smallest.UserKey = append([]byte{}, m.Smallest.UserKey...)
			m.Largest.UserKey = append([]byte{}, m.Largest.UserKey...)
			c.NewFiles = append(c.NewFiles, NewFile{Level: n.Level, Meta: &m})
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func TestEditDecodeCopies(t *testing.T) {
	e := &VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(5, "a", "b", 1, 2)}}}
	buf := e.Encode()
	var got VersionEdit
	if err := got.Decode(buf); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 0xff
	}
	if string(got.NewFiles[0].Meta.Smallest.UserKey) != "a" {
		t.Fatal("decoded keys alias the input buffer")
	}
}

func TestEditDecodeErrors(t *testing.T) {
	good := (&VersionEdit{LogNum: 3, NewFiles: []NewFile{{Level: 2, Meta: meta(7, "a", "c", 1, 4)}}}).Encode()
	tests := map[string][]byte{
		"empty":              {},
		"future version":     {2},
		"unknown tag":        {editVersion, 99, 1},
		"truncated varint":   {editVersion, tagLogNum, 0x80},
		"missing value":      {editVersion, tagLastSeq},
		"repeated scalar":    {editVersion, tagLogNum, 1, tagLogNum, 2},
		"level out of range": {editVersion, tagDeletedFile, NumLevels, 1},
		"key runs past end":  {editVersion, tagNewFile, 1, 5, 10, 200, 1},
		"key too short":      {editVersion, tagNewFile, 1, 5, 10, 3, 'a', 'b', 'c'},
		"truncated new file": good[:len(good)-1],
		"smallest > largest": (&VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(7, "z", "a", 1, 4)}}}).Encode(),
		"seq bounds swapped": (&VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(7, "a", "z", 9, 4)}}}).Encode(),
		"file number zero":   (&VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(0, "a", "z", 1, 4)}}}).Encode(),
	}
	for name, b := range tests {
		var e VersionEdit
		if err := e.Decode(b); err == nil {
			t.Errorf("%s: decoded without error: %+v", name, e)
		}
	}
	var e VersionEdit
	if err := e.Decode(good); err != nil {
		t.Fatalf("good edit: %v", err)
	}
}

func FuzzVersionEditDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 8 {
		f.Add(randomEdit(rng).Encode())
	}
	f.Add([]byte{})
	f.Add([]byte{editVersion})
	f.Add([]byte{editVersion, tagNewFile, 1, 5, 10, 9, 'a', 1, 0, 0, 0, 0, 0, 0, 0, 9, 'b', 1, 0, 0, 0, 0, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e VersionEdit
		if err := e.Decode(b); err != nil {
			return
		}
		// Whatever decodes must survive a re-encode unchanged.
		var again VersionEdit
		if err := again.Decode(e.Encode()); err != nil {
			t.Fatalf("re-encoded edit does not decode: %v", err)
		}
		if !editsEqual(&e, &again) {
			t.Fatalf("re-encode changed the edit\n%+v\n%+v", &e, &again)
		}
	})
}
