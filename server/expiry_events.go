package server

import (
	"container/heap"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// The "expired" keyspace event (notify.go). The engine drops an expired
// value by itself, when reads pass it or compaction rewrites it, so no
// command ever deletes it and nothing would announce it. While "expired"
// events are on (notify-keyspace-events with x, and K or E), the
// expiryWatch keeps the expiry time of every key that has one, in memory
// as Redis' expires dictionary does, and publishes "expired" at that time
// (the watch loop), or at once when a write finds the key expired
// already. It learns the times from every batch the keyspace commits
// (observe reads each written key back), and when turned on it reads the
// expiring keys once (seed). Off, it costs one atomic load per commit.
type expiryWatch struct {
	on atomic.Bool
	// publish announces one expired key, named by its engine key (its
	// namespace and user key), under the key's stripe lock, so that it
	// precedes the events of any later write of the key.
	publish func(engineKey []byte)

	mu   sync.Mutex
	at   map[string]time.Time // the expiry of each engine key that has one
	due  expiryHeap           // the same, soonest first; stale entries skipped
	wake chan struct{}        // a sooner expiry arrived
}

func newExpiryWatch(publish func(engineKey []byte)) *expiryWatch {
	return &expiryWatch{publish: publish, at: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

type expiryItem struct {
	at  time.Time
	key string
}

type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// observe learns the expiry of every key b wrote, which has just
// committed (it began to at committing); the writer still holds the keys'
// stripes. The expiries come from the batch, not from reading the keys
// back: on a loaded machine a short expiry (PX 100) may pass before this
// runs, and a key read back expired would never be announced. A write
// whose expiry had passed before the commit began (GETEX EXAT in the
// past) leaves its key absent, which its command announced itself. A key
// found expired since the watch last saw it is announced first.
func (w *expiryWatch) observe(b *lsmgo.Batch, committing time.Time) {
	now := time.Now()
	// The last write of a key in the batch is what the key became.
	var keys []string
	last := map[string]time.Time{}
	b.ForEachExpiry(func(k []byte, at time.Time) {
		if _, _, ok := userKeyOf(k); !ok {
			return
		}
		if _, seen := last[string(k)]; !seen {
			keys = append(keys, string(k))
		}
		last[string(k)] = at
	})
	for _, key := range keys {
		expireAt := last[key]
		if !expireAt.After(committing) {
			expireAt = time.Time{}
		}
		w.mu.Lock()
		old, had := w.at[key]
		w.setLocked(key, expireAt)
		w.mu.Unlock()
		if had && !old.After(now) && !old.Equal(expireAt) {
			w.publish([]byte(key))
		}
	}
}

// setLocked records key's expiry, zero for none.
func (w *expiryWatch) setLocked(key string, at time.Time) {
	if at.IsZero() {
		delete(w.at, key)
		return
	}
	if old, ok := w.at[key]; ok && old.Equal(at) {
		return
	}
	w.at[key] = at
	if len(w.due) > 2*len(w.at)+1024 {
		w.rebuildLocked() // stale entries outnumber live ones
	}
	heap.Push(&w.due, expiryItem{at: at, key: key})
	if w.due[0].key == key && w.due[0].at.Equal(at) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *expiryWatch) rebuildLocked() {
	w.due = w.due[:0]
	for k, at := range w.at {
		w.due = append(w.due, expiryItem{at: at, key: k})
	}
	heap.Init(&w.due)
}

// next returns how long until the soonest expiry (a minute when none).
func (w *expiryWatch) next() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.due) == 0 {
		return time.Minute
	}
	return max(time.Until(w.due[0].at), 0)
}

// takeDue removes and returns the keys whose expiry has passed.
func (w *expiryWatch) takeDue() []expiryItem {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []expiryItem
	for len(w.due) > 0 && !w.due[0].at.After(now) {
		it := heap.Pop(&w.due).(expiryItem)
		if at, ok := w.at[it.key]; ok && at.Equal(it.at) {
			out = append(out, it)
		}
	}
	return out
}

// expire announces it if its key is gone and still carries that expiry
// in the watch; a key the engine still shows (its clock a little behind)
// is looked at again shortly.
func (w *expiryWatch) expire(ks *keyspace, it expiryItem) {
	_, userKey, _ := userKeyOf([]byte(it.key))
	held := lockSet{}.add(ks.locks, userKey).lock(ks.locks)
	defer held.unlock(ks.locks)
	_, expireAt, err := ks.db.GetWithExpiry([]byte(it.key))
	w.mu.Lock()
	cur, ok := w.at[it.key]
	tracked := ok && cur.Equal(it.at)
	switch {
	case !tracked:
	case errors.Is(err, lsmgo.ErrNotFound):
		delete(w.at, it.key)
	case err == nil:
		if expireAt.Equal(it.at) {
			// The engine's clock has not passed it yet.
			expireAt = expireAt.Add(time.Millisecond)
		}
		delete(w.at, it.key)
		w.setLocked(it.key, expireAt)
		tracked = false
	default:
		tracked = false // an engine error: learnt again at the next write
	}
	w.mu.Unlock()
	if tracked && errors.Is(err, lsmgo.ErrNotFound) {
		w.publish([]byte(it.key))
	}
}

// loop publishes expiries as they fall due, until done closes.
func (w *expiryWatch) loop(ks *keyspace, done <-chan struct{}) {
	t := time.NewTimer(w.next())
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-w.wake:
		case <-t.C:
		}
		if w.on.Load() {
			for _, it := range w.takeDue() {
				w.expire(ks, it)
			}
		}
		t.Reset(w.next())
	}
}

// turn switches the watch on or off. Turned on, it reads the expiry of
// every expiring key once; the keys written meanwhile it learns from
// their commits. Every stripe is taken once first, so that a commit that
// missed the switch has finished before the keys are read.
func (w *expiryWatch) turn(ks *keyspace, on bool) {
	if w.on.Swap(on) == on {
		return
	}
	if !on {
		w.mu.Lock()
		w.at, w.due = map[string]time.Time{}, nil
		w.mu.Unlock()
		return
	}
	allStripes(nil).lock(ks.locks).unlock(ks.locks)
	var keys []string
	for _, ns := range ks.namespaces() {
		ks.scanKeys(ks.db, ns, nil, nil, func(key []byte, _ byte, expires bool) bool {
			if expires {
				keys = append(keys, string(dataKey(nil, ns, key)))
			}
			return true
		})
	}
	for _, key := range keys {
		_, userKey, _ := userKeyOf([]byte(key))
		held := lockSet{}.add(ks.locks, userKey).lock(ks.locks)
		_, expireAt, err := ks.db.GetWithExpiry([]byte(key))
		if err == nil && w.on.Load() {
			w.mu.Lock()
			w.setLocked(key, expireAt)
			w.mu.Unlock()
		}
		held.unlock(ks.locks)
	}
}
