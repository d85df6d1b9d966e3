package lsmgo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// TestCommitAsyncPowerLoss: writers mixing CommitAsync and Apply under
// SyncAlways, each seeing its own write at once after CommitAsync; once
// every Wait has returned, a power loss keeps every write.
func TestCommitAsyncPowerLoss(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	mem := vfs.NewMem()
	db, err := Open("/db", durOptions(mem, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 8, 60
	want := make([]map[string][]byte, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		want[w] = map[string][]byte{}
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for i := range perWriter {
				k := fmt.Sprintf("w%d-k%03d", w, rng.IntN(perWriter))
				v := fmt.Appendf(nil, "%s=%d", k, i)
				b := db.NewBatch()
				b.Set([]byte(k), v)
				if rng.IntN(4) == 0 {
					if err := db.Apply(b, nil); err != nil {
						errs <- err
						return
					}
				} else {
					p, err := db.CommitAsync(b, nil)
					if err != nil {
						errs <- err
						return
					}
					// Visible before Wait: a lock released here would
					// let the next writer of k read this value.
					if got, err := db.Get([]byte(k)); err != nil || string(got) != string(v) {
						errs <- fmt.Errorf("Get(%s) after CommitAsync = %q, %v; want %q", k, got, err, v)
						return
					}
					if err := p.Wait(); err != nil {
						errs <- err
						return
					}
				}
				want[w][k] = v
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	img := mem.CrashClone()
	db.Close()
	db2, err := Open("/db", durOptions(img, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for _, m := range want {
		checkKeys(t, db2, m)
	}
}

// TestCommitAsyncNothingToWait: under SyncInterval a committed batch is as
// durable as Apply makes it once CommitAsync returns; Wait returns nil at
// once, and a batch that refused a write is not applied.
func TestCommitAsyncNothingToWait(t *testing.T) {
	db, err := Open("/db", durOptions(vfs.NewMem(), SyncInterval(3600e9)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	b.Set([]byte("k"), []byte("v"))
	p, err := db.CommitAsync(b, nil)
	if err != nil || p != (Pending{}) {
		t.Fatalf("CommitAsync = %+v, %v; want a zero Pending", p, err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	bad := db.NewBatch()
	bad.Set([]byte("k"), []byte("other"))
	bad.Set(make([]byte, MaxEntrySize+1), nil)
	if _, err := db.CommitAsync(bad, nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("CommitAsync of a batch holding a refused write: %v, want ErrValueTooLarge", err)
	}
	if got, err := db.Get([]byte("k")); err != nil || string(got) != "v" {
		t.Fatalf("Get(k) = %q, %v after a refused batch; want v", got, err)
	}
}

// TestCommitAsyncFsyncFailureStops: a batch is visible before its fsync;
// when that fsync fails, Wait reports it, the DB refuses writes, and
// Resume refuses too (the failed write was read, so only a reopen may
// decide what survived). Reopened, every write whose Wait returned nil is
// there.
func TestCommitAsyncFsyncFailureStops(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, ".log")
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, toggle), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string][]byte{}
	commit := func(k string) (Pending, error) {
		b := db.NewBatch()
		b.Set([]byte(k), []byte(k))
		return db.CommitAsync(b, nil)
	}
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		p, err := commit(k)
		if err == nil {
			err = p.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
		acked[k] = []byte(k)
	}
	toggle.Enable()
	p, err := commit("failed")
	if err != nil {
		t.Fatalf("CommitAsync before the failing fsync: %v", err)
	}
	if got, err := db.Get([]byte("failed")); err != nil || string(got) != "failed" {
		t.Fatalf("the batch is not visible before its fsync: %q, %v", got, err)
	}
	if err := p.Wait(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Wait after a failed fsync: %v, want ErrReadOnly", err)
	}
	toggle.Disable()
	if _, err := commit("later"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("CommitAsync after the failure: %v, want ErrReadOnly", err)
	}
	if err := db.Set([]byte("later"), nil, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Set after the failure: %v, want ErrReadOnly", err)
	}
	if err := db.Resume(); !errors.Is(err, ErrVisibleWriteUnsynced) {
		t.Fatalf("Resume: %v, want ErrVisibleWriteUnsynced", err)
	}
	if err := db.Set([]byte("later"), nil, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Set after the refused Resume: %v, want ErrReadOnly", err)
	}
	checkKeys(t, db, acked)
	db.Close()
	db2, err := Open("/db", durOptions(mem.CrashClone(), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	checkKeys(t, db2, acked)
	if err := db2.Set([]byte("reopened"), []byte("x"), nil); err != nil {
		t.Fatalf("write after reopening: %v", err)
	}
}

// TestResumeRefusedWithUnsyncedAsyncBatch fails a synchronous write's
// fsync while a CommitAsync batch, visible, has not been waited for:
// Resume must refuse, for it would mark that batch synced before the
// flush that makes it durable, and its Wait would then report success
// that a power loss could still take back.
func TestResumeRefusedWithUnsyncedAsyncBatch(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, ".log")
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, toggle), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	toggle.Enable()
	b := db.NewBatch()
	b.Set([]byte("async"), []byte("v"))
	p, err := db.CommitAsync(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("sync"), []byte("v"), nil); err == nil {
		t.Fatal("a synchronous write succeeded with its fsync failing")
	}
	toggle.Disable()
	if err := db.Resume(); !errors.Is(err, ErrVisibleWriteUnsynced) {
		t.Fatalf("Resume: %v, want ErrVisibleWriteUnsynced", err)
	}
	if err := p.Wait(); err == nil {
		t.Fatal("Wait reported the unsynced batch durable")
	}
}
