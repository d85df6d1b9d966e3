package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDelay coalesces the burst of events one save produces (editors
// write, truncate, rename) into one reload.
const reloadDelay = 100 * time.Millisecond

// watchConfig reloads the live settings whenever path changes. It watches
// the directory, not the file, because editors replace files by renaming
// a new one over them, which would end a watch on the old inode.
func (s *Server) watchConfig(path string) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return err
	}
	name := filepath.Clean(path)
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		defer w.Close()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			select {
			case ev := <-w.Events:
				if filepath.Clean(ev.Name) == name {
					timer.Reset(reloadDelay)
				}
			case err := <-w.Errors:
				s.log.Warn("config file watch error", "err", err)
			case <-timer.C:
				s.reload()
			case <-s.done:
				return
			}
		}
	}()
	return nil
}

// reload re-resolves the configuration and applies the live settings the
// file changed since it was last read; settings changed only through
// CONFIG SET keep their values. Changed settings that need a restart are
// logged and left alone.
func (s *Server) reload() {
	next, err := s.base.resolve()
	if err != nil {
		s.log.Warn("config reload failed; keeping the running settings", "err", err)
		return
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	var values []settingValue
	for _, st := range settings {
		old, nv := st.get(&s.fileCfg), st.get(&next)
		if st.fixed || old == nv {
			continue
		}
		if err := s.liveSettable(st); err != nil {
			s.log.Warn("config file changed a setting that needs a restart", "setting", st.name)
			continue
		}
		values = append(values, settingValue{st.name, nv})
	}
	if !slices.Equal(s.fileCfg.Users, next.Users) {
		s.log.Warn("config file changed its users, which are read at the start only (ACL SETUSER changes users live)")
	}
	s.fileCfg = next
	if len(values) == 0 {
		return
	}
	if err := s.setLocked(values); err != nil {
		s.log.Warn("config reload refused", "err", err)
		return
	}
	s.log.Info("config reloaded", "changed", len(values))
}

// liveSettable reports why st cannot change while the server runs, if it
// cannot.
func (s *Server) liveSettable(st *setting) error {
	switch {
	case st.fixed:
		return errImmutable
	case !st.live:
		return errors.New("can't set immutable config: it needs a restart")
	}
	return nil
}

// settingValue is a setting's new value, by the setting's name.
type settingValue struct{ name, value string }

// setLocked applies values to the running configuration all at once or
// not at all, as CONFIG SET does. cfgMu must be held. As Redis does,
// a setting that cannot change refuses the whole call before any value
// is looked at, then the values are checked in their order, so that the
// error names the first bad one.
func (s *Server) setLocked(values []settingValue) error {
	next := *s.config()
	for _, sv := range values {
		st := lookupSetting(sv.name)
		if sameValue(st, &next, sv.value) {
			continue // a no-op, even for a restart-only setting
		}
		if err := s.liveSettable(st); err != nil {
			return &settingError{sv.name, err}
		}
	}
	for _, sv := range values {
		st := lookupSetting(sv.name)
		if sameValue(st, &next, sv.value) {
			continue
		}
		if err := st.set(&next, sv.value); err != nil {
			return &settingError{sv.name, err}
		}
	}
	if err := next.validate(); err != nil {
		return &settingError{"requirepass", err}
	}
	prev := s.config()
	s.cfg.Store(&next)
	s.logLevel.Set(slogLevel(next.LogLevel))
	s.slowlog.trim(next.SlowlogMaxLen)
	if next.TrackingTableMaxKeys != prev.TrackingTableMaxKeys {
		s.limitTracking()
	}
	if next.ReplicaOf != prev.ReplicaOf {
		s.follow(replicaAddr(next.ReplicaOf))
	}
	if next.NotifyKeyspaceEvents.expiredOn() != prev.NotifyKeyspaceEvents.expiredOn() {
		s.turnExpiryWatch()
	}
	s.acl.log.trim(next.ACLLogMaxLen)
	if next.RequirePass != prev.RequirePass {
		s.acl.setDefaultPassword(next.RequirePass)
	}
	if next.ReplBacklogSize != prev.ReplBacklogSize || next.ReplBacklogTTL != prev.ReplBacklogTTL {
		s.db.SetWALRetention(next.ReplBacklogSize, next.ReplBacklogTTL)
	}
	if next.MaxConcurrentCompactions != prev.MaxConcurrentCompactions {
		s.db.SetMaxConcurrentCompactions(next.MaxConcurrentCompactions)
	}
	if s.images != nil && (next.ImageTokens != prev.ImageTokens || next.AdminToken != prev.AdminToken) {
		s.images.SetTokens(imageTokens(&next))
	}
	return nil
}

// settingError names the setting a CONFIG SET failed on.
type settingError struct {
	name string
	err  error
}

func (e *settingError) Error() string {
	return fmt.Sprintf("CONFIG SET failed (possibly related to argument '%s') - %s", e.name, e.err)
}
