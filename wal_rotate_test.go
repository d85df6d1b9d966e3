package lsmgo

import (
	"errors"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// TestWALRotationCloseFails: when a rotation syncs the old WAL but cannot
// close it for lack of space, only that call fails, so the DB keeps taking
// writes; each later synced write must be synced into a WAL the next Open
// replays, and return. It once spun forever: the failed close left the
// writer with no current file to sync, but still writing.
func TestWALRotationCloseFails(t *testing.T) {
	mem := vfs.NewMem()
	toggle := errorfs.NewToggle(errorfs.ENOSPC(), []errorfs.Op{errorfs.OpClose}, ".log")
	db, err := Open("/db", durOptions(errorfs.Wrap(mem, toggle), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	if err := db.Flush(); !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrReadOnly) {
		t.Fatalf("Flush whose WAL rotation cannot close the old WAL: %v; want ErrNoSpace, not read-only", err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Set([]byte("b"), []byte("2"), nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a write after the failed rotation: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a synced write after the failed rotation never returned")
	}
	toggle.Disable()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for name, fs := range map[string]vfs.FS{"the same filesystem": mem, "a crash image": mem.CrashClone()} {
		db, err := Open("/db", durOptions(fs, SyncAlways))
		if err != nil {
			t.Fatalf("reopen on %s: %v", name, err)
		}
		for k, want := range map[string]string{"a": "1", "b": "2"} {
			if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
				t.Errorf("on %s, Get(%s) = %q, %v; want %q", name, k, v, err, want)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWALWaitSyncedWithoutFile: a write the WAL can no longer fsync (its
// file was closed without a sync, as Close does after a background error)
// fails the writer waiting for that fsync instead of leaving it spinning.
func TestWALWaitSyncedWithoutFile(t *testing.T) {
	var l walWriter
	l.init(vfs.NewMem(), "/", &dbMetrics{}, 0, walMap{})
	f, err := l.create(1)
	if err != nil {
		t.Fatal(err)
	}
	l.cur = f
	pos, err := l.write([]*commitWriter{{repr: []byte("record")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.close(true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.waitSynced(pos, make(chan struct{}, 1)) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("waitSynced on a WAL closed unsynced: %v; want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitSynced on a WAL closed unsynced never returned")
	}
}
