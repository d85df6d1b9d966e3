//go:build !vips && linux

package imgbed

import (
	"bytes"
	"encoding/binary"
	"image"
	"strings"
	"testing"
)

// TestHEICDe265MatchesLibheif: libde265 called directly gives the same
// pixels as libheif for the same HEIC, upright as libheif turns it:
// heif-enc's files of 8 and 10 bits (narrowed to 8 as libheif does), and the fixture with every irot and imir (rotation
// and mirror properties, which heif-enc does not write, added to its
// meta box here) that together make the 8 orientations. A file with a
// crop (clap) goes to libheif.
func TestHEICDe265MatchesLibheif(t *testing.T) {
	if !de265Loaded() {
		t.Skip("no libheif and libde265 to load")
	}
	half := func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), 2 }
	same := func(name string, data []byte, orient int) {
		t.Helper()
		img, route := heicRoute(data)
		if route != heicDe265 || img.orient != orient {
			t.Fatalf("%s: route %d, orientation %d, want libde265's with %d", name, route, img.orient, orient)
		}
		got, err := decodeHEICDe265(data, img, half)
		if err != nil {
			t.Fatalf("%s: libde265: %v", name, err)
		}
		want, err := decodeHEICLibheif(data, half)
		if err != nil {
			t.Fatalf("%s: libheif: %v", name, err)
		}
		// libde265 called here and through libheif differ by a level or
		// two on a few samples next to the edges of 64-pixel blocks in
		// x265's fast files (859 of the 307,200 bytes of heif-enc's
		// 640×480 file halved, none in the fixture); not from threading (libde265 with a
		// worker thread, as libheif starts it, gives the same as
		// without). Invisible once averaged into a thumbnail.
		g, w := rgbaOf(got), rgbaOf(want)
		if g.Rect != w.Rect {
			t.Fatalf("%s: libde265 gave %v, libheif %v", name, g.Rect, w.Rect)
		}
		off := 0
		for i := range g.Pix {
			if d := absDiff(uint32(g.Pix[i]), uint32(w.Pix[i])); d > 3 {
				t.Fatalf("%s: byte %d is %d from libde265, %d from libheif", name, i, g.Pix[i], w.Pix[i])
			} else if d > 0 {
				off++
			}
		}
		if off > len(g.Pix)/100 {
			t.Errorf("%s: %d of %d bytes apart", name, off, len(g.Pix))
		}
		t.Logf("%s: %d of %d bytes apart", name, off, len(g.Pix))
	}
	same("heif-enc 640×480", encodeHEIC(t, 640, 480, false), 1)
	same("heif-enc 640×480, 10 bits", encodeHEIC(t, 640, 480, true), 1)
	fixture := readFixture(t, "gradient-160x96.heic")
	irot := func(a byte) []byte { return heifProp("irot", a) }
	imir := func(axis byte) []byte { return heifProp("imir", axis) }
	for _, c := range []struct {
		props  [][]byte
		orient int
	}{
		{[][]byte{irot(0)}, 1},
		{[][]byte{irot(1)}, 8},
		{[][]byte{irot(2)}, 3},
		{[][]byte{irot(3)}, 6},
		{[][]byte{imir(0)}, 4},
		{[][]byte{imir(1)}, 2},
		{[][]byte{irot(1), imir(0)}, 5},
		{[][]byte{irot(1), imir(1)}, 7},
		{[][]byte{imir(1), irot(1)}, 5},
	} {
		same("fixture with "+propNames(c.props), withHEIFProps(t, fixture, c.props...), c.orient)
	}
	clap := make([]byte, 8+32)
	copy(clap, []byte{0, 0, 0, 40, 'c', 'l', 'a', 'p'})
	for i, v := range []uint32{80, 1, 48, 1, 0, 1, 0, 1} { // 80×48, centred
		binary.BigEndian.PutUint32(clap[8+4*i:], v)
	}
	if img, route := heicRoute(withHEIFProps(t, fixture, clap)); route != heicLibheif || img.plain {
		t.Errorf("a cropped HEIC goes to decoder %d, plain %v; want libheif", route, img.plain)
	}
}

