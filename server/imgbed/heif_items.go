package imgbed

import (
	"bytes"
	"encoding/binary"
)

// The meta box of a HEIF file (ISO/IEC 23008-12) names its items (iinf:
// an ID and a four-letter type each), says where their bytes lie (iloc:
// extents in the file, or in the meta box's own idat), which one is the
// primary image (pitm), and which properties each has (iprp: the
// properties in ipco, each item's list of them by index in ipma). The
// GPS strip (heif_gps.go) reads the EXIF and XMP items from it, the HEIC
// decoder and its estimate the primary image's.

// heifMeta is what parseHEIFMeta found; anything it could not follow is
// left out.
type heifMeta struct {
	primary uint32
	types   map[uint32]string // item ID -> item type
	xmp     map[uint32]bool   // "mime" items of XMP
	extents map[uint32][][2]int64
	props   []heifBox // ipco's children, index i+1 in ipma
	assoc   map[uint32][]heifAssoc
}

type heifBox struct {
	typ  string
	body []byte
}

type heifAssoc struct {
	index     int // into props, from 1
	essential bool
}

// findMetaBox returns the payload of the meta box among the top-level
// boxes in b (the whole file or its head) after its version and flags,
// and the payload's offset in the file; ok is false if no meta box lies
// wholly inside b.
func findMetaBox(b []byte) (meta []byte, off int64, ok bool) {
	for pos := 0; pos+8 <= len(b); {
		n, hdr := int(binary.BigEndian.Uint32(b[pos:])), 8
		if n == 1 && pos+16 <= len(b) {
			large := binary.BigEndian.Uint64(b[pos+8:])
			n, hdr = int(min(large, 1<<40)), 16
		}
		if n < hdr {
			return nil, 0, false // 0 (to the end of the file) included
		}
		if string(b[pos+4:pos+8]) == "meta" {
			if n < hdr+4 || n > maxMetaBox || pos+n > len(b) {
				return nil, 0, false
			}
			return b[pos+hdr+4 : pos+n], int64(pos + hdr + 4), true
		}
		pos += n
	}
	return nil, 0, false
}

// parseHEIFMeta reads the meta box's children b, which start at file
// offset base.
func parseHEIFMeta(b []byte, base int64) *heifMeta {
	m := &heifMeta{types: map[uint32]string{}, xmp: map[uint32]bool{}, assoc: map[uint32][]heifAssoc{}}
	var iloc []byte
	idat := int64(-1)
	for _, c := range heifBoxes(b) {
		switch c.typ {
		case "pitm":
			r := &fieldReader{b: c.body, ok: true}
			v := r.uint(4) >> 24
			m.primary = uint32(r.uint(map[bool]int{true: 2, false: 4}[v == 0]))
		case "iinf":
			m.itemTypes(c.body)
		case "iloc":
			iloc = c.body
		case "idat":
			idat = base + int64(len(b)-len(c.body)-len(c.rest)) // payload offset
		case "iprp":
			for _, p := range heifBoxes(c.body) {
				switch p.typ {
				case "ipco":
					for _, q := range heifBoxes(p.body) {
						m.props = append(m.props, q.heifBox)
					}
				case "ipma":
					m.associations(p.body)
				}
			}
		}
	}
	if iloc != nil {
		m.extents = heifLocations(iloc, idat)
	}
	return m
}

// heifChild is one box of a sequence, with what follows it (so that
// its payload's place in the sequence can be worked out).
type heifChild struct {
	heifBox
	rest []byte
}

// heifBoxes splits b into boxes, stopping at one that overruns it.
func heifBoxes(b []byte) []heifChild {
	var out []heifChild
	for len(b) >= 8 {
		n := int(binary.BigEndian.Uint32(b[:4]))
		if n == 0 {
			n = len(b)
		}
		if n < 8 || n > len(b) {
			break
		}
		out = append(out, heifChild{heifBox{string(b[4:8]), b[8:n]}, b[n:]})
		b = b[n:]
	}
	return out
}

