package imgbed

import (
	"bytes"
	"encoding/binary"
	"io"
)

// GPS in HEIC and AVIF files: phones keep EXIF as an item of type
// "Exif" (a 4-byte offset to the TIFF header, then usually "Exif\0\0"
// and the TIFF data) and XMP as an item of type "mime" with content type
// application/rdf+xml. The meta box says which items there are (iinf)
// and where their bytes lie (iloc: extents in the file, or in the meta
// box's idat). Both are stripped in place as in every other container:
// the GPS IFD blanked, XMP properties overwritten with spaces, so no
// size or offset changes.

// heifItem is one metadata item's kind and extents.
type heifItem struct {
	xmp     bool // else EXIF
	extents [][2]int64
}

// heifMetaItems finds the EXIF and XMP items of the HEIF file in at and
// their extents as file offsets. Anything it cannot follow is skipped:
// the structure was checked at upload, and an item it cannot locate is
// one no reader will find either.
func heifMetaItems(at io.ReaderAt, size int64) []heifItem {
	var off int64
	for off+8 <= size {
		var h [16]byte
		if _, err := at.ReadAt(h[:8], off); err != nil {
			return nil
		}
		n, hdr := int64(binary.BigEndian.Uint32(h[:4])), int64(8)
		switch n {
		case 0:
			n = size - off
		case 1:
			if _, err := at.ReadAt(h[8:16], off+8); err != nil {
				return nil
			}
			n, hdr = int64(binary.BigEndian.Uint64(h[8:16])), 16
		}
		if n < hdr || n > size-off {
			return nil
		}
		if string(h[4:8]) == "meta" {
			if n-hdr > maxMetaBox || n-hdr < 4 {
				return nil
			}
			meta := make([]byte, n-hdr)
			if _, err := at.ReadAt(meta, off+hdr); err != nil {
				return nil
			}
			return parseHEIFMeta(meta[4:], off+hdr+4).metadataItems()
		}
		off += n
	}
	return nil
}

// stripHEIFGPS strips the GPS data of every EXIF and XMP item of the
// spooled HEIF file.
func (s *spool) stripHEIFGPS() (changed bool, err error) {
	at := s.section()
	for _, it := range heifMetaItems(at, s.size) {
		var total int64
		for _, e := range it.extents {
			total += e[1]
			if e[0] < 0 || e[1] < 0 || e[0]+e[1] > s.size || total > maxMetaChunk {
				total = -1
				break
			}
		}
		if total <= 0 {
			continue
		}
		buf := make([]byte, 0, total)
		for _, e := range it.extents {
			part := make([]byte, e[1])
			if _, err := at.ReadAt(part, e[0]); err != nil {
				return changed, err
			}
			buf = append(buf, part...)
		}
		if !stripHEIFItem(buf, it.xmp) {
			continue
		}
		changed = true
		for _, e := range it.extents {
			if err := s.writeAt(buf[:e[1]], e[0]); err != nil {
				return changed, err
			}
			buf = buf[e[1]:]
		}
	}
	return changed, nil
}

// stripHEIFItem strips one item's bytes in place.
func stripHEIFItem(b []byte, xmp bool) bool {
	if xmp {
		return stripXMPGPS(b)
	}
	if len(b) < 4 {
		return false
	}
	skip := int64(binary.BigEndian.Uint32(b))
	if skip > int64(len(b)-4) {
		return false
	}
	_, stripped := tiffInfo(bytes.TrimPrefix(b[4+skip:], []byte("Exif\x00\x00")), true)
	return stripped
}

// metadataItems returns the EXIF and XMP items with their extents.
func (m *heifMeta) metadataItems() []heifItem {
	var items []heifItem
	for id, typ := range m.types {
		ext, ok := m.extents[id]
		if ok && (typ == "Exif" || m.xmp[id]) {
			items = append(items, heifItem{xmp: m.xmp[id], extents: ext})
		}
	}
	return items
}
