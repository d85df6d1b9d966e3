package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestRecoveryLossReported: a data directory whose WAL was cut after a
// clean shutdown (issue 25: cut to 5 bytes, 410 acknowledged keys gone)
// starts, and says so: an ERROR in the log and INFO's
// wal_recovery_lost_entries.
func TestRecoveryLossReported(t *testing.T) {
	dir := t.TempDir()
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 410
	for i := range keys {
		if err := db.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(logs)
	if len(logs) != 2 {
		t.Fatalf("WALs %v; want the data and the close marker", logs)
	}
	if err := os.Truncate(logs[0], 5); err != nil {
		t.Fatal(err)
	}
	var out testutil.SyncBuffer
	s := startServer(t, func(c *Config) { c.Dir = dir; c.LogOutput = &out })
	if log := out.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, fmt.Sprintf("lost_entries=%d", keys)) {
		t.Errorf("the start logged no ERROR with lost_entries=%d:\n%s", keys, log)
	}
	info, err := newClient(t, s, 2, nil).Info(context.Background(), "lsmgo").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("wal_recovery_lost_entries:%d", keys); !strings.Contains(info, want) {
		t.Errorf("INFO lacks %q:\n%s", want, info)
	}
}
