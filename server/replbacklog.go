package server

import (
	"slices"
	"sync"

	"github.com/lsmgo-dev/lsmgo"
)

// replBacklogSize bounds the replication backlog: the newest committed
// batches kept in memory, in bytes of their encoding, so that a replica
// that reconnects after a short break resumes from where it stopped
// instead of needing a new copy. 64 MiB holds several seconds of writes
// at full speed on the reference machine and is a small part of a
// server's memory (doc/replication.md, "Backlog").
const replBacklogSize = 64 << 20

// replBacklog holds the newest committed batches in commit order, fed by
// the engine's OnCommit hook. The batches it holds are contiguous in
// sequence numbers: a batch that does not follow the last (the engine
// skipped the numbers of a batch it failed to write) starts it over.
type replBacklog struct {
	mu      sync.Mutex
	batches [][]byte
	// starts[i] is the sequence number batches[i] starts at, so that a
	// replica stream finds its place by a binary search instead of
	// decoding every batch before it on each wake.
	starts []uint64
	// first is the sequence number of batches[0]; next the one after the
	// last batch, where the next batch must start.
	first, next uint64
	bytes       int
	limit       int
	// changed is closed, and replaced, when a batch is added after
	// someone took it to wait for one.
	changed chan struct{}
	watched bool
	// active is set by the first replica's LSMSYNC. Until then the
	// backlog copies no batch, only follows the position of the next:
	// the copy costs every write, and a server that never had a replica
	// should not pay it (Redis also creates its backlog for the first
	// replica). It stays active until the server stops.
	active bool
}

func newReplBacklog(limit int, next uint64) *replBacklog {
	return &replBacklog{first: next, next: next, limit: limit, changed: make(chan struct{})}
}

// activate makes the backlog keep batches from the next one on.
func (b *replBacklog) activate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active = true
}

// isActive reports whether the backlog keeps batches, for INFO.
func (b *replBacklog) isActive() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active
}

// reset empties the backlog, which starts again at next.
func (b *replBacklog) reset(next uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.batches)
	b.batches, b.starts, b.bytes, b.first, b.next = b.batches[:0], b.starts[:0], 0, next, next
}

// add appends a copy of a committed batch starting at seq and spanning
// count sequence numbers; the oldest batches leave to keep the backlog
// within its limit (the newest one always stays).
func (b *replBacklog) add(seq uint64, count uint32, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.active {
		b.first, b.next = seq+uint64(count), seq+uint64(count)
		return
	}
	data = append([]byte(nil), data...)
	if seq != b.next {
		clear(b.batches)
		b.batches, b.starts, b.bytes, b.first = b.batches[:0], b.starts[:0], 0, seq
	}
	b.batches = append(b.batches, data)
	b.starts = append(b.starts, seq)
	b.bytes += len(data)
	b.next = seq + uint64(count)
	for b.bytes > b.limit && len(b.batches) > 1 {
		b.bytes -= len(b.batches[0])
		b.batches[0] = nil
		b.batches, b.starts = b.batches[1:], b.starts[1:]
		b.first = b.starts[0] // the batches are contiguous
	}
	if b.watched {
		close(b.changed)
		b.changed, b.watched = make(chan struct{}), false
	}
}

// from returns the batches from sequence number seq on (none when seq is
// the next to come) and a channel closed when another batch arrives; ok
// is false when the backlog no longer holds, or never held, seq.
func (b *replBacklog) from(seq uint64) (batches [][]byte, changed <-chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watched = true
	if seq < b.first || seq > b.next {
		return nil, b.changed, false
	}
	if i, found := slices.BinarySearch(b.starts, seq); found {
		return append([][]byte(nil), b.batches[i:]...), b.changed, true
	}
	// Either the next batch to come, or inside a batch: not a boundary.
	return nil, b.changed, seq == b.next
}

// extent returns the first sequence number the backlog holds and its
// size in bytes, for INFO.
func (b *replBacklog) extent() (first uint64, size int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.first, b.bytes
}

// extentNext returns the sequence number the next batch will start at.
func (b *replBacklog) extentNext() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// replCount is how many sequence numbers a replicated batch spans; the
// engine made the batch, so it decodes.
func replCount(data []byte) uint32 {
	_, n, _ := lsmgo.ReplicatedSeq(data)
	return n
}
