package server

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// A replica's full sync replaces its whole data directory with the copy it
// received, so that a kill -9 at any point leaves the old data or the new,
// whole, never a mix. Three siblings of the data directory DIR take part:
//
//	DIR.fullsync-tmp    the copy while it arrives; never used, removed
//	DIR.fullsync-ready  the whole copy, synced: renamed from -tmp at its end
//	DIR.fullsync-old    the old data while the copy takes its place
//
// The swap renames DIR to -old and -ready to DIR, syncing the parent after
// each rename, then removes -old. finishFullSync, at every start and at
// the swap itself, carries an interrupted swap forward: a -ready copy is
// complete, so it always wins.
const (
	fullSyncTmp   = ".fullsync-tmp"
	fullSyncReady = ".fullsync-ready"
	fullSyncOld   = ".fullsync-old"
)

// msgLoading refuses a connection while a replica swaps its data, as Redis
// answers while it loads a dataset.
const msgLoading = "LOADING lsmgo is loading the dataset from its primary"

// finishFullSync brings dir to the old data or the staged copy, whole, and
// removes every other sibling a full sync made.
func finishFullSync(fs vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	tmp, ready, old := dir+fullSyncTmp, dir+fullSyncReady, dir+fullSyncOld
	if err := removeTree(fs, tmp); err != nil {
		return err
	}
	hasDir, hasReady, hasOld := exists(fs, dir), exists(fs, ready), exists(fs, old)
	if hasDir && hasOld {
		// A finished swap's leftover: DIR is whole.
		if err := removeTree(fs, old); err != nil {
			return err
		}
		hasOld = false
	}
	if !hasReady {
		if !hasDir && hasOld {
			return renameSynced(fs, old, dir, parent)
		}
		return nil
	}
	if hasDir {
		if err := renameSynced(fs, dir, old, parent); err != nil {
			return err
		}
	}
	if err := renameSynced(fs, ready, dir, parent); err != nil {
		return err
	}
	return removeTree(fs, old)
}

func exists(fs vfs.FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}

func renameSynced(fs vfs.FS, from, to, parent string) error {
	if err := fs.Rename(from, to); err != nil {
		return err
	}
	return vfs.SyncDir(fs, parent)
}

// removeTree removes dir and everything in it, if it exists.
func removeTree(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		p := fs.PathJoin(dir, name)
		if st, err := fs.Stat(p); err == nil && st.IsDir() {
			err = removeTree(fs, p)
			if err != nil {
				return err
			}
			continue
		}
		if err := fs.Remove(p); err != nil {
			return err
		}
	}
	return fs.Remove(dir)
}

// errSwapAborted ends a swap that REPLICAOF or shutdown interrupted before
// the old DB closed: the staged copy is dropped at the next full sync or
// start.
var errSwapAborted = errors.New("replication: full sync interrupted before the swap")

