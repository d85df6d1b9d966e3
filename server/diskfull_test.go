package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size bytes under a temporary directory, or
// skips the test when this process may not mount one (it needs root, or
// CAP_SYS_ADMIN, and the mount command).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestDiskFullTmpfs fills a real 8 MiB filesystem through RESP: writes
// are refused with a MISCONF that says the disk is full, reads go on,
// INFO says why, and once a file is deleted writes resume by themselves,
// with every acknowledged write still there.
func TestDiskFullTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: fills a filesystem")
	}
	mnt := mountTmpfs(t, 8<<20)
	// Ballast the operator will delete to make room.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var s *Server
	s = startServer(t, func(c *Config) {
		c.Dir = filepath.Join(mnt, "data")
		c.MemTableSize = 1 << 20
	})
	cl := newClient(t, s, 2, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	value := func() string {
		b := make([]byte, 4000)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	acked := map[string]string{}
	var refused error
	for i := 0; refused == nil; i++ {
		k, v := fmt.Sprintf("key:%06d", i), value()
		if refused = cl.Set(ctx, k, v, 0).Err(); refused == nil {
			acked[k] = v
		}
		if i > 100000 {
			t.Fatal("the filesystem never filled up")
		}
	}
	if !strings.HasPrefix(refused.Error(), "MISCONF Disk full") {
		t.Fatalf("write on a full disk: %v; want MISCONF Disk full", refused)
	}
	info := cl.Info(ctx, "lsmgo").Val()
	if !strings.Contains(info, "disk_total_bytes:") || !strings.Contains(info, "read_only:0") {
		t.Fatalf("INFO on a full disk:\n%s", info)
	}
	for k, v := range acked {
		if got, err := cl.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("GET %s on a full disk: %d bytes, %v", k, len(got), err)
		}
	}
	t.Logf("%d writes (%d MiB) acknowledged before: %v", len(acked), len(acked)*4000>>20, refused)

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		err := cl.Set(ctx, "after", "freed", 0).Err()
		if err == nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("writes did not resume after freeing space: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("writes resumed %v after the ballast was deleted", time.Since(start).Round(time.Millisecond))
	for k, v := range acked {
		if got, err := cl.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("GET %s after space came back: %d bytes, %v", k, len(got), err)
		}
	}
}
