package lsmgo

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/bloom"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
)

// memTable is a memtable plus the WAL that holds its writes.
type memTable struct {
	mt     *memtable.Memtable
	logNum base.FileNum
	id     uint64
	// reserved is the arena bytes promised to registered batches (an
	// upper bound of what they use), and maxSeq the largest sequence
	// number registered; both guarded by db.mu.
	reserved int
	maxSeq   base.SeqNum
	// blobBytes counts the value bytes the registered batches wrote to
	// blob files (guarded by db.mu): recovery reads them all to verify
	// the WAL's pointers, so rotation bounds it (maxMemBlobBytes).
	blobBytes int64
	// blobPins are the blob files the memtable's entries point into,
	// pinned (blobFiles.pin) until its last reference goes: a read state
	// may still read a flushed memtable. Guarded by db.mu until then.
	blobPins []base.FileNum
	blobs    *blobFiles
	// inflight counts registered batches not yet inserted; a flush waits
	// for it to reach zero before reading the memtable.
	inflight sync.WaitGroup

	// refs counts the holders of mt: the DB's memtable list, until the
	// flush that retires it, and every read state that names it (each
	// read and iterator pins one). The last unref hands mt to pool.
	refs atomic.Int32
	pool *memtablePool // nil: mt is not recycled
}

func (m *memTable) ref() { m.refs.Add(1) }

func (m *memTable) unref() {
	if m.refs.Add(-1) != 0 {
		return
	}
	if m.pool != nil {
		m.pool.put(m.mt)
	}
	m.blobs.unpin(m.blobPins)
}

// pinBlobs pins the files of nums the memtable has not pinned yet; db.mu
// is held. A memtable points into few files (the active one, and the
// next after a rotation), so a list does.
func (m *memTable) pinBlobs(nums []base.FileNum) {
	for _, num := range nums {
		if !slices.Contains(m.blobPins, num) {
			m.blobs.pin(num)
			m.blobPins = append(m.blobPins, num)
		}
	}
}

// memtablePool keeps one retired memtable of the standard size for the
// next rotation, with its pages given back to the OS (Discard) while it
// waits: a DB that stops writing would otherwise hold a full memtable's
// worth of resident memory it does not use (32 MiB, a sixth of the
// resident set of a 1M-key read benchmark). Without it a DB that fills a 32 MiB memtable every tenth
// of a second leaves a trail of dead arenas that the heap, and the
// process's resident memory, carries until the GC reclaims them. Its
// memtables' arenas live outside the Go heap (memtable.NewMapped), so it
// frees those it does not keep, and after close it keeps none.
type memtablePool struct {
	size int // the capacity every pooled memtable was created with

	mu     sync.Mutex
	spare  *memtable.Memtable
	closed bool
}

// get returns an empty memtable of the pool's size.
func (p *memtablePool) get() *memtable.Memtable {
	p.mu.Lock()
	mt := p.spare
	p.spare = nil
	p.mu.Unlock()
	if mt == nil {
		return memtable.NewMapped(p.size)
	}
	return mt // put emptied it
}

// put takes a memtable nothing references any more: it is kept when the
// pool is open and empty, and freed otherwise.
func (p *memtablePool) put(mt *memtable.Memtable) {
	mt.Discard()
	p.mu.Lock()
	if p.spare == nil && !p.closed {
		p.spare, mt = mt, nil
	}
	p.mu.Unlock()
	if mt != nil {
		mt.Free()
	}
}

// close frees the spare; memtables released later (by iterators that
// outlive the DB) are freed at once.
func (p *memtablePool) close() {
	p.mu.Lock()
	mt := p.spare
	p.spare, p.closed = nil, true
	p.mu.Unlock()
	if mt != nil {
		mt.Free()
	}
}

// supersededMax is the longest batch whose superseded records applyBatch
// leaves out of the memtable. A server pipeline's batch rewrites a hot
// collection's metadata once per command, so half its records are
// superseded within the batch; a bulk load's batches repeat no key, and
// past this length would only pay for the check.
const supersededMax = 4096

// superseded marks the records of a batch that a later record of the same
// key in the batch replaces. A batch becomes visible whole (the visible
// sequence number only ever moves past a whole batch), so no read can see
// such a record: leaving it out of the memtable changes no read, and
// spares the memtable a node and an insertion's search. Separated values
// are always inserted, since a blob file's live bytes are counted from
// the entries that point into it.
type superseded struct {
	keys  [][]byte
	blob  []bool
	slots []uint32 // open addressing: record index + 1, 0 for empty
	dead  []bool
}

var supersededPool = sync.Pool{New: func() any { return new(superseded) }}

// findSuperseded returns the superseded records of repr, or nil when it
// has none or is too short or too long to look for them. The caller
// hands a result back with release.
func findSuperseded(repr []byte) (*superseded, error) {
	n := int(batchrepr.Count(repr))
	if n < 2 || n > supersededMax {
		return nil, nil
	}
	s := supersededPool.Get().(*superseded)
	s.keys, s.blob = s.keys[:0], s.blob[:0]
	s.dead = append(s.dead[:0], make([]bool, n)...)
	size := 4
	for size < 2*n {
		size *= 2
	}
	s.slots = append(s.slots[:0], make([]uint32, size)...)
	r, err := batchrepr.NewReader(repr)
	if err != nil {
		s.release()
		return nil, err
	}
	found := false
	for i := 0; ; i++ {
		kind, key, _, ok, err := r.Next()
		if err != nil || !ok {
			if err != nil || !found {
				s.release()
				return nil, err
			}
			return s, nil
		}
		s.keys, s.blob = append(s.keys, key), append(s.blob, kind.IsBlob())
		for h := bloom.Hash(key) & uint64(size-1); ; h = (h + 1) & uint64(size-1) {
			j := s.slots[h]
			if j == 0 {
				s.slots[h] = uint32(i + 1)
				break
			}
			if bytes.Equal(s.keys[j-1], key) {
				if !s.blob[j-1] {
					s.dead[j-1], found = true, true
				}
				s.slots[h] = uint32(i + 1)
				break
			}
		}
	}
}

func (s *superseded) skip(i int) bool { return s != nil && s.dead[i] }

func (s *superseded) release() {
	if s != nil {
		clear(s.keys) // they alias the batch
		supersededPool.Put(s)
	}
}
