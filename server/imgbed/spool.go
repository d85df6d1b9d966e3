package imgbed

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// headLen is the part of an upload kept in memory: enough to sniff it and
// to strip the EXIF block of a JPEG in place (exifHeadLen), and enough to
// hold every image the store commits in one batch (batchBytes), which then
// goes from this buffer to the engine's blob file without a temporary file
// or a copy (whole). Upload slots bound how many are held at once.
const headLen = batchBytes

var headPool = sync.Pool{New: func() any { b := make([]byte, headLen); return &b }}

// copyLen is the spool's write size past the head: a 4 MB upload spooled
// 32 KiB at a time cost 120 write(2)s (with a read each), a system call
// being a third of an upload's CPU.
const copyLen = 256 << 10

var copyPool = sync.Pool{New: func() any { b := make([]byte, copyLen); return &b }}

var errTooLarge = errors.New("file too large")

// spoolPrefix starts the name of every spool file, so that leftovers can
// be told from anything else in the spool directory.
const spoolPrefix = "imgbed-upload-"

// SpoolFiles lists the spool files in dir: uploads in progress while a
// host runs there, else what a crash left (New removes those). A missing
// dir holds none.
func SpoolFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), spoolPrefix) {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names, nil
}

// prepareSpoolDir creates dir and removes the spool files a crash left
// there: a spool file lives only as long as its upload request, and New
// runs before any.
func prepareSpoolDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	names, err := SpoolFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// spool holds one upload while it is checked: the head in memory, the
// rest in a temporary file, so memory stays bounded whatever the size.
// The hashes cover the bytes as they will be stored, after the head was
// rewritten (EXIF GPS removed).
type spool struct {
	dir    string
	headP  *[]byte
	head   []byte // the filled part of *headP
	f      *os.File
	base   int64 // offset in f of the byte after the head: 0, or the head's length in an adopted file
	keep   bool  // f is adopted (adoptSpool): close leaves it to its owner
	size   int64
	sha    hash.Hash
	md5    hash.Hash // nil unless wanted (wantMD5)
	format format
	orient int // EXIF orientation, 1 when none
}

func newSpool(dir string) *spool {
	p := headPool.Get().(*[]byte)
	return &spool{dir: dir, headP: p, sha: sha256.New(), orient: 1}
}

// wantMD5 makes fill compute the MD5 of the bytes too.
func (s *spool) wantMD5() { s.md5 = md5.New() }

// md5Hex returns the MD5 of the bytes in hex, or "" when not wanted.
func (s *spool) md5Hex() string {
	if s.md5 == nil {
		return ""
	}
	return hex.EncodeToString(s.md5.Sum(nil))
}

// hashes is where the spooled bytes are hashed: SHA-256, and MD5 if
// wanted.
func (s *spool) hashes() io.Writer {
	if s.md5 == nil {
		return s.sha
	}
	return io.MultiWriter(s.sha, s.md5)
}

// close releases the buffer and removes the temporary file.
func (s *spool) close() {
	if s.f != nil && !s.keep {
		s.f.Close()
		os.Remove(s.f.Name())
	}
	s.f = nil
	if s.headP != nil {
		headPool.Put(s.headP)
		s.headP, s.head = nil, nil
	}
}

// fill reads r to its end. Once the head is in, it sniffs the type (415
// before reading on), and for a JPEG finds the EXIF orientation and, with
// stripGPS, removes the GPS data. It fails with errTooLarge as soon as
// more than max bytes arrived.
func (s *spool) fill(r io.Reader, max int64, stripGPS bool) error {
	buf := *s.headP
	n, err := io.ReadFull(r, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		err = nil
	case err != nil:
		return err
	}
	if err := s.takeHead(buf[:n], int64(n), max, stripGPS); err != nil || n < len(buf) {
		return err
	}
	if s.f, err = os.CreateTemp(s.dir, spoolPrefix+"*"); err != nil {
		return err
	}
	cp := copyPool.Get().(*[]byte)
	defer copyPool.Put(cp)
	hashes := s.hashes()
	for {
		// Whole buffers: one write(2) to the spool file per copyLen
		// bytes, however small the pieces the socket gives.
		n, err := io.ReadFull(r, *cp)
		if n > 0 {
			if s.size += int64(n); s.size > max {
				return errTooLarge
			}
			chunk := (*cp)[:n]
			hashes.Write(chunk)
			if _, werr := s.f.Write(chunk); werr != nil {
				return werr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// takeHead examines the head of an upload of size bytes: it refuses one
// over max, sniffs the type (415), and for a JPEG finds the EXIF
// orientation and, with stripGPS, removes the GPS data; then it hashes
// the head.
func (s *spool) takeHead(head []byte, size, max int64, stripGPS bool) error {
	s.head, s.size = head, size
	if s.size > max {
		return errTooLarge
	}
	if s.format = sniff(s.head[:min(len(head), sniffLen)]); s.format == formatNone {
		return errUnsupported
	}
	if s.format == formatJPEG {
		s.orient, _ = exifInfo(s.head[:min(len(head), exifHeadLen)], stripGPS)
	}
	s.hashes().Write(s.head)
	return nil
}

// whole returns the spooled bytes when they are all in memory, else nil.
func (s *spool) whole() []byte {
	if s.size == int64(len(s.head)) {
		return s.head
	}
	return nil
}

// reader returns a fresh reader over the spooled bytes.
func (s *spool) reader() io.Reader {
	if s.f == nil {
		return bytes.NewReader(s.head)
	}
	return io.MultiReader(bytes.NewReader(s.head), io.NewSectionReader(s.f, s.base, s.size-int64(len(s.head))))
}

func (s *spool) sum() (out sum) {
	s.sha.Sum(out[:0])
	return out
}

// section returns the spooled bytes as a reader that can also read at any
// offset and seek, so a blob store can send them in parts, in parallel,
// and send a part again after a failure, all without buffering a copy.
func (s *spool) section() *io.SectionReader {
	return io.NewSectionReader(spoolReaderAt{s}, 0, s.size)
}

type spoolReaderAt struct{ s *spool }

func (r spoolReaderAt) ReadAt(p []byte, off int64) (int, error) {
	head := int64(len(r.s.head))
	n := 0
	if off < head {
		n = copy(p, r.s.head[off:])
		if n == len(p) {
			return n, nil
		}
	}
	if r.s.f == nil {
		return n, io.EOF
	}
	m, err := r.s.f.ReadAt(p[n:], r.s.base+off+int64(n)-head)
	return n + m, err
}
