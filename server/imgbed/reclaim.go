package imgbed

import (
	"sync"
)

// A Reclaimer carries dead blobs from a DB's compaction filter to the
// Host that deletes their bytes when the filter cannot: bytes kept in a
// remote store (S3) need a request to delete, and a filter may neither
// send one nor write to the DB. Make one per DB, give it to both
// NewCompactionFilter and Config.Reclaimer.
//
// The filter keeps such a blob's metadata and reports its hash; the Host
// then deletes the blob as the last reference's deletion does (store.
// discard): in one batch it removes the metadata and its thumbnails' and
// marks each generation pending, then deletes the objects and the
// markers. A crash after that batch leaves the markers, which the next
// start sweeps; a crash before it loses only the report, and the filter
// reports the metadata again the next time a compaction rewrites it.
// Nothing is scanned.
type Reclaimer struct {
	mu      sync.Mutex
	st      *store // the attached host's; nil until one is
	dead    map[sum]struct{}
	running bool
}

// NewReclaimer returns a Reclaimer with no Host attached: what filters
// report before one is waits for it.
func NewReclaimer() *Reclaimer { return &Reclaimer{dead: make(map[sum]struct{})} }

// maxReports bounds the reports waiting for a Host: those past it are
// dropped, and made again by a later compaction.
const maxReports = 1 << 16

// report records that the metadata of s was dead in a filter's state.
// It never blocks on the DB: the filter's compaction may be what a write
// waits for.
func (r *Reclaimer) report(s sum) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dead) < maxReports {
		r.dead[s] = struct{}{}
	}
	r.startLocked()
}

// attach makes st the store that deletes what is reported, from now on
// and for the reports already waiting.
func (r *Reclaimer) attach(st *store) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st = st
	r.startLocked()
}

// startLocked starts the goroutine that empties r.dead unless it runs
// already or there is nothing to do.
func (r *Reclaimer) startLocked() {
	if r.running || r.st == nil || len(r.dead) == 0 {
		return
	}
	r.running = true
	go r.run()
}

func (r *Reclaimer) run() {
	for {
		r.mu.Lock()
		st := r.st
		var s sum
		found := false
		for k := range r.dead {
			s, found = k, true
			delete(r.dead, k)
			break
		}
		if !found {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// A failure (the DB closed or read-only) leaves the metadata to
		// be reported again.
		st.reclaimDead(s)
	}
}

// reclaimDead deletes the blob s and its thumbnails if its metadata is
// still dead: what the last reference's deletion would have done. A
// replica leaves it to its primary, whose deletions reach it as batches:
// its own would diverge from them (and delete the primary's objects in a
// shared bucket twice).
func (st *store) reclaimDead(s sum) error {
	if st.follows != nil && st.follows() {
		return nil
	}
	garbage, err := func() ([]blobMeta, error) {
		defer st.locks.lock("b" + string(s[:]))()
		var meta blobMeta
		switch err := getJSON(st.db, blobKey(s), &meta, "blob metadata"); {
		case err == errNotFound:
			return nil, nil
		case err != nil:
			return nil, err
		case meta.live(st.now()):
			return nil, nil // uploaded again since the filter's state
		}
		b := st.db.NewBatch()
		b.Delete(blobKey(s))
		garbage, err := st.discard(b, s, meta)
		if err != nil {
			return nil, err
		}
		return garbage, st.db.Apply(b, nil)
	}()
	if err != nil {
		return err
	}
	st.reclaimAll(s, garbage)
	return nil
}