// rgbaOf returns img's pixels as RGBA (shrinkPlanes gives RGBA, or
// NRGBA of opaque pixels when it turned them).
func rgbaOf(img image.Image) *image.RGBA {
	switch m := img.(type) {
	case *image.RGBA:
		return m
	case *image.NRGBA:
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
	}
	return nil
}

// heifProp is an irot or imir property box: a byte after the header.
func heifProp(typ string, v byte) []byte {
	return append([]byte{0, 0, 0, 9}, append([]byte(typ), v)...)
}

func propNames(props [][]byte) string {
	var s string
	for _, p := range props {
		s += string(p[4:8]) + string('0'+p[8]) + " "
	}
	return s
}

// withHEIFProps adds property boxes to the ipco of a file laid out as
// heif-enc 1.15 writes one (ftyp, meta, mdat; ipma version 0 with one
// entry, the primary's; iloc with 4-byte base offsets) and associates
// them, essential and in order, with the primary image. The meta box
// grows, so every item's base offset moves by as much.
func withHEIFProps(t *testing.T, data []byte, props ...[]byte) []byte {
	t.Helper()
	ftyp := int(binary.BigEndian.Uint32(data))
	meta := data[ftyp : ftyp+int(binary.BigEndian.Uint32(data[ftyp:]))]
	var added []byte
	for _, p := range props {
		added = append(added, p...)
	}
	var body []byte // meta's children, rebuilt
	var nprops int
	for _, c := range heifBoxes(meta[12:]) {
		switch c.typ {
		case "iprp":
			var iprp []byte
			for _, p := range heifBoxes(c.body) {
				switch p.typ {
				case "ipco":
					nprops = len(heifBoxes(p.body))
					iprp = appendBox(iprp, "ipco", append(bytes.Clone(p.body), added...))
				case "ipma":
					b := bytes.Clone(p.body)
					if len(b) != 4+4+2+1+int(b[10]) || binary.BigEndian.Uint64(b[:8]) != 1 {
						t.Fatalf("ipma %x: not one entry of version 0", b)
					}
					b[10] += byte(len(props))
					for i := range props {
						b = append(b, 0x80|byte(nprops+1+i))
					}
					iprp = appendBox(iprp, "ipma", b)
				default:
					iprp = appendBox(iprp, p.typ, p.body)
				}
			}
			body = appendBox(body, "iprp", iprp)
		default:
			body = appendBox(body, c.typ, c.body)
		}
	}
	delta := uint32(len(body) + 12 - len(meta))
	for _, c := range heifBoxes(body) {
		if c.typ != "iloc" {
			continue
		}
		b := c.body
		if b[0] != 0 || b[4] != 0x44 || b[5]>>4 != 4 {
			t.Fatalf("iloc %x: not version 0 with 4-byte offsets", b)
		}
		for i, at := 0, 8; i < int(binary.BigEndian.Uint16(b[6:])); i++ {
			binary.BigEndian.PutUint32(b[at+4:], binary.BigEndian.Uint32(b[at+4:])+delta)
			at += 10 + 8*int(binary.BigEndian.Uint16(b[at+8:]))
		}
	}
	out := append(bytes.Clone(data[:ftyp]), appendBox(nil, "meta", append(bytes.Clone(meta[8:12]), body...))...)
	return append(out, data[ftyp+len(meta):]...)
}

func appendBox(dst []byte, typ string, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(8+len(body)))
	return append(append(dst, typ...), body...)
}

