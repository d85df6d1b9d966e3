package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/backup"
)

// backups runs the server's backups: BGSAVE, SAVE and POST /admin/backup
// each take a checkpoint of the engine and store it in the backup set
// that backup-dir names (doc/operations.md, "Backups"). One runs at a
// time.
type backups struct {
	mu      sync.Mutex
	running bool
	// scheduled asks for another backup once the running one ends
	// (BGSAVE SCHEDULE).
	scheduled bool
	started   time.Time // of the running one
	// The last finished backup: when it started (a successful one's
	// start is LASTSAVE: it holds every write acknowledged before),
	// how long it took, and how it ended.
	lastStarted  time.Time
	lastDuration time.Duration
	lastErr      error
	lastResult   *backupResult
	// savedOK is the start of the last successful backup, and
	// savedBatches the engine's commit count then; zero before the
	// first (LASTSAVE is then the server's start).
	savedOK      time.Time
	savedBatches int64
	// attempts and saves count the backups begun and those that
	// succeeded.
	attempts, saves int64
}

// backupResult is what a finished backup reports to POST /admin/backup.
type backupResult struct {
	ID            string  `json:"id"`
	Destination   string  `json:"destination"`
	Files         int     `json:"files"`
	Uploaded      int     `json:"uploaded"`
	UploadedBytes int64   `json:"uploaded_bytes"`
	Reused        int     `json:"reused"`
	ReusedBytes   int64   `json:"reused_bytes"`
	Seconds       float64 `json:"seconds"`
}

var (
	errNoBackupDir    = errors.New("ERR backup-dir is not set: name a directory or s3:// URL for backups (CONFIG SET backup-dir ...)")
	errBackupRunning  = errors.New("ERR Background save already in progress")
	errBackupCustomFS = errors.New("ERR backups need the operating system's filesystem")
)

// beginBackup claims the one backup slot; it fails when backups are not
// configured, one is running, or the server is stopping. The caller runs
// the backup and calls endBackup.
func (s *Server) beginBackup() (dest string, err error) {
	cfg := s.config()
	switch {
	case cfg.BackupDir == "":
		return "", errNoBackupDir
	case s.base.FS != nil:
		return "", errBackupCustomFS
	}
	b := &s.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		return "", errBackupRunning
	}
	b.running, b.started = true, time.Now()
	return cfg.BackupDir, nil
}

// runBackup runs the backup beginBackup claimed, into dest, and records
// how it ended. It returns whether another was scheduled meanwhile.
func (s *Server) runBackup(ctx context.Context, dest string) (res *backupResult, again bool, err error) {
	b := &s.backups
	b.mu.Lock()
	start := b.started
	b.mu.Unlock()
	batches := s.db.Metrics().Commits.Batches
	res, err = s.backupOnce(ctx, dest)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running = false
	b.attempts++
	b.lastStarted, b.lastDuration, b.lastErr, b.lastResult = start, time.Since(start), err, res
	if err == nil {
		b.savedOK, b.savedBatches = start, batches
		b.saves++
		s.log.Info("backup done", "id", res.ID, "destination", dest, "files", res.Files, "uploaded", res.Uploaded, "uploaded_bytes", res.UploadedBytes)
	} else {
		s.log.Error("backup failed", "destination", dest, "err", err)
	}
	again = b.scheduled
	b.scheduled = false
	return res, again, err
}

func (s *Server) backupOnce(ctx context.Context, dest string) (*backupResult, error) {
	start := time.Now()
	cfg := s.config()
	st, err := backup.OpenStore(dest, backup.S3Credentials{AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey})
	if err != nil {
		return nil, err
	}
	// Beside the data directory, so that the checkpoint hard-links the
	// tables instead of copying them.
	scratch := filepath.Clean(s.config().Dir) + ".backup-checkpoint"
	m, stats, err := backup.DB(ctx, s.db, scratch, st)
	if err != nil {
		return nil, err
	}
	return &backupResult{ID: m.ID, Destination: dest, Files: stats.Files,
		Uploaded: stats.Uploaded, UploadedBytes: stats.UploadedBytes,
		Reused: stats.Reused, ReusedBytes: stats.ReusedBytes,
		Seconds: time.Since(start).Seconds()}, nil
}

