package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A primary's stream id names its history since its last unclean start.
// A power loss can cut the WAL's unsynced tail, which replicas may
// already hold: after it, the primary's history and theirs differ past
// the cut. So streamFile holds the id, written durably at start with the
// end "-" (running), and a clean shutdown writes the last sequence
// number as the end: the next start keeps the id only if the file says
// the DB ended cleanly where it ends now. Otherwise it takes a new id,
// and the new stream continues the old one up to where the DB's
// recovery ended (prev): what recovery kept is a prefix of what the old
// stream sent (a batch is streamed only once in the WAL), so a replica
// of the old stream that holds no batch past that point holds a prefix
// of the new history and resumes, from the ring or the retained WAL
// (replbacklog_wal.go), while one ahead of it (the crash lost its tail
// on the primary) takes a full copy. A recovery that found acknowledged
// writes lost in the middle of the WAL (Metrics' RecoveryLostEntries)
// keeps no prefix. The same holds for a promotion: the new stream
// continues the one the server kept as a replica, up to the promotion.
// A replica saves the id of the stream it follows in
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

// streamPrefix is a stream's history up to end, which the current
// stream continues.
type streamPrefix struct {
	id  string
	end uint64
}

// loadStream sets the stream id at start, from streamFile: "id end [prev
// prev-end]", end being "-" while the server runs.
func (s *Server) loadStream() error {
	id := newRunID()
	var prev *streamPrefix
	data, err := os.ReadFile(s.replFile(streamFile))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	last := s.db.LastSeq()
	if f := strings.Fields(string(data)); len(f) >= 2 {
		end, err := strconv.ParseUint(f[1], 10, 64)
		switch {
		case err == nil && end == last:
			id = f[0]
			if len(f) >= 4 {
				if pend, err := strconv.ParseUint(f[3], 10, 64); err == nil {
					prev = &streamPrefix{f[2], pend}
				}
			}
		case f[1] == "-" && s.db.Metrics().WAL.RecoveryLostEntries == 0:
			prev = &streamPrefix{f[0], last}
			s.log.Info("replication: unclean start; replicas of the previous stream that hold nothing past the recovered end resume",
				"previous_stream", f[0], "recovered_end", last)
		}
	}
	s.repl.stream.Store(&id)
	s.repl.prev.Store(prev)
	s.repl.streamStart.Store(s.repl.backlog.extentNext())
	if err := s.writeStreamFile("-"); err != nil {
		// Without the file the next start takes a new id that continues
		// nothing: replicas may need a new copy, never more. A file
		// left from an earlier run would be wrong, so it must go.
		if rerr := os.Remove(s.replFile(streamFile)); rerr != nil && !os.IsNotExist(rerr) {
			return errors.Join(err, rerr)
		}
		s.log.Warn("replication: cannot record the stream id; replicas may need a new copy after a crash", "err", err)
	}
	return nil
}

// newStream starts a new history here on promotion, which continues the
// stream this server kept as a replica up to now.
func (s *Server) newStream() {
	old := *s.repl.stream.Load()
	id := newRunID()
	s.repl.prev.Store(&streamPrefix{old, s.db.LastSeq()})
	s.repl.stream.Store(&id)
	s.repl.streamStart.Store(s.repl.backlog.extentNext())
	if err := s.writeStreamFile("-"); err != nil {
		s.log.Warn("replication: saving the stream id", "err", err)
	}
}

// continuesPrev reports whether a replica presenting stream and needing
// from next holds a prefix of the current history through prev.
func (s *Server) continuesPrev(stream string, from uint64) bool {
	p := s.repl.prev.Load()
	return p != nil && stream == p.id && from <= p.end+1
}

// saveStream records the stream id after a clean close of the DB at
// lastSeq. A failure only costs the replicas a reseed, so it is logged.
func (s *Server) saveStream(lastSeq uint64) {
	if err := s.writeStreamFile(strconv.FormatUint(lastSeq, 10)); err != nil {
		s.log.Warn("replication: saving the stream id; replicas will need a reseed", "err", err)
	}
}

// writeStreamFile writes streamFile, durably, with end.
func (s *Server) writeStreamFile(end string) error {
	data := *s.repl.stream.Load() + " " + end
	if p := s.repl.prev.Load(); p != nil {
		data += fmt.Sprintf(" %s %d", p.id, p.end)
	}
	return writeFileDurably(s.replFile(streamFile), data+"\n")
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
	return writeFileDurably(s.replFile(followedFile), id+"\n")
}

// writeFileDurably replaces file name with data, atomically and durably.
func writeFileDurably(name, data string) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
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
