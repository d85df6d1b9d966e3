package lsmgo

import (
	"errors"
	"testing"
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
