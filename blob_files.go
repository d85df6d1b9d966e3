package lsmgo

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// blobTargetFileSize is the size past which the active blob file is
// retired and the next separated value starts a new one. A single larger
// value makes a file of its own.
const blobTargetFileSize = 256 << 20

// blobFiles is the DB's set of blob files (doc/blob.md): the active file
// that separated values are appended to, and the open readers that
// pointers are resolved through.
//
// Locking: appendMu orders appends (Apply holds it while it writes a
// batch's separated values, outside the commit queue, so a large value
// stalls only other large writes). syncMu is held while the active file is
// fsynced or retired, so the WAL's syncs (which call sync first) never
// touch a closed file. Rotation holds both.
type blobFiles struct {
	fs      vfs.FS
	dir     string
	m       *dbMetrics
	newFile func() base.FileNum

	appendMu sync.Mutex
	active   *activeBlob // guarded by appendMu and syncMu together
	closed   bool        // guarded by appendMu

	syncMu sync.Mutex
	// written and synced count the bytes handed to and made durable in
	// blob files since Open, across files: the active one holds every
	// unsynced byte, since a file is synced when it is retired.
	written atomic.Int64
	synced  int64 // guarded by syncMu
	syncErr error // guarded by syncMu

	readers struct {
		mu    sync.Mutex
		files map[base.FileNum]*blobReader
	}
}

// activeBlob is the blob file being appended to.
type activeBlob struct {
	num  base.FileNum
	file vfs.File
	w    *blob.Writer
}

// blobReader is an open blob file and a reader over the bytes it held when
// last examined; reads past that re-examine its size, since the active
// file grows.
type blobReader struct {
	file vfs.File
	r    atomic.Pointer[blob.Reader]
}

func (b *blobFiles) init(fs vfs.FS, dir string, m *dbMetrics, newFile func() base.FileNum) {
	b.fs, b.dir, b.m, b.newFile = fs, dir, m, newFile
	b.readers.files = make(map[base.FileNum]*blobReader)
}

func (b *blobFiles) path(num base.FileNum) string {
	return b.fs.PathJoin(b.dir, base.MakeFilename(base.FileTypeBlob, num))
}

// separate writes a batch's separated values to the active blob file and
// returns the batch's encoding with a pointer in place of each. The values
// reach the OS (write(2)) before it returns, so a WAL record holding the
// pointers can never be in the OS without them.
func (b *blobFiles) separate(batch *Batch) ([]byte, error) {
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	repr, err := batch.withPointers(b.add)
	if err != nil {
		return nil, err
	}
	if err := b.active.w.Flush(); err != nil {
		return nil, err
	}
	return repr, nil
}

// add appends one value; appendMu is held.
func (b *blobFiles) add(key, value []byte) (blob.Pointer, error) {
	if b.active == nil || b.active.w.Size() >= blobTargetFileSize {
		if err := b.rotate(); err != nil {
			return blob.Pointer{}, err
		}
	}
	before := b.active.w.Size()
	p, err := b.active.w.Add(key, value)
	if err != nil {
		return blob.Pointer{}, err
	}
	n := b.active.w.Size() - before
	b.written.Add(n)
	b.m.blobBytesWritten.Add(n)
	b.m.blobValuesWritten.Add(1)
	return p, nil
}

// rotate retires the active file, if any (synced, then closed), and
// creates the next one, whose directory entry is made durable before any
// pointer to it is written, as for a new WAL. appendMu is held.
func (b *blobFiles) rotate() error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if old := b.active; old != nil {
		if err := b.syncLocked(); err != nil {
			return err
		}
		b.active = nil
		if err := old.w.Close(); err != nil {
			return b.fail(fmt.Errorf("lsmgo: close blob file: %w", err))
		}
	}
	num := b.newFile()
	f, err := b.fs.Create(b.path(num))
	if err != nil {
		return fmt.Errorf("lsmgo: create blob file: %w", err)
	}
	if err := syncDir(b.fs, b.dir); err != nil {
		f.Close()
		return err
	}
	name := b.path(num)
	b.active = &activeBlob{num: num, file: f, w: blob.NewWriter(f, num, name)}
	b.m.blobFilesCreated.Add(1)
	return nil
}

// sync makes every blob byte written so far durable. The WAL calls it
// before each fsync of its own (doc/blob.md, "Sync order").
func (b *blobFiles) sync() error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	return b.syncLocked()
}

