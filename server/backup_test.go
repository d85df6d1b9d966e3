package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/backup"
	"github.com/redis/go-redis/v9"
)

// persistence returns INFO persistence's fields.
func persistence(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	info, err := c.Info(context.Background(), "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// waitBackups waits, with a deadline meant for a loaded machine, until
// no backup runs and saves+failures backups have ended.
func waitBackups(t *testing.T, s *Server, ended int64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		s.backups.mu.Lock()
		done := !s.backups.running && s.backups.attempts >= ended
		s.backups.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d backups to end", ended)
		}
	}
}

// restoredServer restores the newest backup of set and serves it.
func restoredServer(t *testing.T, set string) *redis.Client {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := backup.Restore(context.Background(), backup.NewDirStore(set), "", dir); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Dir = dir })
	return newClient(t, s, 2, nil)
}

// TestBgsave takes a backup with BGSAVE and checks what INFO and
// LASTSAVE say before, during and after, and that the backup restores to
// a server holding every key written before the BGSAVE.
func TestBgsave(t *testing.T) {
	set := filepath.Join(t.TempDir(), "set")
	s := startServer(t, func(c *Config) { c.BackupDir = set })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	p := persistence(t, c)
	if p["rdb_bgsave_in_progress"] != "0" || p["rdb_last_bgsave_status"] != "ok" || p["rdb_saves"] != "0" || p["rdb_last_bgsave_time_sec"] != "-1" {
		t.Fatalf("INFO persistence before any backup: %v", p)
	}
	if got := c.LastSave(ctx).Val(); got != s.startTime.Unix() {
		t.Fatalf("LASTSAVE before any backup = %d; want the start, %d", got, s.startTime.Unix())
	}
	for i := range 200 {
		c.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", i*40), 0)
		c.HSet(ctx, "h", fmt.Sprint("f", i), i)
	}
	if n, _ := strconv.Atoi(persistence(t, c)["rdb_changes_since_last_save"]); n < 400 {
		t.Fatalf("rdb_changes_since_last_save = %d after 400 writes", n)
	}
	before := time.Now().Unix()
	if got, err := c.BgSave(ctx).Result(); err != nil || got != "Background saving started" {
		t.Fatalf("BGSAVE = %q, %v", got, err)
	}
	waitBackups(t, s, 1)
	p = persistence(t, c)
	if p["rdb_bgsave_in_progress"] != "0" || p["rdb_last_bgsave_status"] != "ok" || p["rdb_saves"] != "1" || p["rdb_last_bgsave_time_sec"] == "-1" {
		t.Fatalf("INFO persistence after a backup: %v", p)
	}
	if got := c.LastSave(ctx).Val(); got < before {
		t.Fatalf("LASTSAVE = %d; the backup began at or after %d", got, before)
	}
	if p["rdb_last_save_time"] != strconv.FormatInt(c.LastSave(ctx).Val(), 10) {
		t.Fatalf("rdb_last_save_time %s is not LASTSAVE", p["rdb_last_save_time"])
	}
	r := restoredServer(t, set)
	for i := range 200 {
		if got := r.Get(ctx, fmt.Sprint("k", i)).Val(); got != strings.Repeat("v", i*40) {
			t.Fatalf("restored k%d has %d bytes", i, len(got))
		}
	}
	if n := r.HLen(ctx, "h").Val(); n != 200 {
		t.Fatalf("restored hash has %d fields", n)
	}

	// SAVE answers when its backup is done, and the next is incremental.
	c.Set(ctx, "after", "1", 0)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := restoredServer(t, set).Get(ctx, "after").Val(); got != "1" {
		t.Fatalf("the SAVE backup lacks a key written before it: %q", got)
	}
	// BGSAVE SCHEDULE either starts one or queues one after the running.
	for range 2 {
		got, err := c.Do(ctx, "BGSAVE", "SCHEDULE").Text()
		if err != nil || (got != "Background saving started" && got != "Background saving scheduled") {
			t.Fatalf("BGSAVE SCHEDULE = %q, %v", got, err)
		}
	}
	waitBackups(t, s, 4)
	if ids, err := backup.List(ctx, backup.NewDirStore(set)); err != nil || len(ids) != 4 {
		t.Fatalf("backups in the set: %q, %v; want 4", ids, err)
	}
}

// TestBgsaveErrors checks BGSAVE without backup-dir, with a bad argument,
// and with a destination that cannot be written: the failure shows in
// INFO and LASTSAVE stays.
func TestBgsaveErrors(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	if err := c.BgSave(ctx).Err(); err == nil || !strings.Contains(err.Error(), "backup-dir is not set") {
		t.Fatalf("BGSAVE without backup-dir = %v", err)
	}
	if err := c.Do(ctx, "BGSAVE", "NOW").Err(); err == nil || err.Error() != "ERR syntax error" {
		t.Fatalf("BGSAVE NOW = %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "backup-dir", filepath.Join(file, "set")).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "k", "v", 0)
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitBackups(t, s, 1)
	p := persistence(t, c)
	if p["rdb_last_bgsave_status"] != "err" || p["rdb_saves"] != "0" {
		t.Fatalf("INFO persistence after a failed backup: %v", p)
	}
	if got := c.LastSave(ctx).Val(); got != s.startTime.Unix() {
		t.Fatalf("LASTSAVE moved to %d after a failed backup", got)
	}
	if err := c.Save(ctx).Err(); err == nil {
		t.Fatal("SAVE into a path under a file succeeded")
	}
}

// TestAdminBackup takes a backup through POST /admin/backup: only with
// the admin token while the image host is on, 503 without backup-dir,
// and the backup restores.
func TestAdminBackup(t *testing.T) {
	set := filepath.Join(t.TempDir(), "set")
	s := startServer(t, func(c *Config) { c.AdminToken = "secret-token" })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	url := "http://" + s.HTTPAddr() + "/admin/backup"
	do := func(method, token string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, _ := do("POST", ""); code != http.StatusForbidden {
		t.Fatalf("POST without the token: %d; want 403", code)
	}
	if code, _ := do("POST", "wrong"); code != http.StatusForbidden {
		t.Fatalf("POST with a wrong token: %d; want 403", code)
	}
	if code, body := do("POST", "secret-token"); code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body["error"]), "backup-dir") {
		t.Fatalf("POST without backup-dir: %d %v; want 503", code, body)
	}
	if code, _ := do("GET", "secret-token"); code != http.StatusNotFound {
		t.Fatalf("GET before any backup: %d; want 404", code)
	}
	if err := c.ConfigSet(ctx, "backup-dir", set).Err(); err != nil {
		t.Fatal(err)
	}
	code, body := do("POST", "secret-token")
	if code != http.StatusOK || !regexp.MustCompile(`^\d{8}T\d{6}\.\d{3}Z$`).MatchString(fmt.Sprint(body["id"])) || body["files"].(float64) < 3 {
		t.Fatalf("POST: %d %v", code, body)
	}
	if code, last := do("GET", "secret-token"); code != http.StatusOK || last["id"] != body["id"] {
		t.Fatalf("GET after a backup: %d %v; want %v", code, last, body["id"])
	}
	if code, _ := do("DELETE", "secret-token"); code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d; want 405", code)
	}
	if got := restoredServer(t, set).Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("restored k = %q", got)
	}
	if got := persistence(t, c)["rdb_saves"]; got != "1" {
		t.Fatalf("rdb_saves after POST /admin/backup = %s", got)
	}
}
