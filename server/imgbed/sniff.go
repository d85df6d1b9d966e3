package imgbed

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"sync"

	"golang.org/x/image/webp"
)

// format is an image type the host accepts.
type format byte

const (
	formatNone format = iota
	formatJPEG
	formatPNG
	formatGIF
	formatWebP
	formatAVIF
	formatHEIC
)

func (f format) mime() string {
	return [...]string{"", "image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/heic"}[f]
}

func (f format) ext() string {
	return [...]string{"", "jpg", "png", "gif", "webp", "avif", "heic"}[f]
}

// sniffLen is how many leading bytes sniff needs: a HEIF's brands may
// follow the first 16.
const sniffLen = 64

// sniff names the format of an upload from its first bytes; formatNone
// means it is not one the host accepts (SVG included: it is a script
// container, not a picture).
func sniff(b []byte) format {
	switch {
	case len(b) >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff:
		return formatJPEG
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return formatGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return formatWebP
	}
	return sniffHEIF(b)
}

// errInvalid marks an upload that has an accepted type but is damaged,
// truncated or too large in pixels: the 422 cases.
type errInvalid struct{ reason string }

func (e *errInvalid) Error() string { return e.reason }

func invalid(format string, args ...any) error { return &errInvalid{fmt.Sprintf(format, args...)} }

// decodeConfig reads the dimensions from the header of an image of type f.
func decodeConfig(f format, r io.Reader) (image.Config, error) {
	var (
		c   image.Config
		err error
	)
	switch f {
	case formatJPEG:
		c, err = jpeg.DecodeConfig(r)
	case formatPNG:
		c, err = png.DecodeConfig(r)
	case formatGIF:
		c, err = gif.DecodeConfig(r)
	case formatWebP:
		c, err = webp.DecodeConfig(r)
	case formatAVIF, formatHEIC:
		c, err = heifConfig(r)
	default:
		err = errors.New("unsupported type")
	}
	if err != nil {
		return c, invalid("undecodable %s header: %v", f.ext(), err)
	}
	if c.Width <= 0 || c.Height <= 0 {
		return c, invalid("image has no pixels")
	}
	return c, nil
}

// structReaders recycles checkStructure's buffers: allocating and zeroing
// one per upload was a tenth of a 100 KB upload's CPU.
var structReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// checkStructure walks the container structure of an image of type f up
// to its end marker without decoding pixels, so a truncated or cut-off
// upload is refused at once instead of being stored and failing later.
// Bytes after the end marker are allowed (phones append data to JPEGs).
func checkStructure(f format, r io.Reader) error {
	br := structReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		structReaders.Put(br)
	}()
	var err error
	switch f {
	case formatJPEG:
		err = walkJPEG(br)
	case formatPNG:
		err = walkPNG(br)
	case formatGIF:
		err = walkGIF(br)
	case formatWebP:
		err = walkWebP(br)
	case formatAVIF, formatHEIC:
		err = walkHEIF(br)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("truncated %s", f.ext())
	}
	var inv *errInvalid
	if err != nil && !errors.As(err, &inv) {
		return err // the spool failed, not the image
	}
	return err
}

// walkJPEG follows the marker segments and, after each start of scan, the
// entropy-coded data, until the end-of-image marker.
func walkJPEG(r *bufio.Reader) error {
	if _, err := r.Discard(2); err != nil { // SOI
		return err
	}
	for afterScan := false; ; {
		// A scan ends at the 0xff of the next marker, already consumed.
		if !afterScan {
			c, err := r.ReadByte()
			if err != nil {
				return err
			}
			if c != 0xff {
				return invalid("jpeg: expected a marker")
			}
		}
		afterScan = false
		m, err := r.ReadByte()
		for err == nil && m == 0xff { // fill bytes
			m, err = r.ReadByte()
		}
		if err != nil {
			return err
		}
		switch {
		case m == 0xd9: // EOI
			return nil
		case m == 0x01 || m >= 0xd0 && m <= 0xd7: // no length
			continue
		}
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if n < 2 {
			return invalid("jpeg: bad segment length")
		}
		if _, err := r.Discard(n - 2); err != nil {
			return err
		}
		if m != 0xda { // not SOS
			continue
		}
		// Entropy-coded data: 0xff is followed by 0x00 (a stuffed byte)
		// or a restart marker inside the scan; anything else ends it.
		for {
			if err := skipPast(r, 0xff); err != nil {
				return err
			}
			next, err := r.Peek(1)
			if err != nil {
				return err
			}
			if next[0] == 0 || next[0] >= 0xd0 && next[0] <= 0xd7 {
				r.Discard(1)
				continue
			}
			if next[0] != 0xff { // a marker; 0xff would be a fill byte
				afterScan = true
				break
			}
		}
	}
}

