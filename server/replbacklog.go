package server

import (
	"slices"
	"strconv"
	"sync"

	"github.com/lsmgo-dev/lsmgo"
)

// replBacklogSize bounds the replication backlog: the newest committed
// batches kept in memory, in bytes of their encoding, so that a
// replica that reconnects after a short break resumes from where it
// stopped instead of needing a new copy. 64 MiB holds several seconds of
// writes at full speed on the reference machine and is a small part of a
// server's memory (doc/replication.md, "Backlog").
const replBacklogSize = 64 << 20

// replBacklogChunk is the most bytes of frames a chunk of the backlog
// holds (less for a small limit). The backlog takes chunks as batches
// come and gives back those the oldest batches leave, so that a server
// whose replicas write little (every replica keeps a backlog too) holds
// little, and nothing is ever copied to make room: a ring that doubled
// as it filled copied and cleared ~200 MiB on the way to its size, 6.6%
// of a primary's CPU in a short benchmark on a fresh server.
const replBacklogChunk = 256 << 10

// replBacklogPage is the most entries a page of the backlog's index holds
// (96 KiB; less for a small limit), for the same reason: an index that
// doubled as it filled copied and cleared 6% of a fresh replica's CPU.
const replBacklogPage = 4096

// replBacklog holds the newest committed batches in commit order, fed by
// the engine's OnCommit hook, in a queue of chunks of bytes: each batch as the RESP
// bulk string the replica streams send it as, so that a stream copies a
// range of the chunks to its connection and nothing is allocated or framed
// per batch (a slice of copies cost one allocation per commit, ~1.5 µs of
// CPU with the garbage collection it made; BenchmarkReplBacklogAdd). An
// index of each batch's first sequence number and place in the stream finds
// a position by binary search. The batches it holds are contiguous in
// sequence numbers: a batch that does not follow the last (the engine
// skipped the numbers of a batch it failed to write) starts it over.
type replBacklog struct {
	mu sync.Mutex
	// The frames form an unbounded stream of bytes of which the backlog
	// holds [head, tail), in chunks of chunk bytes: stream byte o is
	// chunks[o/chunk-base][o%chunk]. spare is the last chunk given back,
	// for the next one taken.
	chunks     [][]byte
	base       uint64
	chunk      int
	spare      []byte
	head, tail uint64
	// index holds, oldest first, an entry per batch, in pages of page
	// entries taken and given back like the chunks: entry i is
	// index[(ihead+i)/page][(ihead+i)%page], for i < n, with ihead < page.
	index     [][]backlogEntry
	page      int
	ihead     int
	sparePage []backlogEntry
	n         int
	// bytes is the size of the batches held, without their framing: the
	// limit applies to it, so that the backlog holds as many batches as
	// its size says whatever their size. The frames are up to half as
	// large again, the most the framing of small batches adds.
	bytes   int
	first   uint64 // the sequence number of the oldest batch held
	next    uint64 // the one after the last, where the next batch must start
	limit   int
	watched []chan struct{}
	// active is set by the first replica's LSMSYNC. Until then the
	// backlog copies no batch, only follows the position of the next:
	// the copy costs every write, and a server that never had a replica
	// should not pay it (Redis also creates its backlog for the first
	// replica). It stays active until the server stops.
	active bool
}

// backlogEntry is a batch's first sequence number, the stream offset of
// its frame and its size.
type backlogEntry struct {
	seq, off uint64
	size     int
}

func newReplBacklog(limit int, next uint64) *replBacklog {
	return &replBacklog{first: next, next: next, limit: limit,
		chunk: min(max(limit/8, 64), replBacklogChunk), page: min(max(limit/1024, 16), replBacklogPage)}
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
	b.clearLocked(next)
}

func (b *replBacklog) clearLocked(next uint64) {
	b.head, b.n, b.bytes, b.first, b.next = b.tail, 0, 0, next, next
	b.dropPages(len(b.index))
	b.release()
}

func (b *replBacklog) entry(i int) backlogEntry {
	i += b.ihead
	return b.index[i/b.page][i%b.page]
}

// push appends e to the index.
func (b *replBacklog) push(e backlogEntry) {
	i := b.ihead + b.n
	if i/b.page == len(b.index) {
		page := b.sparePage
		if page == nil {
			page = make([]backlogEntry, b.page)
		}
		b.index, b.sparePage = append(b.index, page), nil
	}
	b.index[i/b.page][i%b.page] = e
	b.n++
}

// pop drops the oldest entry of the index.
func (b *replBacklog) pop() {
	b.ihead++
	b.n--
	switch {
	case b.n == 0:
		b.dropPages(len(b.index))
	case b.ihead == b.page:
		b.dropPages(1)
	}
}

// dropPages gives back the first k pages of the index, which hold no
// entry, and starts it at the next.
func (b *replBacklog) dropPages(k int) {
	b.ihead = 0
	if k == 0 {
		return
	}
	b.sparePage = b.index[k-1]
	n := copy(b.index, b.index[k:])
	clear(b.index[n:])
	b.index = b.index[:n]
}

