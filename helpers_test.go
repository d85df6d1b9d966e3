package lsmgo

import (
	"errors"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// openTestDB opens the DB in dir with opts and fails t if Open does. When
// the test ends the DB is closed unless the test closed it itself, and an
// error from that Close fails the test: a test that expects Close to fail,
// or abandons a DB whose filesystem it broke, closes it explicitly.
func openTestDB(t testing.TB, dir string, opts *Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("closing the DB in %q at the end of the test: %v", dir, err)
		}
	})
	return db
}

// dropCloseMarker removes the close marker (wal_close.go) that Close left
// in dir, so the directory is what a crash right after the last WAL fsync
// leaves: tests of torn tails and damage after a crash build their
// fixtures with Close and then call it.
func dropCloseMarker(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var newest base.FileNum
	for _, name := range names {
		if typ, num, ok := base.ParseFilename(name); ok && typ == base.FileTypeLog && num > newest {
			newest = num
		}
	}
	name := fs.PathJoin(dir, base.MakeFilename(base.FileTypeLog, newest))
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.NewReader(f, name).Next()
	f.Close()
	if err != nil || !isValidCloseMarker(rec) {
		t.Fatalf("the newest WAL %s holds no close marker: %v", name, err)
	}
	// A crash image (MemFS.CrashClone) keeps only synced removals.
	if err := errors.Join(fs.Remove(name), vfs.SyncDir(fs, dir)); err != nil {
		t.Fatal(err)
	}
}