// skipPast discards everything up to and including the next byte c,
// searching whole buffers at a time: scans are most of a JPEG.
func skipPast(r *bufio.Reader, c byte) error {
	for {
		if r.Buffered() == 0 {
			if _, err := r.Peek(1); err != nil {
				return err
			}
		}
		buf, _ := r.Peek(r.Buffered())
		if i := bytes.IndexByte(buf, c); i >= 0 {
			_, err := r.Discard(i + 1)
			return err
		}
		if _, err := r.Discard(len(buf)); err != nil {
			return err
		}
	}
}

// walkPNG checks the signature, that IHDR comes first, every chunk's CRC,
// and that IEND is reached.
func walkPNG(r *bufio.Reader) error {
	if _, err := r.Discard(8); err != nil {
		return err
	}
	var hdr [8]byte
	seenIDAT := false
	for first := true; ; first = false {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n > 1<<31-1 {
			return invalid("png: chunk too long")
		}
		typ := string(hdr[4:])
		if first != (typ == "IHDR") {
			return invalid("png: IHDR must come first")
		}
		crc := crc32.NewIEEE()
		crc.Write(hdr[4:])
		if _, err := io.CopyN(crc, r, int64(n)); err != nil {
			return err
		}
		var want [4]byte
		if _, err := io.ReadFull(r, want[:]); err != nil {
			return err
		}
		if crc.Sum32() != binary.BigEndian.Uint32(want[:]) {
			return invalid("png: %s chunk checksum mismatch", typ)
		}
		switch typ {
		case "IDAT":
			seenIDAT = true
		case "IEND":
			if !seenIDAT {
				return invalid("png: no image data")
			}
			return nil
		}
	}
}

// walkGIF follows the blocks up to the trailer.
func walkGIF(r *bufio.Reader) error {
	var lsd [13]byte // header + logical screen descriptor
	if _, err := io.ReadFull(r, lsd[:]); err != nil {
		return err
	}
	if lsd[10]&0x80 != 0 {
		if _, err := r.Discard(3 << (lsd[10]&7 + 1)); err != nil {
			return err
		}
	}
	frames := 0
	for {
		c, err := r.ReadByte()
		if err != nil {
			return err
		}
		switch c {
		case 0x3b: // trailer
			if frames == 0 {
				return invalid("gif: no image")
			}
			return nil
		case 0x21: // extension: label, then sub-blocks
			if _, err := r.ReadByte(); err != nil {
				return err
			}
		case 0x2c: // image descriptor
			var d [9]byte
			if _, err := io.ReadFull(r, d[:]); err != nil {
				return err
			}
			if d[8]&0x80 != 0 {
				if _, err := r.Discard(3 << (d[8]&7 + 1)); err != nil {
					return err
				}
			}
			if _, err := r.ReadByte(); err != nil { // LZW minimum code size
				return err
			}
			frames++
		default:
			return invalid("gif: unknown block %#x", c)
		}
		if err := skipSubBlocks(r); err != nil {
			return err
		}
	}
}

func skipSubBlocks(r *bufio.Reader) error {
	for {
		n, err := r.ReadByte()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := r.Discard(int(n)); err != nil {
			return err
		}
	}
}

// walkWebP checks that the RIFF container holds all the bytes it declares
// and that its chunks tile it.
func walkWebP(r *bufio.Reader) error {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	left := int64(binary.LittleEndian.Uint32(hdr[4:8])) - 4
	if left < 8 {
		return invalid("webp: empty container")
	}
	for left > 0 {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return err
		}
		n := int64(binary.LittleEndian.Uint32(ch[4:])) + int64(binary.LittleEndian.Uint32(ch[4:])&1)
		if _, err := r.Discard(int(min(n, left))); err != nil {
			return err
		}
		if left -= 8 + n; left < 0 {
			return invalid("webp: chunk overruns the container")
		}
	}
	return nil
}
