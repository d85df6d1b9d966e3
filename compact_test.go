package lsmgo

import (
	"fmt"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/manifest"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestCompactAllWritesOnce checks that Compact(nil, nil) on a DB whose data
// sits in L0 moves it to the last level in one rewrite, not one per level,
// and that every key reads back afterwards.
func TestCompactAllWritesOnce(t *testing.T) {
	db := openTestDB(t, "/db", &Options{FS: vfs.NewMem(), Sync: SyncNone, L0CompactionThreshold: 100, L0StopWritesThreshold: 200})
	const keys = 20000
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	for i := range keys {
		if err := db.Set(key(i), []byte(fmt.Sprintf("value of %d, padded to be worth compressing a little", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := db.Metrics()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	after := db.Metrics()
	l0Bytes := int64(before.Levels[0].Bytes)
	written := after.Compaction.BytesWritten - before.Compaction.BytesWritten
	if l0Bytes == 0 || written > 2*l0Bytes {
		t.Errorf("Compact(nil, nil) wrote %d bytes for %d bytes of L0: more than one rewrite", written, l0Bytes)
	}
	for level := range manifest.NumLevels - 1 {
		if after.Levels[level].Files != 0 {
			t.Errorf("L%d still has %d files after Compact(nil, nil)", level, after.Levels[level].Files)
		}
	}
	for i := range keys {
		if _, err := db.Get(key(i)); err != nil {
			t.Fatalf("Get(%s) after Compact: %v", key(i), err)
		}
	}
}
