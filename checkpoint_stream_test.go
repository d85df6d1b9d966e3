package lsmgo

import (
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestStreamCheckpoint streams a checkpoint while a writer runs and a
// compaction rewrites the tree mid-stream, writes the files it gets into
// a directory, and checks that the copy opens, passes Check, ends at the
// sequence number returned, and holds exactly the writer's first m
// operations for the m that sequence number names.
func TestStreamCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	opts := ckptOptions(mem)
	db := openTestDB(t, "/db", opts)
	const ops = 1500
	for i := range ops / 3 {
		if err := ckptApply(db, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	var acked atomic.Int64
	acked.Store(ops / 3)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := ops / 3; i < ops; i++ {
			if err := ckptApply(db, 0, i); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
			acked.Store(int64(i + 1))
		}
	})
	before := int(acked.Load())
	if err := mem.MkdirAll("/copy", 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	compacted := false
	lastSeq, err := db.StreamCheckpoint(func(name string, size int64, r io.Reader) error {
		if !compacted {
			// The files already pinned must survive a compaction
			// that replaces them.
			compacted = true
			if err := db.Compact(nil, nil); err != nil {
				return err
			}
		}
		names = append(names, name)
		f, err := mem.Create(mem.PathJoin("/copy", name))
		if err != nil {
			return err
		}
		if n, err := io.Copy(f, r); err != nil || n != size {
			t.Errorf("%s: read %d of %d bytes: %v", name, n, size, err)
		}
		return syncAndClose(f)
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if names[len(names)-1] != "CURRENT" {
		t.Fatalf("files sent %v: CURRENT must come last", names)
	}
	// Operation i writes one key, and also deletes one when i%3 == 2.
	m := -1
	for n := before; n <= ops; n++ {
		if uint64(n+n/3) == lastSeq {
			m = n
		}
	}
	if m < 0 {
		t.Fatalf("lastSeq %d is no operation boundary from %d on", lastSeq, before)
	}
	got := readCheckpoint(t, "/copy", opts)
	if !maps.Equal(got, ckptState(0, m)) {
		t.Fatalf("the copy holds %d keys, not the first %d operations' %d", len(got), m, len(ckptState(0, m)))
	}
	copyDB := openTestDB(t, "/copy", opts)
	if copyDB.LastSeq() != lastSeq {
		t.Fatalf("the copy's LastSeq %d, StreamCheckpoint said %d", copyDB.LastSeq(), lastSeq)
	}
	t.Logf("%d files, copy at operation %d (seq %d), %d acknowledged before", len(names), m, lastSeq, before)
}