// itemTypes reads iinf (a full box): each infe's item ID and type.
func (m *heifMeta) itemTypes(b []byte) {
	if len(b) < 8 {
		return
	}
	if b[0] == 0 { // version 0: a 16-bit entry count, else 32
		b = b[6:]
	} else {
		b = b[8:]
	}
	for _, c := range heifBoxes(b) {
		if c.typ == "infe" {
			m.itemType(c.body)
		}
	}
}

// itemType reads one infe box (version 2 or 3; earlier versions have no
// item type and are not images, EXIF or XMP).
func (m *heifMeta) itemType(e []byte) {
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
	m.types[id] = typ
	if typ == "mime" {
		// item_name, then content_type, both NUL-terminated
		if _, after, ok := bytes.Cut(e[6:], []byte{0}); ok {
			ct, _, _ := bytes.Cut(after, []byte{0})
			m.xmp[id] = bytes.Contains(ct, []byte("rdf+xml"))
		}
	}
}

// associations reads ipma (a full box): each item's property indices.
func (m *heifMeta) associations(b []byte) {
	r := &fieldReader{b: b, ok: true}
	vf := r.uint(4)
	idSize, wide := 2, vf&1 != 0
	if vf>>24 >= 1 {
		idSize = 4
	}
	for n := r.uint(4); n > 0 && r.ok; n-- {
		id := uint32(r.uint(idSize))
		for k := r.uint(1); k > 0 && r.ok; k-- {
			if wide {
				v := r.uint(2)
				m.assoc[id] = append(m.assoc[id], heifAssoc{int(v & 0x7fff), v&0x8000 != 0})
			} else {
				v := r.uint(1)
				m.assoc[id] = append(m.assoc[id], heifAssoc{int(v & 0x7f), v&0x80 != 0})
			}
		}
	}
}

