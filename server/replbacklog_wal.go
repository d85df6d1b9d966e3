package server

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// The replication backlog has two parts (doc/replication.md, "Backlog"):
// the ring of the newest batches in memory (replbacklog.go), from which
// every stream sends as long as it holds the stream's position, and the
// WAL files the engine keeps after their flush (repl-backlog-size,
// repl-backlog-ttl), read back with lsmgo.DB.NewLogReader, from which a
// stream whose position the ring does not hold catches up until the ring
// holds it. The ring stays the front: it sends the live tail as framed
// bytes without a read, a decode or an allocation per batch, while the
// WAL serves what the ring cannot, in particular everything after a
// restart of this server, when the ring starts empty.

// replBacklogSettings are repl-backlog-size and repl-backlog-ttl.
func replBacklogSettings() []*setting {
	return []*setting{
		sizeSetting("repl-backlog-size", "bytes of WAL files kept after their flush, from which replicas resume, with the blob files only they keep", true, 0, 1<<50,
			func(c *Config) *int64 { return &c.ReplBacklogSize }),
		durationSetting("repl-backlog-ttl", "seconds a WAL file is kept after its flush for replicas (0: no bound but the size)", true, time.Second, 0,
			func(c *Config) *time.Duration { return &c.ReplBacklogTTL }),
	}
}

// openRetained returns a reader of the retained WAL from position from,
// or why it cannot serve it. repl-backlog-size 0 turns the WAL part of
// the backlog off, the live WAL files included.
//
// A position at or before one where reading the WAL failed (walBad) is
// served only if that batch reads now: the failure may have been
// transient (an I/O error, no file descriptor free), and then the mark is
// cleared and replicas resume as before; if it still fails (damage, a
// value gone), the replica takes a full copy, logged, instead of reading
// up to the failure again and again.
func (s *Server) openRetained(from uint64) (*lsmgo.LogReader, string) {
	if s.config().ReplBacklogSize == 0 {
		return nil, "off (repl-backlog-size 0)"
	}
	if bad := s.repl.walBad.Load(); bad != 0 && from <= bad {
		if err := s.probeRetained(bad); err != nil {
			s.log.Error("replication: the retained WAL still fails; a replica at or before this position takes a full copy",
				"position", bad, "err", err)
			return nil, fmt.Sprintf("the retained WAL fails at %d", bad)
		}
		s.repl.walBad.CompareAndSwap(bad, 0)
		s.log.Info("replication: the retained WAL reads again where it had failed", "position", bad)
	}
	lr, err := s.db.NewLogReader(from)
	if err != nil {
		return nil, err.Error()
	}
	return lr, ""
}

// probeRetained reads the batch at position at from the retained WAL.
func (s *Server) probeRetained(at uint64) error {
	lr, err := s.db.NewLogReader(at)
	if err != nil {
		return err
	}
	defer lr.Close()
	if _, err := lr.Next(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// readRetained appends to dst the frames of the batches lr reads, about
// limit bytes of them, stopping where the ring holds the position (lr's
// Pos is then where the ring takes over). caughtUp is true when the WAL
// holds no more yet: not when the ring takes over, since the ring may
// hold batches past that position already, which the stream must send
// now, not once a new batch or the next PING wakes it.
func (s *Server) readRetained(lr *lsmgo.LogReader, dst []byte, limit int) (out []byte, caughtUp bool, err error) {
	for len(dst) < limit {
		if s.repl.backlog.holds(lr.Pos()) {
			return dst, false, nil
		}
		pos := lr.Pos()
		data, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return dst, true, nil
		}
		if err != nil {
			if errors.Is(err, lsmgo.ErrNotRetained) {
				for bad := s.repl.walBad.Load(); bad < pos && !s.repl.walBad.CompareAndSwap(bad, pos); bad = s.repl.walBad.Load() {
				}
				s.log.Error("replication: the retained WAL cannot serve a replica past this position; it takes a full copy unless the position reads again",
					"position", pos, "err", err)
			}
			return dst, false, err
		}
		dst = strconv.AppendInt(append(dst, '$'), int64(len(data)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, data...)
		dst = append(dst, '\r', '\n')
	}
	return dst, false, nil
}