// add appends a committed batch starting at seq and spanning count
// sequence numbers; the oldest batches leave to keep the backlog within
// its limit (the newest one always stays). It wakes the watching streams.
func (b *replBacklog) add(seq uint64, count uint32, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.active {
		b.first, b.next = seq+uint64(count), seq+uint64(count)
		return
	}
	if seq != b.next {
		b.clearLocked(seq)
	}
	var hdr [24]byte
	h := strconv.AppendInt(append(hdr[:0], '$'), int64(len(data)), 10)
	h = append(h, '\r', '\n')
	size := uint64(bulkFrameLen(len(data)))
	for b.n > 0 && (b.bytes+len(data) > b.limit || b.tail-b.head+size > uint64(b.framedLimit())) {
		b.bytes -= b.entry(0).size
		b.pop()
		if b.n > 0 {
			e := b.entry(0)
			b.head, b.first = e.off, e.seq
		} else {
			b.head, b.bytes, b.first = b.tail, 0, seq
		}
	}
	b.release()
	b.push(backlogEntry{seq, b.tail, len(data)})
	b.put(h)
	b.put(data)
	b.put([]byte("\r\n"))
	b.bytes += len(data)
	b.next = seq + uint64(count)
	for _, w := range b.watched {
		select {
		case w <- struct{}{}:
		default: // already woken
		}
	}
}

// put appends p to the stream at tail, taking chunks as it needs.
func (b *replBacklog) put(p []byte) {
	for len(p) > 0 {
		i := int(b.tail/uint64(b.chunk) - b.base)
		if i == len(b.chunks) {
			c := b.spare
			if c == nil {
				c = make([]byte, b.chunk)
			}
			b.chunks, b.spare = append(b.chunks, c), nil
		}
		n := copy(b.chunks[i][b.tail%uint64(b.chunk):], p)
		p = p[n:]
		b.tail += uint64(n)
	}
}

// release gives back the chunks wholly before head.
func (b *replBacklog) release() {
	k := int(b.head/uint64(b.chunk) - b.base)
	if k == 0 {
		return
	}
	b.spare = b.chunks[k-1]
	n := copy(b.chunks, b.chunks[k:])
	clear(b.chunks[n:])
	b.chunks = b.chunks[:n]
	b.base += uint64(k)
}

// appendRange appends the stream bytes [from, to) to dst.
func (b *replBacklog) appendRange(dst []byte, from, to uint64) []byte {
	for from < to {
		c := b.chunks[from/uint64(b.chunk)-b.base]
		at := int(from % uint64(b.chunk))
		end := min(len(c), at+int(to-from))
		dst = append(dst, c[at:end]...)
		from += uint64(end - at)
	}
	return dst
}

// framedLimit is the most bytes of frames the backlog holds, but for a
// batch larger than that.
func (b *replBacklog) framedLimit() int { return b.limit + b.limit/2 }

// search returns the position of the batch starting at seq among the n
// held, and whether there is one.
func (b *replBacklog) search(seq uint64) (int, bool) {
	lo, hi := 0, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.entry(m).seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < b.n && b.entry(lo).seq == seq
}

// holds reports whether a stream can start at seq: the start of a batch
// held, or the next to come.
func (b *replBacklog) holds(seq uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, found := b.search(seq)
	return found || seq == b.next
}

// read appends to dst the frames of the batches from sequence number seq
// on, about limit bytes of them (at least one batch), and returns the
// sequence number after the last one appended and whether that is the
// next to come; ok is false when the backlog no longer holds, or never
// held, seq as the start of a batch.
func (b *replBacklog) read(seq uint64, dst []byte, limit int) (out []byte, next uint64, caughtUp, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq == b.next {
		return dst, seq, true, true
	}
	i, found := b.search(seq)
	if !found {
		return dst, seq, false, false
	}
	start := b.entry(i).off
	if b.tail-start <= uint64(limit) {
		return b.appendRange(dst, start, b.tail), b.next, true, true
	}
	// Stop before the first batch that starts past the limit: at least
	// one batch is read.
	lo, hi := i+1, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.entry(m).off-start <= uint64(limit) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == b.n {
		return b.appendRange(dst, start, b.tail), b.next, true, true
	}
	e := b.entry(lo)
	return b.appendRange(dst, start, e.off), e.seq, false, true
}

// framedFrom returns the bytes of the frames from sequence number seq
// on: what a stream starting there has to send of the backlog; 0 when
// seq is not the start of a batch held.
func (b *replBacklog) framedFrom(seq uint64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, found := b.search(seq)
	if !found {
		return 0
	}
	return int64(b.tail - b.entry(i).off)
}

// bulkFrameLen is the size of a batch of n bytes framed as the RESP bulk
// string the streams send: "$n\r\n", the bytes, "\r\n".
func bulkFrameLen(n int) int {
	digits := 1
	for v := n; v >= 10; v /= 10 {
		digits++
	}
	return 1 + digits + 2 + n + 2
}

// watch returns a channel that receives a token when a batch is added
// after it was made (or its last token taken); unwatch stops it.
func (b *replBacklog) watch() chan struct{} {
	w := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watched = append(b.watched, w)
	return w
}

func (b *replBacklog) unwatch(w chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watched = slices.DeleteFunc(b.watched, func(o chan struct{}) bool { return o == w })
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
