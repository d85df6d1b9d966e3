package lsmgo

import (
	"sync"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// hold returns the reader of the blob file p points into, holding the
// file for a ValueReader until release: removeObsolete leaves a held file
// in place and removes it at its last release if it became obsolete
// meanwhile. The caller's read state pins the file while hold runs (it
// has the memtable or the table holding p), so the file exists.
func (b *blobFiles) hold(p blob.Pointer) (*blobReader, *blob.Reader, error) {
	b.life.mu.Lock()
	b.life.held[p.FileNum]++
	b.life.mu.Unlock()
	br, r, err := b.readerFor(p)
	if err != nil {
		b.release(p.FileNum)
		return nil, nil, err
	}
	return br, r, nil
}

// release drops a hold taken by hold.
func (b *blobFiles) release(num base.FileNum) {
	b.life.mu.Lock()
	obsolete := false
	if b.life.held[num]--; b.life.held[num] <= 0 {
		delete(b.life.held, num)
		obsolete = b.life.deferred[num]
	}
	b.life.mu.Unlock()
	if obsolete {
		b.removeObsolete()
	}
}

// maxVerifiedValues bounds the values blobFiles remembers as checked:
// about 3 MiB of memory, and the hot set of a server that serves values
// in place (the image host's chunks are up to 256 KiB, so 16 GiB of them).
const maxVerifiedValues = 1 << 16

// verifiedValues remembers the separated values a ValueReader checked
// against their checksums, so each is read whole once, not once per
// reader. Past maxVerifiedValues it forgets an arbitrary one (Go's map
// iteration order) for each it learns; a value forgotten is checked
// again by its next reader. A pointer names its bytes for good: blob
// files are never rewritten, and file numbers never reused.
type verifiedValues struct {
	mu  sync.Mutex
	set map[blob.Pointer]struct{}
}

// verifyBufPool holds the buffers values are checked through.
var verifyBufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// verify checks the value p points to, read through r, unless it was
// checked before.
func (b *blobFiles) verify(r *blob.Reader, p blob.Pointer) error {
	v := &b.verified
	v.mu.Lock()
	_, done := v.set[p]
	v.mu.Unlock()
	if done {
		return nil
	}
	buf := verifyBufPool.Get().(*[]byte)
	err := r.VerifyValue(p, *buf)
	verifyBufPool.Put(buf)
	if err != nil {
		return err
	}
	v.mu.Lock()
	if len(v.set) >= maxVerifiedValues {
		for old := range v.set {
			delete(v.set, old)
			break
		}
	}
	v.set[p] = struct{}{}
	v.mu.Unlock()
	b.m.blobValuesVerified.Add(1)
	return nil
}

// maxSpareFiles bounds the idle descriptors kept per blob file.
const maxSpareFiles = 16

// spareFiles are descriptors of one blob file for ValueReader.SendTo,
// which needs one of its own: sendfile(2) sends from a descriptor's file
// position, which senders sharing one descriptor would move under one
// another. Keeping them saves an open and a close per send.
type spareFiles struct {
	mu     sync.Mutex
	files  []vfs.File
	closed bool
}

// take returns an idle descriptor of the file, or opens one.
func (s *spareFiles) take(fs vfs.FS, name string) (vfs.File, error) {
	s.mu.Lock()
	if n := len(s.files); n > 0 {
		f := s.files[n-1]
		s.files = s.files[:n-1]
		s.mu.Unlock()
		return f, nil
	}
	s.mu.Unlock()
	return fs.Open(name)
}

// put returns a descriptor taken, closing it if enough are idle or the
// file is being removed.
func (s *spareFiles) put(f vfs.File) {
	s.mu.Lock()
	if !s.closed && len(s.files) < maxSpareFiles {
		s.files = append(s.files, f)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	f.Close()
}

// close closes the idle descriptors; the ones in use close when put.
func (s *spareFiles) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
}