// TestHEICOversizedPicture: a HEIC whose HEVC picture is wider or
// taller than the ispe it is priced by (so larger than MaxPixels and
// the render estimate count) is refused before any decoder allocates
// it.
func TestHEICOversizedPicture(t *testing.T) {
	data := readFixture(t, "gradient-160x96.heic")
	meta, off, ok := findMetaBox(data)
	if !ok {
		t.Fatal("no meta box in the fixture")
	}
	img, _ := parseHEIFMeta(meta, off).primaryImage()
	if w, h, _, ok := hevcSize(img.hvcC); !ok || w != 160 || h != 96 || img.oversized {
		t.Fatalf("SPS size %d×%d %v, oversized %v; want 160×96", w, h, ok, img.oversized)
	}
	small := bytes.Clone(data)
	at := bytes.Index(small, []byte("ispe")) + 8
	binary.BigEndian.PutUint32(small[at:], 80)
	binary.BigEndian.PutUint32(small[at+4:], 16)
	if _, err := decodeShrunk(formatHEIC.mime(), bytes.NewReader(small), plan256); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 160×96 picture behind an ispe of 80×16: %v", err)
	}
	// Two ispe, 160×16 and 16×96: the price counts the larger in area,
	// whose height the picture's is well above.
	split := bytes.Clone(data)
	binary.BigEndian.PutUint32(split[at+4:], 16)
	split = withHEIFProps(t, split, appendBox(nil, "ispe", []byte{0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 96}))
	if c, err := heifConfig(bytes.NewReader(split)); err != nil || c.Width != 160 || c.Height != 16 {
		t.Fatalf("heifConfig of ispe 160×16 and 16×96: %d×%d %v", c.Width, c.Height, err)
	}
	if _, err := decodeShrunk(formatHEIC.mime(), bytes.NewReader(split), plan256); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 160×96 picture behind ispe of 160×16 and 16×96: %v", err)
	}
}

// TestHEICItemExtentsBoundedByFile: an item's extents may all name the
// whole file, which joined would be up to 65,535 times its size; they
// are refused before the join allocates, while extents that split the
// item join as they are.
func TestHEICItemExtentsBoundedByFile(t *testing.T) {
	data := make([]byte, 1<<10)
	for i := range data {
		data[i] = byte(i)
	}
	whole := make([][2]int64, 1<<16-1)
	for i := range whole {
		whole[i] = [2]int64{0, int64(len(data))}
	}
	if b, err := itemBytes(data, whole); err == nil {
		t.Errorf("65,535 extents of the whole %d-byte file joined into %d bytes", len(data), len(b))
	}
	if b, err := itemBytes(data, whole[:2]); err == nil {
		t.Errorf("two extents of the whole file joined into %d bytes", len(b))
	}
	split := [][2]int64{{512, 512}, {0, 512}}
	b, err := itemBytes(data, split)
	if err != nil || !bytes.Equal(b, append(bytes.Clone(data[512:]), data[:512]...)) {
		t.Errorf("an item split in two extents: %v", err)
	}
}

