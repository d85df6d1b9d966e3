package lsmgo

import (
	"errors"
	"os"
	"runtime/debug"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// walMap is the io.Writer a WAL file's record.Writer appends to when the
// file offers a shared mapping (vfs.WriteMapper): it copies the records
// into a mapped window of the file, so a commit makes no system call. The
// file is allocated a chunk at a time ahead of the records (reserve, which
// the commit leader calls before it writes a group, so a full disk fails
// the group with ENOSPC before any byte of it is stored), and the window is
// the chunk the next byte falls in. What is allocated and not yet written
// reads as zeros, the log's end (doc/format.md).
type walMap struct {
	f     vfs.WriteMapper
	chunk int64 // a multiple of the page size
	// unit is the size of the zero writes that allocate (see
	// vfs.WriteMapper.Allocate).
	unit int
	// allocated is how much of the file is allocated: a multiple of chunk.
	allocated int64
	win       []byte // the mapped window; nil before the first write
	winOff    int64  // the file offset of win[0]
	off       int64  // the file offset of the next byte written
}

// newWALMapShape returns the chunk and unit of the WAL mappings of a DB
// with the given memtable size and sync mode. A chunk, the allocation and
// window size, is an eighth of the memtable (a WAL is about as large as
// its memtable), within [64 KiB, 1 MiB], a whole number of pages. Each
// chunk costs an allocation (writes of zeros on Linux), an mmap and an
// munmap: once per 5,000 writes of 200 bytes. A sync may write back what
// was allocated and not yet overwritten, so a chunk is also the most a
// sync writes besides records. The unit is 64 KiB, fewest faults, unless
// the DB syncs on an interval, where each sync carries a few records and
// would write back a 64 KiB folio for them: then it is a page.
func newWALMapShape(memTableSize int, sync SyncMode) walMap {
	page := os.Getpagesize()
	c := min(max(int64(memTableSize)/8, 64<<10), 1<<20)
	shape := walMap{chunk: (c + int64(page) - 1) / int64(page) * int64(page), unit: 64 << 10}
	if sync.kind == syncInterval {
		shape.unit = page
	}
	return shape
}

// reserve allocates the file through at least end.
func (m *walMap) reserve(end int64) error {
	if end <= m.allocated {
		return nil
	}
	target := (end + m.chunk - 1) / m.chunk * m.chunk
	if err := m.f.Allocate(m.allocated, target-m.allocated, m.unit); err != nil {
		return err
	}
	m.allocated = target
	return nil
}

// errNotAllocated means a write went past what reserve allocated: a bug,
// reported instead of the fault a store there would take.
var errNotAllocated = errors.New("write past the allocated end of the WAL")

// Write copies p into the file at the next offset, moving the window as
// it fills; every byte of it must have been reserved.
func (m *walMap) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if m.off >= m.winOff+int64(len(m.win)) {
			if err := m.advance(); err != nil {
				return n, err
			}
		}
		piece := p[n:min(len(p), n+len(m.win)-int(m.off-m.winOff))]
		if !storeMapped(m.win[m.off-m.winOff:], piece) {
			// The filesystem failed to back a page it allocated: a
			// copy-on-write filesystem out of space, an I/O error, or
			// the file cut behind the DB's back. Written again through
			// the file, the bytes get the error write(2) gives (ENOSPC
			// heals, doc/durability.md) instead of a fault.
			if _, err := m.f.WriteAt(piece, m.off); err != nil {
				return n, err
			}
		}
		n += len(piece)
		m.off += int64(len(piece))
	}
	return n, nil
}

// advance maps the chunk that holds the next offset in place of the
// current window.
func (m *walMap) advance() error {
	if err := m.unmap(); err != nil {
		return err
	}
	off := m.off / m.chunk * m.chunk
	if off+m.chunk > m.allocated {
		return errNotAllocated
	}
	win, err := m.f.Map(off, int(m.chunk))
	if err != nil {
		return err
	}
	m.win, m.winOff = win, off
	return nil
}

// unmap releases the window, if any; the WAL file's close calls it.
func (m *walMap) unmap() error {
	if m.win == nil {
		return nil
	}
	err := m.f.Unmap(m.win)
	m.win, m.winOff = nil, 0
	return err
}

// storeMapped copies src into the mapped dst, which is at least as long,
// and reports false if the store faulted (SIGBUS) instead of letting the
// fault kill the process. Any other panic is not a fault and goes on.
func storeMapped(dst, src []byte) (ok bool) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			ok = false
		}
	}()
	copy(dst, src)
	return true
}