// heifLocations reads iloc (a full box): each item's extents as file
// offsets, for the items stored in the file (construction method 0) or
// in idat (1; idat is the file offset of its payload, -1 without one).
func heifLocations(b []byte, idat int64) map[uint32][][2]int64 {
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
	items := map[uint32][][2]int64{}
	for i := uint64(0); i < count && r.ok; i++ {
		id := uint32(r.uint(map[bool]int{true: 4, false: 2}[v == 2]))
		method := uint64(0)
		if v == 1 || v == 2 {
			method = r.uint(2) & 15
		}
		r.uint(2) // data_reference_index
		baseOff := int64(r.uint(baseSize))
		n := int(r.uint(2))
		var extents [][2]int64
		for j := 0; j < n && r.ok; j++ {
			r.uint(idxSize)
			off, n := int64(r.uint(offSize)), int64(r.uint(lenSize))
			extents = append(extents, [2]int64{baseOff + off, n})
		}
		if !r.ok || method > 1 || method == 1 && idat < 0 {
			continue
		}
		if method == 1 {
			for k := range extents {
				extents[k][0] += idat
			}
		}
		items[id] = extents
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

// heifImage is what the meta box says of the primary image.
type heifImage struct {
	typ    string // "hvc1" for one HEVC image, "grid" for tiles, ...
	hvcC   []byte // its HEVC decoder configuration
	w, h   int    // its coded size (ispe)
	orient int    // irot and imir as the EXIF orientation that shows it upright
	plain  bool   // hvc1 with no property the direct decoder cannot apply
	// oversized: some HEVC picture's SPS is unreadable or larger than
	// every ispe, so that the estimate would not bound its decode.
	oversized bool
	deep      bool // some image in the file has more than 8 bits a sample
	extents   [][2]int64
}

// primaryImage describes the primary image, ok false if the meta box
// names none with extents.
func (m *heifMeta) primaryImage() (img heifImage, ok bool) {
	img.typ = m.types[m.primary]
	img.extents, ok = m.extents[m.primary]
	if !ok || len(img.extents) == 0 {
		return img, false
	}
	// Each HEVC picture's width and height are bounded by those of the
	// ispe of largest area, the one heifConfig reports and so MaxPixels
	// and the estimate count (the largest width and the largest height
	// of two ispe would let a picture of both through): a picture is
	// coded at most a block of 64 pixels larger than it is shown (the
	// conformance window crops the rest).
	var maxW, maxH int
	var pictures [][2]int
	for _, p := range m.props {
		switch p.typ {
		case "ispe":
			if len(p.body) >= 12 {
				w, h := int(binary.BigEndian.Uint32(p.body[4:])), int(binary.BigEndian.Uint32(p.body[8:]))
				if uint64(w)*uint64(h) > uint64(maxW)*uint64(maxH) { // as findISPE picks
					maxW, maxH = w, h
				}
			}
		case "hvcC":
			w, h, bits, ok := hevcSize(p.body)
			if !ok {
				w, h = 1<<30, 1<<30
			}
			pictures = append(pictures, [2]int{w, h})
			// The decoder goes by the SPS, the header fields may say
			// otherwise: the deeper of the two prices the decode.
			if bits > 8 || len(p.body) > 18 && (p.body[17]&7 > 0 || p.body[18]&7 > 0) {
				img.deep = true
			}
		}
	}
	for _, p := range pictures {
		img.oversized = img.oversized || p[0] > maxW+64 || p[1] > maxH+64
	}
	img.plain = img.typ == "hvc1"
	var t orientation
	for _, a := range m.assoc[m.primary] {
		if a.index < 1 || a.index > len(m.props) {
			img.plain = img.plain && !a.essential
			continue
		}
		p := m.props[a.index-1]
		switch p.typ {
		case "hvcC":
			img.hvcC = p.body
		case "ispe":
			if len(p.body) >= 12 {
				img.w, img.h = int(binary.BigEndian.Uint32(p.body[4:])), int(binary.BigEndian.Uint32(p.body[8:]))
			}
		case "irot":
			if len(p.body) >= 1 {
				t = t.turn((4 - int(p.body[0]&3)) % 4) // irot turns anticlockwise
			}
		case "imir":
			if len(p.body) >= 1 {
				// libheif's reading: axis 0 flips top to bottom, 1 mirrors
				// left to right.
				t = t.mirror(p.body[0]&1 == 0)
			}
		case "colr", "pixi", "lsel", "a1op":
			// colour and layer signalling that a decode here ignores
		default:
			img.plain = img.plain && !a.essential
		}
		if p.typ == "clap" {
			img.plain = false // a crop, which libheif applies
		}
	}
	img.orient = t.exif()
	img.plain = img.plain && len(img.hvcC) > 22 && img.w > 0 && img.h > 0
	return img, true
}

// orientation is a turn of the image shown: mirrored left to right
// first, then turned clockwise by quarter turns.
type orientation struct {
	mirrored bool
	turns    int
}

// turn adds q clockwise quarter turns.
func (o orientation) turn(q int) orientation { return orientation{o.mirrored, (o.turns + q) % 4} }

// mirror adds a mirror image, top to bottom (vertical) or left to
// right: mirroring after a turn is the opposite turn after mirroring,
// and a top-to-bottom flip a left-to-right mirror turned half.
func (o orientation) mirror(vertical bool) orientation {
	n := orientation{!o.mirrored, (4 - o.turns) % 4}
	if vertical {
		return n.turn(2)
	}
	return n
}

// exif returns the EXIF orientation (orientImage's) of o.
func (o orientation) exif() int {
	if o.mirrored {
		return [4]int{2, 7, 4, 5}[o.turns]
	}
	return [4]int{1, 6, 3, 8}[o.turns]
}

// hvcCNALs returns the NAL units (parameter sets) in an hvcC: after 22
// bytes of profile, a count of arrays, each a NAL type, a count and NAL
// units with 16-bit lengths; ok is false if it is cut off.
func hvcCNALs(hvcC []byte) (nals [][]byte, ok bool) {
	if len(hvcC) < 23 {
		return nil, false
	}
	b := hvcC[23:]
	for range int(hvcC[22]) {
		if len(b) < 3 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(b[1:]))
		b = b[3:]
		for range n {
			if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
				return nil, false
			}
			nals = append(nals, b[2:2+int(binary.BigEndian.Uint16(b))])
			b = b[2+len(nals[len(nals)-1]):]
		}
	}
	return nals, true
}

