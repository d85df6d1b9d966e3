package server

import (
	"errors"
	"strconv"
	"strings"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// A promoted replica (REPLICAOF NO ONE, as Sentinel sends) takes a new
// dataset id, since its history diverges from its old primary's from its
// first write on. Its former siblings, replicas of the same primary,
// still hold a prefix of its history when they are not ahead of it, and
// Sentinel points them at it: the fork record lets them continue
// without a new copy, as Redis' PSYNC2 does with replid2. At promotion
// the server writes, in the batch that sets its new dataset id, the old
// dataset id, the id of the stream it followed and its last sequence
// number. It then streams to a replica that presents that old dataset id
// only if the replica presents that stream too (its batches came from
// the same primary history, and its data is a copy, never "?") and needs
// nothing past the fork (from <= end+1). The old primary never qualifies:
// it followed no stream of its own history, and may hold writes the
// promoted replica lacks. The sibling takes the new dataset id with the
// batch that set it, and presents it from its next connection on.

// forkKey holds "dataset-id stream-id end" of the history this server
// forked from at its last promotion.
const forkKey = string(keylayout.Meta) + "replication-fork"

// forkPoint is a decoded fork record.
type forkPoint struct {
	dataset, stream string
	end             uint64
}

// promotionBatch is the batch of a promotion: the new dataset id and the
// fork record.
func (s *Server) promotionBatch(newDataset string) *lsmgo.Batch {
	b := s.db.NewBatch()
	b.Set([]byte(datasetKey), []byte(newDataset))
	fork := s.repl.datasetID() + " " + s.followedStream() + " " + strconv.FormatUint(s.db.LastSeq(), 10)
	b.Set([]byte(forkKey), []byte(fork))
	return b
}

// fork reads the fork record; ok is false when this server never was
// promoted (nor copied from one that was).
func (s *Server) fork() (f forkPoint, ok bool) {
	v, err := s.db.Get([]byte(forkKey))
	if err != nil {
		return f, false
	}
	fields := strings.Fields(string(v))
	if len(fields) != 3 {
		return f, false
	}
	end, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil {
		return f, false
	}
	return forkPoint{fields[0], fields[1], end}, true
}

// continuesFork reports whether a replica of the primary this server was
// promoted from, presenting dataset, stream and from, holds a prefix of
// this server's history; why says what it lacks when the dataset is the
// fork's but the rest does not fit.
func (s *Server) continuesFork(dataset, stream string, from uint64) (ok bool, why string) {
	f, found := s.fork()
	switch {
	case !found || dataset != f.dataset:
		return false, ""
	case stream == "?" || stream != f.stream:
		return false, "the replica's batches are not of the history this primary was promoted from"
	case from > f.end+1:
		return false, "the replica holds batches past the point where this primary was promoted"
	}
	return true, ""
}

// reloadDataset takes the dataset id from the DB, where a promoted
// primary's batch may have changed it since this replica started.
func (s *Server) reloadDataset() error {
	id, err := s.db.Get([]byte(datasetKey))
	if err != nil && !errors.Is(err, lsmgo.ErrNotFound) {
		return err
	}
	if err == nil {
		s.repl.setDataset(string(id))
	}
	return nil
}
