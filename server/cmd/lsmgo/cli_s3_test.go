package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// TestBackupRestoreCommandsS3 backs a DB up into a bucket of a real S3
// server, keys from the environment, and restores it.
func TestBackupRestoreCommandsS3(t *testing.T) {
	srv := s3test.Start(t)
	if err := srv.CreateBucket("lsmgo-cli"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	set := "s3://lsmgo-cli/backups?endpoint=" + srv.Endpoint
	src, _ := makeTestDB(t)
	want := readDB(t, src)
	for range 2 {
		if status, out, errOut := run("backup", src, set); status != 0 {
			t.Fatalf("backup to S3: status %d, stdout %q, stderr %q", status, out, errOut)
		}
	}
	status, out, errOut := run("restore", "--list", set)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); status != 0 || len(lines) != 2 {
		t.Fatalf("restore --list: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if status, out, errOut := run("restore", set, dir); status != 0 {
		t.Fatalf("restore from S3: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	got := readDB(t, dir)
	if len(got) != len(want) {
		t.Fatalf("restored %d keys; want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("restored %q = %q; want %q", k, got[k], v)
		}
	}
}
