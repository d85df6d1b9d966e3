package server

import (
	"context"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
)

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 7.2 parses it
// (doc/server.md, "Shutdown"). Every write is already durable, and every
// shutdown flushes the memtable and closes the engine cleanly; SAVE adds a
// backup into backup-dir when one is set, and FORCE shuts down even if that
// backup fails. lsmgo has no replicas to wait for, so NOW changes nothing
// and a shutdown never waits in a state ABORT could cancel: ABORT always
// answers that no shutdown is in progress. On success the client gets no
// reply: its connection closes, as in Redis, and lsmgo serve exits 0.

func init() {
	register(spec{name: "shutdown", arity: -1, flags: flagAdmin | flagLoading | flagStale | flagNoMulti, group: "server", since: "1.0.0",
		summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", run: cmdShutdown})
}

func cmdShutdown(c *conn, _ *command, args [][]byte) error {
	c.detach() // shutdown waits for the event loop's clients
	var nosave, save, now, force, abort bool
	for _, a := range args[1:] {
		switch {
		case is(a, "NOSAVE"):
			nosave = true
		case is(a, "SAVE"):
			save = true
		case is(a, "NOW"):
			now = true
		case is(a, "FORCE"):
			force = true
		case is(a, "ABORT"):
			abort = true
		default:
			return redisError(msgSyntax)
		}
	}
	if abort && (nosave || save || now || force) || nosave && save {
		return redisError(msgSyntax)
	}
	if abort {
		return redisError("ERR No shutdown in progress.")
	}
	if r := c.s.scripts.running.Load(); r != nil && r.conn != c && time.Since(r.start) >= c.s.config().BusyReplyThreshold {
		// As in Redis, a script past busy-reply-threshold lets only
		// SHUTDOWN NOSAVE through, which stops it: its writes are
		// dropped, as SCRIPT KILL's would be.
		if !nosave {
			if r.function {
				return redisError(msgBusyFunction)
			}
			return redisError(msgBusyScript)
		}
		r.vm.Kill(luascript.ErrKilled)
	}
	if save {
		if err := c.s.shutdownBackup(); err != nil {
			c.s.log.Warn("SHUTDOWN SAVE: the backup failed", "err", err, "force", force)
			if !force {
				return redisError("ERR Errors trying to SHUTDOWN. Check logs.")
			}
		}
	}
	c.s.log.Info("SHUTDOWN received; shutting down", "client", c.nc.RemoteAddr().String())
	c.s.askShutdown()
	c.quit = true // the connection closes without a reply
	return nil
}

// shutdownBackup takes SHUTDOWN SAVE's backup: SAVE's, when backup-dir is
// set; without one there is nothing to add to the data directory, which
// the shutdown leaves clean.
func (s *Server) shutdownBackup() error {
	if s.config().BackupDir == "" {
		return nil
	}
	dest, err := s.beginBackup()
	if err != nil {
		return err
	}
	ctx, cancel := s.shutdownContext()
	defer cancel()
	_, _, err = s.runBackup(ctx, dest)
	return err
}

// askShutdown starts the shutdown a client asked for, once, in the
// background: it waits for every connection, the asking one included.
func (s *Server) askShutdown() {
	s.shutdownAskedOnce.Do(func() {
		close(s.shutdownAsked)
		go s.Shutdown(context.Background())
	})
}

// ShutdownAsked is closed once a client's SHUTDOWN has started the
// server's shutdown; Shutdown then returns its result.
func (s *Server) ShutdownAsked() <-chan struct{} { return s.shutdownAsked }
