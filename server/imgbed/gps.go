package imgbed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"regexp"
)

// GPS data outside a JPEG's EXIF segment (which spool.fill strips while
// the head arrives): the EXIF chunk of PNG (eXIf) and WebP (EXIF), and
// XMP packets, where editors and phones write the location again
// (exif:GPSLatitude and the like) in JPEG APP1 segments, PNG iTXt and
// WebP "XMP " chunks. All of it is removed in place, keeping every length:
// TIFF GPS data as exifInfo does, XMP properties overwritten with spaces,
// which XML reads as the whitespace between attributes or elements. A
// PNG chunk gets its CRC again. A metadata chunk larger than
// maxMetaChunk, or a compressed iTXt, is left as it is.

// maxMetaChunk bounds the metadata chunk read into memory.
const maxMetaChunk = 1 << 20

var (
	// xmpGPSAttr is a GPS property written as an attribute: any prefix
	// (exif: by convention), a local name starting with GPS.
	xmpGPSAttr = regexp.MustCompile(`\s[\w.-]+:GPS\w*\s*=\s*(?:"[^"]*"|'[^']*')`)
	// xmpGPSElem is one written as an element, empty or up to the first
	// GPS closing tag (GPS properties do not nest).
	xmpGPSElem = regexp.MustCompile(`(?s)<[\w.-]+:GPS\w*(?:\s[^>]*)?(?:/>|>.*?</[\w.-]+:GPS\w*\s*>)`)
)

// stripXMPGPS blanks the GPS properties of an XMP packet in place.
func stripXMPGPS(x []byte) (changed bool) {
	for _, re := range []*regexp.Regexp{xmpGPSAttr, xmpGPSElem} {
		for _, m := range re.FindAllIndex(x, -1) {
			for i := m[0]; i < m[1]; i++ {
				if x[i] != '\n' {
					x[i] = ' '
				}
			}
			changed = true
		}
	}
	return changed
}

// tiffStrip strips an EXIF chunk's TIFF data; WebP writers disagree on
// whether it starts with JPEG's "Exif\0\0".
func tiffStrip(b []byte) bool {
	_, stripped := tiffInfo(bytes.TrimPrefix(b, []byte("Exif\x00\x00")), true)
	return stripped
}

var (
	xmpJPEG     = []byte("http://ns.adobe.com/xap/1.0/\x00")
	xmpJPEGExt  = []byte("http://ns.adobe.com/xmp/extension/\x00")
	xmpPNGTitle = []byte("XML:com.adobe.xmp\x00")
)

// stripGPS removes the GPS data of the spooled image that fill left, and
// rehashes the bytes when it changed any. The structure was checked.
func (s *spool) stripGPS() error {
	var changed bool
	var err error
	switch s.format {
	case formatJPEG:
		changed = stripJPEGXMP(s.head)
	case formatPNG:
		changed, err = s.stripChunks(8, false)
	case formatWebP:
		changed, err = s.stripChunks(12, true)
	}
	if err != nil || !changed {
		return err
	}
	s.sha.Reset()
	s.md5.Reset()
	_, err = io.Copy(io.MultiWriter(s.sha, s.md5), s.reader())
	return err
}

// stripJPEGXMP blanks GPS in the XMP segments within head (metadata
// segments come before the image data, so at the start of the file).
func stripJPEGXMP(head []byte) (changed bool) {
	for i := 2; i+4 <= len(head) && head[i] == 0xff; {
		m := head[i+1]
		if m == 0xda || m == 0xd9 {
			break
		}
		end := i + 2 + int(binary.BigEndian.Uint16(head[i+2:]))
		if end > len(head) || end < i+4 {
			break
		}
		if seg := head[i+4 : end]; m == 0xe1 && (bytes.HasPrefix(seg, xmpJPEG) || bytes.HasPrefix(seg, xmpJPEGExt)) {
			changed = stripXMPGPS(seg) || changed
		}
		i = end
	}
	return changed
}

// stripChunks walks the chunks of a PNG (big-endian sizes, a CRC after
// each) or a WebP (little-endian sizes, padded to even) from off, and
// strips the metadata ones.
func (s *spool) stripChunks(off int64, webp bool) (changed bool, err error) {
	at := s.section()
	var hdr [8]byte
	for off+8 <= s.size {
		if _, err := at.ReadAt(hdr[:], off); err != nil {
			return changed, err
		}
		var n int64
		var typ string
		if webp {
			typ, n = string(hdr[:4]), int64(binary.LittleEndian.Uint32(hdr[4:]))
		} else {
			n, typ = int64(binary.BigEndian.Uint32(hdr[:4])), string(hdr[4:])
		}
		data := off + 8
		next := data + n + map[bool]int64{false: 4, true: n & 1}[webp]
		if next > s.size || typ == "IEND" {
			return changed, nil
		}
		strip := map[string]func([]byte) bool{"eXIf": tiffStrip, "EXIF": tiffStrip, "XMP ": stripXMPGPS, "iTXt": stripITXt}[typ]
		if strip != nil && n <= maxMetaChunk {
			buf := make([]byte, n)
			if _, err := at.ReadAt(buf, data); err != nil {
				return changed, err
			}
			if strip(buf) {
				changed = true
				if err := s.writeAt(buf, data); err != nil {
					return changed, err
				}
				if !webp {
					crc := crc32.NewIEEE()
					crc.Write(hdr[4:])
					crc.Write(buf)
					if err := s.writeAt(binary.BigEndian.AppendUint32(nil, crc.Sum32()), data+n); err != nil {
						return changed, err
					}
				}
			}
		}
		off = next
	}
	return changed, nil
}

// stripITXt strips a PNG text chunk that holds uncompressed XMP.
func stripITXt(b []byte) bool {
	rest, ok := bytes.CutPrefix(b, xmpPNGTitle)
	if !ok || len(rest) < 2 || rest[0] != 0 { // compression flag, method
		return false
	}
	return stripXMPGPS(rest)
}

// writeAt overwrites spooled bytes at off, in the head or the file.
func (s *spool) writeAt(p []byte, off int64) error {
	head := int64(len(s.head))
	if off < head {
		n := copy(s.head[off:], p)
		p, off = p[n:], off+int64(n)
	}
	if len(p) == 0 {
		return nil
	}
	if s.f == nil {
		return errors.New("imgbed: write past the spooled bytes")
	}
	_, err := s.f.WriteAt(p, s.base+off-head)
	return err
}