// swapIn replaces the DB with the copy staged in DIR.fullsync-ready. The
// replica's clients are disconnected and new ones refused with LOADING
// while it runs (they reconnect and read the new data); the HTTP handlers
// that read the DB wait; the old DB is closed, finishFullSync swaps the
// directories, and the new DB is opened and the keyspace reloaded. stop
// (the link's) or shutdown aborts it while it waits for clients to go.
//
// The data of an unrelated dataset (a demoted primary's, which may hold
// writes the new primary never had) is kept, if it holds any key, as
// DIR.discarded-TIME instead of being removed (doc/replication.md).
func (s *Server) swapIn(stop <-chan struct{}, unrelated bool) error {
	s.clientsMu.Lock()
	s.repl.swapping.Store(true)
	conns := make([]*conn, 0, len(s.clients))
	for _, c := range s.clients {
		conns = append(conns, c)
	}
	s.clientsMu.Unlock()
	defer s.repl.swapping.Store(false)
	for _, c := range conns {
		c.closeSocket()
	}
	// A client running a command finishes it first; one blocked wakes
	// when its socket closes. CONFIG SET (REPLICAOF) holds cfgMu while
	// it stops this link, so cfgMu is only tried.
	for s.clientCount() > 0 || !s.cfgMu.TryLock() {
		select {
		case <-stop:
			return s.abortSwap()
		case <-s.done:
			return s.abortSwap()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer s.cfgMu.Unlock()
	s.repl.swapMu.Lock()
	defer s.repl.swapMu.Unlock()
	if err := s.claimBackups(stop); err != nil {
		return s.abortSwap()
	}
	defer s.releaseBackups()

	r := s.config()
	keep := unrelated && s.holdsKeys()
	s.ks.expiries.turn(&s.ks, false)
	s.ks.reclaim.stop()
	if err := s.db.Close(); err != nil {
		s.log.Warn("replication: closing the old DB for a full sync", "err", err)
	}
	s.ks.reclaim.wait()
	var err error
	if keep {
		err = s.keepDiscarded(r.Dir)
	}
	if err == nil {
		err = finishFullSync(s.fs(), r.Dir)
	}
	if err == nil {
		err = s.openSwapped(r)
	}
	if err != nil {
		// Neither the old DB nor the new one is open: only a restart,
		// which finishes the swap, can serve again.
		s.log.Error("replication: installing the full copy failed; shutting down", "err", err)
		s.askShutdown()
		return err
	}
	s.ks.expiries.turn(&s.ks, r.NotifyKeyspaceEvents.expiredOn())
	// Clients are let in before swapMu lets the HTTP handlers read the
	// new DB: whatever shows the new position, clients can read it.
	s.repl.swapping.Store(false)
	return nil
}

// holdsKeys reports whether any database holds a key.
func (s *Server) holdsKeys() bool {
	found := false
	for _, ns := range s.ks.namespaces() {
		s.ks.scanKeys(s.ks.latest(), ns, nil, nil, func([]byte, byte, bool) bool {
			found = true
			return false
		})
	}
	return found
}

// keepDiscarded moves the closed DB's directory aside, durably, where
// finishFullSync does not remove it.
func (s *Server) keepDiscarded(dir string) error {
	dir = filepath.Clean(dir)
	kept := dir + ".discarded-" + time.Now().UTC().Format("20060102T150405Z")
	s.log.Warn("replication: the primary's dataset differs; this server's data is kept aside", "dir", kept)
	return renameSynced(s.fs(), dir, kept, filepath.Dir(dir))
}

// abortSwap drops the staged copy, which a start would otherwise install
// (after REPLICAOF NO ONE, say), and keeps the old DB.
func (s *Server) abortSwap() error {
	if err := removeTree(s.fs(), filepath.Clean(s.config().Dir)+fullSyncReady); err != nil {
		s.log.Error("replication: removing a staged full copy", "err", err)
	}
	return errSwapAborted
}

// readsDB makes an HTTP handler that reads the DB wait while a full sync
// replaces it: the image routes too.
func (s *Server) readsDB(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.repl.swapMu.RLock()
		defer s.repl.swapMu.RUnlock()
		h.ServeHTTP(w, r)
	})
}

// openSwapped opens the DB a swap installed and reloads what the server
// keeps of it.
func (s *Server) openSwapped(r *Config) error {
	db, err := lsmgo.Open(r.Dir, s.engineOptions(r))
	if err != nil {
		return err
	}
	s.db, s.ks.db = db, db
	s.ks.reclaim = newReclaimer(db, s.log)
	if err := s.loadKeyspace(r); err != nil {
		return err
	}
	if err := s.initReplication(); err != nil {
		return err
	}
	if s.images != nil {
		h, err := s.newImageHost(r)
		if err != nil {
			return err
		}
		s.images, s.imagesHandler = h, h.Handler()
	}
	return nil
}

// replacingRegisterer registers a collector in place of one registered
// under the same name: the image host a full sync makes takes over its
// predecessor's metrics (they start again from zero).
type replacingRegisterer struct{ prometheus.Registerer }

func (r replacingRegisterer) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		r.Unregister(dup.ExistingCollector)
		err = r.Registerer.Register(c)
	}
	return err
}

// claimBackups waits until no backup runs and keeps new ones from
// starting, since a backup reads the DB the swap closes.
func (s *Server) claimBackups(stop <-chan struct{}) error {
	b := &s.backups
	for {
		b.mu.Lock()
		if !b.running {
			b.running = true
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock()
		select {
		case <-stop:
			return errSwapAborted
		case <-s.done:
			return errSwapAborted
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) releaseBackups() {
	s.backups.mu.Lock()
	s.backups.running = false
	s.backups.mu.Unlock()
}
