//go:build unix

package lsmgo

import (
	"os"
	"syscall"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestCheckpointLinksAndCopies checks on the OS filesystem that a
// checkpoint shares finished files with the DB by hard links, copies the
// blob file still written, and that the DB and the checkpoint then go
// their own ways.
func TestCheckpointLinksAndCopies(t *testing.T) {
	dir := t.TempDir()
	opts := ckptOptions(vfs.Default)
	// No compaction may remove the DB's names of the tables before they
	// are counted.
	opts.L0CompactionThreshold, opts.L0SlowdownWritesThreshold, opts.L0StopWritesThreshold = 1000, 1000, 1000
	db := openTestDB(t, dir+"/db", opts)
	for i := range 200 {
		if err := ckptApply(db, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(dir + "/ckpt"); err != nil {
		t.Fatal(err)
	}
	linked, copied := countLinks(t, dir+"/ckpt")
	if linked == 0 || copied == 0 {
		t.Fatalf("%d files linked, %d copied; want tables linked and at least the active blob file (and the manifest) copied", linked, copied)
	}
	for i := 200; i < 300; i++ {
		if err := ckptApply(db, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir+"/ckpt", opts); !mapsEqualBytes(got, ckptState(0, 200)) {
		t.Fatalf("the checkpoint changed with its DB: %d keys", len(got))
	}
	t.Logf("%d files linked, %d copied", linked, copied)
}

// countLinks counts the files in dir with more than one name, and those
// with one.
func countLinks(t *testing.T, dir string) (linked, single int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if nlink(fi) > 1 {
			linked++
		} else {
			single++
		}
	}
	return linked, single
}

func nlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