// shutdownContext is canceled when the server begins to shut down, so a
// backup stops uploading instead of holding up the shutdown.
func (s *Server) shutdownContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// startBackgroundBackup begins a backup in the background (BGSAVE). With
// schedule, a backup already running is not an error: another follows it.
func (s *Server) startBackgroundBackup(schedule bool) (scheduled bool, err error) {
	dest, err := s.beginBackup()
	if errors.Is(err, errBackupRunning) && schedule {
		s.backups.mu.Lock()
		s.backups.scheduled = true
		s.backups.mu.Unlock()
		return true, nil
	}
	if err != nil {
		return false, err
	}
	// Shutdown waits for bgWG once closing is set; Add must not race
	// with that Wait.
	s.clientsMu.Lock()
	closing := s.closing.Load()
	if !closing {
		s.bgWG.Add(1)
	}
	s.clientsMu.Unlock()
	if closing {
		s.backups.mu.Lock()
		s.backups.running = false
		s.backups.mu.Unlock()
		return false, errors.New("ERR " + errShuttingDown.Error())
	}
	go func() {
		defer s.bgWG.Done()
		ctx, cancel := s.shutdownContext()
		defer cancel()
		for {
			_, again, _ := s.runBackup(ctx, dest)
			if !again || ctx.Err() != nil {
				return
			}
			if dest, err = s.beginBackup(); err != nil {
				return
			}
		}
	}()
	return false, nil
}

// backupInfo is what INFO persistence and LASTSAVE report.
type backupInfo struct {
	running                 bool
	lastSave                time.Time
	lastOK                  bool
	lastSeconds, curSeconds int64
	changes                 int64
	saves                   int64
}

func (s *Server) backupInfo() backupInfo {
	b := &s.backups
	batches := s.db.Metrics().Commits.Batches
	b.mu.Lock()
	defer b.mu.Unlock()
	bi := backupInfo{running: b.running, lastSave: b.savedOK, lastOK: b.lastErr == nil,
		lastSeconds: -1, curSeconds: -1, changes: batches - b.savedBatches, saves: b.saves}
	if bi.lastSave.IsZero() {
		bi.lastSave = s.startTime
	}
	if b.attempts > 0 {
		bi.lastSeconds = int64(b.lastDuration.Seconds())
	}
	if b.running {
		bi.curSeconds = int64(time.Since(b.started).Seconds())
	}
	return bi
}

// serveBackup is POST /admin/backup: it takes a backup now and answers
// when it is done, with its ID and what it stored (200), or why not: 409
// while another runs, 503 without backup-dir, 500 when it failed. GET
// reports the last backup the same way, or 404 before the first.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(code int, v any) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(code int, err error) { reply(code, map[string]string{"error": err.Error()}) }
	switch r.Method {
	case http.MethodGet:
		b := &s.backups
		b.mu.Lock()
		res, err, running := b.lastResult, b.lastErr, b.running
		b.mu.Unlock()
		switch {
		case err != nil:
			fail(http.StatusOK, fmt.Errorf("the last backup failed: %w", err))
		case res == nil && running:
			fail(http.StatusNotFound, errors.New("the first backup is running"))
		case res == nil:
			fail(http.StatusNotFound, errors.New("no backup was taken since the server started"))
		default:
			reply(http.StatusOK, res)
		}
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		fail(http.StatusMethodNotAllowed, errors.New("POST takes a backup; GET reports the last"))
		return
	}
	dest, err := s.beginBackup()
	switch {
	case errors.Is(err, errBackupRunning):
		fail(http.StatusConflict, err)
		return
	case err != nil:
		fail(http.StatusServiceUnavailable, err)
		return
	}
	ctx, cancel := s.shutdownContext()
	defer cancel()
	res, again, err := s.runBackup(ctx, dest)
	if again {
		// A BGSAVE SCHEDULE arrived while this ran.
		if _, serr := s.startBackgroundBackup(false); serr != nil {
			s.log.Warn("scheduled backup not started", "err", serr)
		}
	}
	if err != nil {
		fail(http.StatusInternalServerError, err)
		return
	}
	reply(http.StatusOK, res)
}
