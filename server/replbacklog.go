package server

import (
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
	b.batches, b.bytes, b.first, b.next = b.batches[:0], 0, next, next
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
		b.batches, b.bytes, b.first = b.batches[:0], 0, seq
	}
	b.batches = append(b.batches, data)
	b.bytes += len(data)
	b.next = seq + uint64(count)
	for b.bytes > b.limit && len(b.batches) > 1 {
		old := b.batches[0]
		b.bytes -= len(old)
		b.first += uint64(replCount(old))
		b.batches[0] = nil
		b.batches = b.batches[1:]
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
	at := b.first
	for i, data := range b.batches {
		if at == seq {
			return append([][]byte(nil), b.batches[i:]...), b.changed, true
		}
		at += uint64(replCount(data))
		if at > seq {
			// seq falls inside a batch: not a batch boundary.
			return nil, b.changed, false
		}
	}
	return nil, b.changed, at == seq
}

// replCount is how many sequence numbers a replicated batch spans; the
// engine made the batch, so it decodes.
func replCount(data []byte) uint32 {
	_, n, _ := lsmgo.ReplicatedSeq(data)
	return n
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
