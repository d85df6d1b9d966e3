package imgbed

import (
	"bytes"
	"encoding/binary"
)

// EXIF tags this package reads.
const (
	tagOrientation = 0x0112
	tagGPSIFD      = 0x8825
)

// exifHeadLen is how much of a JPEG the EXIF code looks at: an APP1
// segment is at most 64 KiB and the standard puts it right after SOI (and
// at most an APP0), so it lies within the first 128 KiB + a few bytes.
const exifHeadLen = 160 << 10

// exifInfo finds the EXIF block in the head of a JPEG and returns its
// orientation (1 when absent or invalid). With strip, it also removes the
// GPS information in place without changing the length of anything: the
// GPS IFD and the values it points to are zeroed and its entry is taken
// out of IFD0, so no reader finds a location, and the rest of the file is
// untouched. stripped reports whether there was GPS data.
func exifInfo(head []byte, strip bool) (orientation int, stripped bool) {
	return tiffInfo(exifSegment(head), strip)
}

// tiffInfo is exifInfo on the TIFF data of an EXIF block, wherever the
// container keeps it (JPEG APP1, PNG eXIf, WebP EXIF).
func tiffInfo(tiff []byte, strip bool) (orientation int, stripped bool) {
	var bo binary.ByteOrder
	switch {
	case bytes.HasPrefix(tiff, []byte("II*\x00")):
		bo = binary.LittleEndian
	case bytes.HasPrefix(tiff, []byte("MM\x00*")):
		bo = binary.BigEndian
	default:
		return 1, false
	}
	ifd := int(bo.Uint32(tiff[4:8]))
	if ifd < 8 || ifd+2 > len(tiff) {
		return 1, false
	}
	n := int(bo.Uint16(tiff[ifd:]))
	if ifd+2+12*n+4 > len(tiff) {
		return 1, false
	}
	orientation = 1
	for i := 0; i < n; i++ {
		e := tiff[ifd+2+12*i:]
		switch bo.Uint16(e) {
		case tagOrientation:
			if o := int(bo.Uint16(e[8:])); o >= 1 && o <= 8 {
				orientation = o
			}
		case tagGPSIFD:
			if !strip {
				continue
			}
			zeroIFD(tiff, bo, int(bo.Uint32(e[8:])))
			// Shift the later entries and the next-IFD offset up by one
			// entry and clear the freed bytes.
			end := ifd + 2 + 12*n + 4
			copy(e, tiff[ifd+2+12*(i+1):end])
			clear(tiff[end-12 : end])
			n--
			bo.PutUint16(tiff[ifd:], uint16(n))
			i--
			stripped = true
		}
	}
	return orientation, stripped
}

// exifSegment returns the TIFF data of the first Exif APP1 segment that
// lies entirely within head, or nil.
func exifSegment(head []byte) []byte {
	if len(head) < 4 || head[0] != 0xff || head[1] != 0xd8 {
		return nil
	}
	for i := 2; i+4 <= len(head); {
		if head[i] != 0xff {
			return nil
		}
		m := head[i+1]
		if m == 0xda || m == 0xd9 { // image data starts: no more metadata
			return nil
		}
		end := i + 2 + int(binary.BigEndian.Uint16(head[i+2:]))
		if end > len(head) || end < i+4 {
			return nil
		}
		if seg := head[i+4 : end]; m == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return seg[6:]
		}
		i = end
	}
	return nil
}

// typeSizes are the byte sizes of the TIFF field types 1-12.
var typeSizes = [...]int{0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8}

// zeroIFD clears an IFD and the out-of-line values its entries point to,
// within bounds; damaged offsets are skipped.
func zeroIFD(tiff []byte, bo binary.ByteOrder, off int) {
	if off < 8 || off+2 > len(tiff) {
		return
	}
	n := int(bo.Uint16(tiff[off:]))
	end := min(off+2+12*n+4, len(tiff))
	for i := 0; i < n && off+2+12*i+12 <= len(tiff); i++ {
		e := tiff[off+2+12*i:]
		typ, count := int(bo.Uint16(e[2:])), int64(bo.Uint32(e[4:]))
		if typ <= 0 || typ >= len(typeSizes) {
			continue
		}
		size := count * int64(typeSizes[typ])
		if size <= 4 {
			continue
		}
		v := int64(bo.Uint32(e[8:]))
		if v >= 8 && v+size <= int64(len(tiff)) {
			clear(tiff[v : v+size])
		}
	}
	clear(tiff[off:end])
}
