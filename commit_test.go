package lsmgo

import (
	"fmt"
	"runtime"
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

// TestSyncWaiterNotStranded: a writer woken to run the next fsync that
// finds itself covered already (a rotation's sync, or the interval syncer,
// moved the synced position meanwhile) must hand the turn on; returning
// without it left the other waiters asleep with no one syncing, until some
// later synced write came by (a reviewer saw 53 such stalls in 1,500
// rounds of mixed synced and interval writes).
func TestSyncWaiterNotStranded(t *testing.T) {
	var l walWriter
	sw := &l.syncWait
	sw.syncing = true // a syncer is inside l.sync()
	waiters := func() int {
		sw.mu.Lock()
		defer sw.mu.Unlock()
		return len(sw.waiters)
	}
	a, b := make(chan error, 1), make(chan error, 1)
	go func() { a <- l.waitSynced(100, make(chan struct{}, 1)) }()
	for waiters() != 1 {
		runtime.Gosched()
	}
	go func() { b <- l.waitSynced(200, make(chan struct{}, 1)) }()
	for waiters() != 2 {
		runtime.Gosched()
	}
	// The syncer's fsync covered 50: it wakes A, the first waiter it did
	// not cover, to sync next, and keeps B asleep. Before A runs, another
	// sync (a rotation's) covers both.
	sw.mu.Lock()
	l.synced.Store(50)
	sw.syncing = false
	l.wakeSyncWaitersLocked(false)
	l.synced.Store(300)
	sw.mu.Unlock()
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the second waiter was never woken: synced %d, syncing %v, %d waiting", l.synced.Load(), sw.syncing, waiters())
	}
}
