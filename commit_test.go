package lsmgo

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// TestGroupCommitSharesSyncs runs many writers that each wait for an fsync
// of the WAL, on a filesystem whose WAL fsync takes a millisecond: writes
// that arrive while one fsync runs must share the next, so there are far
// fewer fsyncs than writes, and every acknowledged write reads back.
func TestGroupCommitSharesSyncs(t *testing.T) {
	slowSync := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && strings.HasSuffix(path, ".log") {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	db := openTestDB(t, "/db", &Options{FS: errorfs.Wrap(vfs.NewMem(), slowSync), Sync: SyncAlways})
	const writers, each = 16, 40
	before, groupsBefore := db.Metrics().WAL.Syncs, db.Metrics().Commits.Groups
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				k := fmt.Sprintf("w%02d-%03d", w, i)
				if err := db.Set([]byte(k), []byte(k), nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	syncs := db.Metrics().WAL.Syncs - before
	t.Logf("%d synced writes took %d WAL fsyncs", writers*each, syncs)
	if syncs == 0 || syncs > writers*each/4 {
		t.Errorf("%d synced writes took %d WAL fsyncs; concurrent writers should share them", writers*each, syncs)
	}
	// A leader waits for the fsync in progress before it writes, so the
	// writers that queue meanwhile share its write too.
	groups := db.Metrics().Commits.Groups - groupsBefore
	t.Logf("%d synced writes took %d commit groups", writers*each, groups)
	if groups > writers*each/4 {
		t.Errorf("%d synced writes took %d commit groups; writers queued during an fsync should share one", writers*each, groups)
	}
	for w := range writers {
		for i := range each {
			k := fmt.Sprintf("w%02d-%03d", w, i)
			if v, err := db.Get([]byte(k)); err != nil || string(v) != k {
				t.Fatalf("Get(%s) = %q, %v", k, v, err)
			}
		}
	}
}
