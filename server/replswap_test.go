package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestFinishFullSync starts finishFullSync from every state a kill -9 can
// leave between the steps of a full sync and its swap, and checks that the
// data directory then holds the old data or the new, whole, and nothing
// else remains.
func TestFinishFullSync(t *testing.T) {
	// Each state lists the directories present and what each holds; want
	// is what DIR must hold after.
	cases := []struct {
		name  string
		state map[string]string
		want  string
	}{
		{"receiving", map[string]string{"": "old", fullSyncTmp: "part"}, "old"},
		{"received", map[string]string{"": "old", fullSyncReady: "new"}, "new"},
		{"old moved aside", map[string]string{fullSyncOld: "old", fullSyncReady: "new"}, "new"},
		{"new in place", map[string]string{"": "new", fullSyncOld: "old"}, "new"},
		{"stale old and a new copy", map[string]string{"": "old", fullSyncOld: "older", fullSyncReady: "new"}, "new"},
		{"only old", map[string]string{fullSyncOld: "old"}, "old"},
		{"nothing to do", map[string]string{"": "old"}, "old"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			for suffix, content := range tc.state {
				if err := os.MkdirAll(filepath.Join(dir+suffix, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir+suffix, "marker"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := finishFullSync(vfs.Default, dir); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "marker"))
			if err != nil || string(got) != tc.want {
				t.Fatalf("DIR holds %q (%v), want %q", got, err, tc.want)
			}
			left, _ := filepath.Glob(dir + ".fullsync-*")
			if len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}