// hevcSize reads the largest coded picture size and the most bits a
// sample from the sequence parameter sets (H.265 7.3.2.2) in an hvcC,
// every one of which libde265 takes; ok is false without one, or with
// one unreadable.
func hevcSize(hvcC []byte) (w, h, bits int, ok bool) {
	nals, _ := hvcCNALs(hvcC)
	for _, nal := range nals {
		if nalType(nal) == 33 { // SPS
			sw, sh, sb, sok := spsSize(nal)
			if !sok {
				return 0, 0, 0, false
			}
			w, h, bits, ok = max(w, sw), max(h, sh), max(bits, sb), true
		}
	}
	return w, h, bits, ok
}

// spsSize reads pic_width_in_luma_samples and pic_height_in_luma_samples
// from an SPS NAL unit, and the bits a sample of its deeper component.
func spsSize(nal []byte) (w, h, bits int, ok bool) {
	var rbsp []byte // without emulation prevention bytes (00 00 03)
	zeros := 0
	for _, c := range nal {
		if c == 3 && zeros >= 2 {
			zeros = 0
			continue
		}
		rbsp = append(rbsp, c)
		if zeros++; c != 0 {
			zeros = 0
		}
	}
	r := &bitReader{b: rbsp, ok: true}
	r.bits(16 + 4) // NAL header, sps_video_parameter_set_id
	sub := int(r.bits(3))
	r.bits(1 + 96) // temporal_id_nesting; general profile, tier and level
	present := make([]uint64, sub)
	for i := range present {
		present[i] = r.bits(2) // sub-layer profile and level present
	}
	if sub > 0 {
		r.bits(2 * (8 - sub))
	}
	for _, p := range present {
		r.bits(int(p>>1) * 88)
		r.bits(int(p&1) * 8)
	}
	r.ue() // sps_seq_parameter_set_id
	if r.ue() == 3 {
		r.bits(1) // separate_colour_plane_flag
	}
	cw, ch := r.ue(), r.ue()
	if r.bits(1) == 1 { // conformance_window_flag
		r.ue()
		r.ue()
		r.ue()
		r.ue()
	}
	luma, chroma := r.ue(), r.ue() // bit_depth_luma_minus8, bit_depth_chroma_minus8
	if !r.ok || cw == 0 || ch == 0 || cw > 1<<20 || ch > 1<<20 || luma > 8 || chroma > 8 {
		return 0, 0, 0, false
	}
	return int(cw), int(ch), 8 + int(max(luma, chroma)), true
}

// bitReader reads bits most significant first; ok turns false past the
// end.
type bitReader struct {
	b   []byte
	pos int
	ok  bool
}

func (r *bitReader) bits(n int) uint64 {
	var v uint64
	for range n {
		if r.pos >= 8*len(r.b) {
			r.ok = false
			return 0
		}
		v = v<<1 | uint64(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v
}

// ue reads an unsigned Exp-Golomb code.
func (r *bitReader) ue() uint64 {
	zeros := 0
	for r.ok && r.bits(1) == 0 {
		if zeros++; zeros > 31 {
			r.ok = false
			return 0
		}
	}
	return 1<<zeros - 1 + r.bits(zeros)
}

// nalType returns an HEVC NAL unit's type, -1 for an empty one.
func nalType(nal []byte) int {
	if len(nal) == 0 {
		return -1
	}
	return int(nal[0] >> 1 & 0x3f)
}
