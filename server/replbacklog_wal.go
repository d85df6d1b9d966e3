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
		sizeSetting("repl-backlog-size", "bytes of WAL files kept after their flush, from which replicas resume", true, 0, 1<<50,
			func(c *Config) *int64 { return &c.ReplBacklogSize }),
		durationSetting("repl-backlog-ttl", "seconds a WAL file is kept after its flush for replicas (0: no bound but the size)", true, time.Second, 0,
			func(c *Config) *time.Duration { return &c.ReplBacklogTTL }),
	}
}

// openRetained returns a reader of the retained WAL from position from,
// or why it cannot serve it. repl-backlog-size 0 turns the WAL part of
// the backlog off, the live WAL files included. A position at or before
// one where reading the WAL failed is not tried again: the stream that
// met the failure sent NOBACKLOG, and its replica takes a full copy.
func (s *Server) openRetained(from uint64) (*lsmgo.LogReader, string) {
	if s.config().ReplBacklogSize == 0 {
		return nil, "off (repl-backlog-size 0)"
	}
	if bad := s.repl.walBad.Load(); bad != 0 && from <= bad {
		return nil, fmt.Sprintf("the retained WAL failed at %d", bad)
	}
	lr, err := s.db.NewLogReader(from)
	if err != nil {
		return nil, err.Error()
	}
	return lr, ""
}

// readRetained appends to dst the frames of the batches lr reads, about
// limit bytes of them, stopping where the ring holds the position; it
// returns the position after the last batch appended. caughtUp is true
// when the WAL holds no more yet or the ring takes over.
func (s *Server) readRetained(lr *lsmgo.LogReader, dst []byte, limit int) (out []byte, caughtUp bool, err error) {
	for len(dst) < limit {
		if s.repl.backlog.holds(lr.Pos()) {
			return dst, true, nil
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
				s.log.Error("replication: the retained WAL cannot serve a replica past this position; it takes a full copy",
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
