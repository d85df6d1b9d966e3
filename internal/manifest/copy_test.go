package manifest

import (
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestWriteCopy copies the state of a version set that has seen random
// edits and checks that Load of the copy, after a crash, finds exactly
// that state and hands out only numbers above the source's.
func TestWriteCopy(t *testing.T) {
	mem := newMemDir(t, "/db")
	vs, err := Create(Options{FS: mem, Dir: "/db", MaxManifestSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	g := &editGen{rng: rand.New(rand.NewPCG(3, 4))}
	m := newModel()
	for range 50 {
		e := g.valid(vs, m)
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
		m.apply(e)
	}
	v, logNum, lastSeq := vs.CurrentState()
	defer v.Unref()
	want := describe(v.Files, logNum, lastSeq)
	next := vs.NextFileNum()
	if err := mem.MkdirAll("/copy", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteCopy(mem, "/copy", v, logNum, lastSeq, next); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(mem, "/"); err != nil {
		t.Fatal(err)
	}
	cp, err := Load(Options{FS: mem.CrashClone(), Dir: "/copy"})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if got := vsState(t, cp); got != want {
		t.Fatalf("the copy loads as\n%s\nwant\n%s", got, want)
	}
	if n := cp.NewFileNum(); n <= next {
		t.Fatalf("the copy hands out file number %d; the source had used up to %d", n, next-1)
	}
}
