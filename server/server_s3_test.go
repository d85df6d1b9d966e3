package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/backup"
	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// TestBgsaveS3 takes a BGSAVE into an S3 bucket (keys from the
// environment, as a server gets them) and restores it.
func TestBgsaveS3(t *testing.T) {
	srv := s3test.Start(t)
	if err := srv.CreateBucket("lsmgo-server"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	set := "s3://lsmgo-server/nightly?endpoint=" + srv.Endpoint
	s := startServer(t, func(c *Config) { c.BackupDir = set })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	for i := range 100 {
		c.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitBackups(t, s, 1)
	if p := persistence(t, c); p["rdb_last_bgsave_status"] != "ok" || p["rdb_saves"] != "1" {
		t.Fatalf("INFO persistence after a BGSAVE to S3: %v", p)
	}
	st, err := backup.OpenStore(set, backup.S3Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := backup.Restore(ctx, st, "", dir); err != nil {
		t.Fatal(err)
	}
	r := newClient(t, startServer(t, func(c *Config) { c.Dir = dir }), 2, nil)
	for i := range 100 {
		if got := r.Get(ctx, fmt.Sprint("k", i)).Val(); got != fmt.Sprint(i) {
			t.Fatalf("restored k%d = %q", i, got)
		}
	}
}
