package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A primary's stream id names its history since its last unclean start.
// A power loss can cut the WAL's unsynced tail, which replicas may
// already hold: after it, the primary's history and theirs differ past
// the cut. So a clean shutdown saves the id with the last sequence
// number, in streamFile, and the next start keeps it only if the file is
// there and the DB ends at that sequence number; the file is removed at
// start, durably, so a crash after it leaves no file and the next start
// takes a new id. A replica saves the id of the stream it follows in
// followedFile, durably, before it applies a batch of that stream, and
// presents it in LSMSYNC; one with another id is served only from the
// very start of the current stream. A replica without the file never
// streamed: its data is a checkpoint (a copy holds only synced tables),
// which no crash of the primary can have lost, and it is served from
// wherever the backlog holds.

const (
	streamFile   = "replication-stream"
	followedFile = "replication-followed"
)

func (s *Server) replFile(name string) string { return filepath.Join(s.config().Dir, name) }

// loadStream sets the stream id at start.
func (s *Server) loadStream() error {
	s.newStream()
	name := s.replFile(streamFile)
	data, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if id, seq, ok := strings.Cut(strings.TrimSpace(string(data)), " "); ok {
		if n, err := strconv.ParseUint(seq, 10, 64); err == nil && n == s.db.LastSeq() && id != "" {
			s.repl.stream.Store(&id)
		}
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// newStream starts a new history here: at start, or on promotion.
func (s *Server) newStream() {
	id := newRunID()
	s.repl.stream.Store(&id)
	s.repl.streamStart.Store(s.repl.backlog.extentNext())
}

// saveStream records the stream id after a clean close of the DB at
// lastSeq. A failure only costs the replicas a reseed, so it is logged.
func (s *Server) saveStream(lastSeq uint64) {
	data := fmt.Sprintf("%s %d\n", *s.repl.stream.Load(), lastSeq)
	if err := os.WriteFile(s.replFile(streamFile), []byte(data), 0o644); err != nil {
		s.log.Warn("replication: saving the stream id; replicas will need a reseed", "err", err)
	}
}

// followedStream is the id of the stream this replica's batches are of,
// or "?".
func (s *Server) followedStream() string {
	data, err := os.ReadFile(s.replFile(followedFile))
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

// saveFollowedStream records, durably, the stream this replica's next
// batches come from, before it applies any.
func (s *Server) saveFollowedStream(id string) error {
	if s.followedStream() == id {
		return nil
	}
	name := s.replFile(followedFile)
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return err
	}
	if f, err := os.Open(tmp); err == nil {
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