// TestHEICParameterSetsOnlyInHvcC: libde265 takes a VPS, SPS or PPS
// wherever it comes, so parameter sets in the item's data (the HEIF
// spec puts them in hvcC) are refused, as they could describe a picture
// of any size, and so is a second picture, which libde265 would decode
// too; of an hvcC's sequence parameter sets, the largest is the one
// bounded.
func TestHEICParameterSetsOnlyInHvcC(t *testing.T) {
	if !de265Loaded() {
		t.Skip("no libde265")
	}
	small, big := encodeHEIC(t, 64, 64, false), encodeHEIC(t, 256, 128, false)
	primary := func(data []byte) heifImage {
		t.Helper()
		meta, off, ok := findMetaBox(data)
		img, ok2 := parseHEIFMeta(meta, off).primaryImage()
		if !ok || !ok2 {
			t.Fatal("no primary image")
		}
		return img
	}
	img := primary(small)
	coded, err := itemBytes(small, img.extents)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := hvcCNALs(img.hvcC)
	var inBand []byte
	for _, p := range params {
		inBand = binary.BigEndian.AppendUint32(inBand, uint32(len(p)))
		inBand = append(inBand, p...)
	}
	moved := withItemData(small, coded)
	if _, err := decodeHEICDe265(moved, primary(moved), plan256); err != nil {
		t.Fatalf("the item moved to an mdat of its own: %v", err)
	}
	inItem := withItemData(small, append(inBand, coded...))
	if _, err := decodeHEICDe265(inItem, primary(inItem), plan256); err == nil || !strings.Contains(err.Error(), "parameter set") {
		t.Errorf("parameter sets in the item's data: %v", err)
	}
	twice := withItemData(small, append(bytes.Clone(coded), coded...))
	if _, err := decodeHEICDe265(twice, primary(twice), plan256); err == nil || !strings.Contains(err.Error(), "more than one picture") {
		t.Errorf("the picture twice in the item's data: %v", err)
	}

	// small's hvcC with big's SPS added after its own.
	bigParams, _ := hvcCNALs(primary(big).hvcC)
	hvcC := append(bytes.Clone(img.hvcC[:22]), byte(len(params)+1))
	for _, p := range append(params, bigParams[1]) {
		hvcC = append(hvcC, p[0]>>1&0x3f, 0, 1)
		hvcC = binary.BigEndian.AppendUint16(hvcC, uint16(len(p)))
		hvcC = append(hvcC, p...)
	}
	if bigParams[1][0]>>1&0x3f != 33 {
		t.Fatalf("big's second parameter set is of type %d, not an SPS", bigParams[1][0]>>1&0x3f)
	}
	if w, h, _, ok := hevcSize(hvcC); !ok || w != 256 || h != 128 {
		t.Errorf("hvcC with SPSs of 64×64 and 256×128: %d×%d %v", w, h, ok)
	}
}

// withItemData moves the primary item of a file laid out as heif-enc
// writes one (one item, iloc version 0 with 4-byte fields) into a new
// mdat after the meta box, holding item.
func withItemData(data, item []byte) []byte {
	ftyp := int(binary.BigEndian.Uint32(data))
	metaEnd := ftyp + int(binary.BigEndian.Uint32(data[ftyp:]))
	file := bytes.Clone(data[:metaEnd])
	e := file[bytes.Index(file, []byte("iloc"))+4+8:]
	binary.BigEndian.PutUint32(e[4:], uint32(metaEnd+8)) // base offset
	binary.BigEndian.PutUint32(e[10:], 0)                // extent offset
	binary.BigEndian.PutUint32(e[14:], uint32(len(item)))
	return appendBox(file, "mdat", item)
}

// TestHEICDepthFromSPS: a 10-bit HEIC is priced as one even when its
// hvcC header fields say 8 bits, since the decoder goes by the SPS.
func TestHEICDepthFromSPS(t *testing.T) {
	for _, deep := range []bool{false, true} {
		data := bytes.Clone(encodeHEIC(t, 64, 48, deep))
		cost := heicCost(data, 64*48, int64(len(data)))
		at := bytes.Index(data, []byte("hvcC")) + 4
		data[at+17] &^= 7 // bitDepthLumaMinus8
		data[at+18] &^= 7 // bitDepthChromaMinus8
		meta, off, _ := findMetaBox(data)
		m := parseHEIFMeta(meta, off)
		img, _ := m.primaryImage()
		for _, p := range m.props {
			if _, _, bits, ok := hevcSize(p.body); p.typ == "hvcC" && (!ok || bits != map[bool]int{false: 8, true: 10}[deep]) {
				t.Errorf("deep %v: SPS of %d bits %v", deep, bits, ok)
			}
		}
		if img.deep != deep {
			t.Errorf("deep %v, hvcC header saying 8 bits: deep %v", deep, img.deep)
		}
		if c := heicCost(data, 64*48, int64(len(data))); c != cost {
			t.Errorf("deep %v, hvcC header saying 8 bits: priced %d, not %d", deep, c, cost)
		}
	}
}
