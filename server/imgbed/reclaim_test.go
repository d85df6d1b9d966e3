package imgbed

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memBlobs is a remote blob store in memory, standing in for S3 where
// its server is missing: the Reclaimer's path is the same.
type memBlobs struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (*memBlobs) kind() string { return "mem" }

func memName(s sum, g gen) string { return string(s[:]) + string(g[:]) }

func (m *memBlobs) put(_ context.Context, s sum, g gen, r io.Reader, _ int64, _ string) error {
	b, err := io.ReadAll(r)
	if err == nil {
		m.mu.Lock()
		m.objs[memName(s, g)] = b
		m.mu.Unlock()
	}
	return err
}

func (m *memBlobs) open(_ context.Context, s sum, meta *blobMeta) (io.ReadSeekCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[memName(s, meta.Gen)]
	if !ok {
		return nil, errNotFound
	}
	return struct {
		io.ReadSeeker
		io.Closer
	}{bytes.NewReader(b), io.NopCloser(nil)}, nil
}

func (m *memBlobs) remove(_ context.Context, s sum, g gen) error {
	m.mu.Lock()
	delete(m.objs, memName(s, g))
	m.mu.Unlock()
	return nil
}

func (m *memBlobs) stat(_ context.Context, s sum, g gen) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[memName(s, g)]
	if !ok {
		return 0, errNotFound
	}
	return int64(len(b)), nil
}

func (m *memBlobs) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objs)
}

// TestRemoteExpiryReclaimed is TestS3ExpiryReclaimed on a remote store
// in memory, so that the filter → Reclaimer → host path runs where no
// SeaweedFS binary is built.
func TestRemoteExpiryReclaimed(t *testing.T) {
	for _, remoteThumbs := range []bool{false, true} {
		name := "thumbnails=db"
		if remoteThumbs {
			name = "thumbnails=remote"
		}
		t.Run(name, func(t *testing.T) {
			th, clock := newClockHost(t, Config{})
			mem := &memBlobs{objs: make(map[string][]byte)}
			th.st.remote, th.st.originals = mem, mem
			if remoteThumbs {
				th.st.thumbnails = mem
			}
			testRemoteExpiry(t, th, clock, mem.count, remoteThumbs)
		})
	}
}

// TestRemoteExpiryLeftToPrimary: on a replica the filter's reports delete
// nothing (no object, no batch of its own); the primary's deletions reach
// it by replication. Once it is a primary again, the next compaction's
// report is acted on.
func TestRemoteExpiryLeftToPrimary(t *testing.T) {
	var replica atomic.Bool
	th, clock := newClockHost(t, Config{Follower: replica.Load})
	mem := &memBlobs{objs: make(map[string][]byte)}
	th.st.remote, th.st.originals = mem, mem
	data := encodePNG(t, gradient(50, 20))
	if status, r := th.uploadRaw(t, data, "image/png", "X-Expiration", "PT1H"); status/100 != 2 {
		t.Fatalf("upload: %d %s", status, r.Message)
	}
	replica.Store(true)
	clock.advance(2 * time.Hour)
	before := th.db.LastSeq()
	th.compactAll(t)
	time.Sleep(200 * time.Millisecond) // the reclaimer's goroutine, had it acted
	if n := mem.count(); n != 1 || th.db.LastSeq() != before {
		t.Fatalf("on a replica: %d objects (want 1), %d batches written", n, th.db.LastSeq()-before)
	}
	replica.Store(false)
	th.compactAll(t)
	deadline := time.Now().Add(30 * time.Second)
	for mem.count() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := mem.count(); n != 0 {
		t.Fatalf("on the primary again: %d objects left", n)
	}
}