// syncLocked is sync with syncMu held. A failed fsync is sticky, as the
// WAL's is: the kernel may have dropped the pages it could not write.
func (b *blobFiles) syncLocked() error {
	if b.syncErr != nil {
		return b.syncErr
	}
	// Bytes counted in written are in the active file (or an older one,
	// synced when it was retired), which cannot change while syncMu is
	// held.
	target := b.written.Load()
	if b.active == nil || b.synced >= target {
		return nil
	}
	if err := b.active.file.Sync(); err != nil {
		return b.fail(fmt.Errorf("lsmgo: blob file sync %s: %w", b.path(b.active.num), err))
	}
	b.synced = target
	b.m.blobSyncs.Add(1)
	return nil
}

// fail makes err sticky; syncMu is held.
func (b *blobFiles) fail(err error) error {
	if b.syncErr == nil {
		b.syncErr = err
	}
	return b.syncErr
}

// read returns the value ptr (an encoded blob.Pointer) points to, read
// into dst when it has room, verified against the pointer's checksum.
func (b *blobFiles) read(ptr []byte, dst []byte) ([]byte, error) {
	p, err := blob.DecodePointer(ptr)
	if err != nil {
		return nil, base.Corruptf("", -1, "blob pointer: %v", err)
	}
	return b.readPointer(p, dst)
}

func (b *blobFiles) readPointer(p blob.Pointer, dst []byte) ([]byte, error) {
	br, err := b.reader(p.FileNum)
	if err != nil {
		return nil, err
	}
	r := br.r.Load()
	if p.Offset+p.Length > uint64(r.Size()) {
		// The active file has grown since the reader was made.
		if r, err = br.refresh(b.path(p.FileNum), p.FileNum); err != nil {
			return nil, err
		}
	}
	v, err := r.ReadValue(p, dst)
	if err == nil {
		b.m.blobReads.Add(1)
	}
	return v, err
}

// reader returns the open reader of blob file num, opening it if needed.
// A file that does not exist is corruption: a pointer refers to it.
func (b *blobFiles) reader(num base.FileNum) (*blobReader, error) {
	b.readers.mu.Lock()
	defer b.readers.mu.Unlock()
	if br := b.readers.files[num]; br != nil {
		return br, nil
	}
	name := b.path(num)
	f, err := b.fs.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.Corruptf(name, -1, "blob file missing: %v", err)
		}
		return nil, fmt.Errorf("lsmgo: open blob file: %w", err)
	}
	br := &blobReader{file: f}
	if _, err := br.refresh(name, num); err != nil {
		f.Close()
		return nil, err
	}
	b.readers.files[num] = br
	return br, nil
}

// refresh re-reads the file's size and installs a reader over it.
func (br *blobReader) refresh(name string, num base.FileNum) (*blob.Reader, error) {
	st, err := br.file.Stat()
	if err != nil {
		return nil, fmt.Errorf("lsmgo: stat blob file %s: %w", name, err)
	}
	r, err := blob.NewReader(br.file, st.Size(), blob.ReaderOptions{FileNum: num, FileName: name})
	if err != nil {
		return nil, err
	}
	br.r.Store(r)
	return r, nil
}

// close closes every file; appends after it fail with ErrClosed. It does
// not sync: the WAL's last sync synced every blob byte a record in it
// refers to, and the others are garbage.
func (b *blobFiles) close() error {
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	b.closed = true
	var err error
	b.syncMu.Lock()
	if b.active != nil {
		err = b.active.w.Close()
		b.active = nil
	}
	b.syncMu.Unlock()
	b.readers.mu.Lock()
	for num, br := range b.readers.files {
		err = errors.Join(err, br.file.Close())
		delete(b.readers.files, num)
	}
	b.readers.mu.Unlock()
	return err
}

// syncFiles makes the blob files nums durable: recovery replays pointers
// into them from WALs that its edit then retires.
func (b *blobFiles) syncFiles(nums map[base.FileNum]bool) error {
	for num := range nums {
		br, err := b.reader(num)
		if err != nil {
			return err
		}
		if err := br.file.Sync(); err != nil {
			return fmt.Errorf("lsmgo: blob file sync %s: %w", b.path(num), err)
		}
	}
	return nil
}

// entryPointer decodes the pointer an entry of a blob kind holds.
func entryPointer(kind base.Kind, value []byte) (blob.Pointer, error) {
	if kind.HasExpiry() {
		if len(value) < base.ExpiryLen {
			return blob.Pointer{}, fmt.Errorf("value of %d bytes is shorter than its expiry", len(value))
		}
		value = value[base.ExpiryLen:]
	}
	return blob.DecodePointer(value)
}
