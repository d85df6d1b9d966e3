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
			return parseHEIFMeta(meta[4:], off+hdr+4)
		}
		off += n
	}
	return nil
}

// parseHEIFMeta reads the meta box's children b, which start at file
// offset base.
func parseHEIFMeta(b []byte, base int64) []heifItem {
	kinds := map[uint32]bool{} // item ID -> xmp
	var iloc []byte
	idat := int64(-1)
	for rest, pos := b, base; len(rest) >= 8; {
		n := int(binary.BigEndian.Uint32(rest[:4]))
		if n < 8 || n > len(rest) {
			break
		}
		switch string(rest[4:8]) {
		case "iinf":
			heifItemTypes(rest[8:n], kinds)
		case "iloc":
			iloc = rest[8:n]
		case "idat":
			idat = pos + 8
		}
		rest, pos = rest[n:], pos+int64(n)
	}
	if len(kinds) == 0 || iloc == nil {
		return nil
	}
	return heifLocations(iloc, kinds, idat)
}

// heifItemTypes reads iinf (a full box) and records the EXIF and XMP
// items' IDs.
func heifItemTypes(b []byte, kinds map[uint32]bool) {
	if len(b) < 8 {
		return
	}
	if b[0] == 0 { // version 0: a 16-bit entry count, else 32
		b = b[6:]
	} else {
		b = b[8:]
	}
	for len(b) >= 8 {
		n := int(binary.BigEndian.Uint32(b[:4]))
		if n < 8 || n > len(b) {
			return
		}
		if string(b[4:8]) == "infe" {
			heifItemType(b[8:n], kinds)
		}
		b = b[n:]
	}
}

// heifItemType reads one infe box (version 2 or 3; earlier versions
// have no item type and hold no EXIF).
func heifItemType(e []byte, kinds map[uint32]bool) {
	if len(e) < 4 {
		return
	}
	v := e[0]
	e = e[4:]
	var id uint32
	switch {
	case v == 2 && len(e) >= 8:
		id, e = uint32(binary.BigEndian.Uint16(e)), e[2:]
	case v == 3 && len(e) >= 10:
		id, e = binary.BigEndian.Uint32(e), e[4:]
	default:
		return
	}
	typ := string(e[2:6]) // after item_protection_index
	e = e[6:]
	switch typ {
	case "Exif":
		kinds[id] = false
	case "mime":
		// item_name, then content_type, both NUL-terminated
		if _, after, ok := bytes.Cut(e, []byte{0}); ok {
			ct, _, _ := bytes.Cut(after, []byte{0})
			if bytes.Contains(ct, []byte("rdf+xml")) {
				kinds[id] = true
			}
		}
	}
}

// heifLocations reads iloc (a full box) for the items in kinds.
func heifLocations(b []byte, kinds map[uint32]bool, idat int64) []heifItem {
	if len(b) < 6 {
		return nil
	}
	v := b[0]
	offSize, lenSize := int(b[4]>>4), int(b[4]&15)
	baseSize, idxSize := int(b[5]>>4), 0
	if v == 1 || v == 2 {
		idxSize = int(b[5] & 15)
	}
	r := &fieldReader{b: b[6:], ok: true}
	count := r.uint(map[bool]int{true: 4, false: 2}[v == 2])
	var items []heifItem
	for i := uint64(0); i < count && r.ok; i++ {
		id := uint32(r.uint(map[bool]int{true: 4, false: 2}[v == 2]))
		method := uint64(0)
		if v == 1 || v == 2 {
			method = r.uint(2) & 15
		}
		r.uint(2) // data_reference_index
		baseOff := int64(r.uint(baseSize))
		extents := int(r.uint(2))
		it := heifItem{}
		for j := 0; j < extents && r.ok; j++ {
			r.uint(idxSize)
			off, n := int64(r.uint(offSize)), int64(r.uint(lenSize))
			it.extents = append(it.extents, [2]int64{baseOff + off, n})
		}
		xmp, wanted := kinds[id]
		if !wanted || !r.ok || method > 1 || method == 1 && idat < 0 {
			continue
		}
		if method == 1 {
			for k := range it.extents {
				it.extents[k][0] += idat
			}
		}
		it.xmp = xmp
		items = append(items, it)
	}
	return items
}

// fieldReader reads big-endian fields of 0 to 8 bytes; ok turns false
// when one runs past the end (and the rest read as zero).
type fieldReader struct {
	b  []byte
	ok bool
}

func (r *fieldReader) uint(size int) uint64 {
	if len(r.b) < size || size > 8 {
		r.ok, r.b = false, nil
		return 0
	}
	var v uint64
	for _, c := range r.b[:size] {
		v = v<<8 | uint64(c)
	}
	r.b = r.b[size:]
	return v
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
