//go:build unix

package lsmgo

import (
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestCheckpointLinksAndCopies checks on the OS filesystem that a
// checkpoint shares the DB's tables and blob files, the one being written
// included, by hard links, writes only its manifest, CURRENT and WAL, and
// that the DB and the checkpoint then go their own ways.
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
	linked, single := countLinks(t, dir+"/ckpt")
	if len(linked) == 0 || !slices.ContainsFunc(linked, func(n string) bool { return strings.HasSuffix(n, ".blob") }) || len(single) != 3 {
		t.Fatalf("linked %q, not linked %q; want every table and blob file linked, and only MANIFEST, CURRENT and the WAL written", linked, single)
	}
	for i := 200; i < 300; i++ {
		if err := ckptApply(db, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := readCheckpoint(t, dir+"/ckpt", opts); !maps.Equal(got, ckptState(0, 200)) {
		t.Fatalf("the checkpoint changed with its DB: %d keys", len(got))
	}
	t.Logf("linked %q, written %q", linked, single)
}

// countLinks returns the names of the files in dir with more than one
// name, and of those with one.
func countLinks(t *testing.T, dir string) (linked, single []string) {
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
			linked = append(linked, e.Name())
		} else {
			single = append(single, e.Name())
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
