package imgbed

import (
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"image"
	"io"
)

// A PNG of 50 megapixels decoded whole is 200 MB of pixels, though the
// file may be a few hundred KB; a thumbnail needs none of that at once.
// streamPNG reads a non-interlaced PNG a row at a time (each row's
// filter needs only the row above), converts the crop's columns to
// premultiplied RGBA exactly as image/png followed by image/draw would,
// and feeds them to the block averager. Memory: three rows, the inflate
// window, and the shrunk image.
// Interlaced (Adam7) files, rare in uploads, go through image/png.

// pngHeader is what streamPNG needs of IHDR, PLTE and tRNS.
type pngHeader struct {
	w, h, depth, colorType int
	channels               int
	palette                [256][4]uint16 // non-premultiplied RGBA, 16 bits
	hasPalette             bool
	// trns is the transparent grey or RGB sample, as image/png compares
	// it (the low byte at depths up to 8, scaled like the samples).
	trns    [3]uint16
	hasTRNS bool
}

// pngChannels is the sample count of each valid color type.
var pngChannels = map[int]int{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

// pngDepthOK reports whether the IHDR combination is one PNG allows.
func pngDepthOK(colorType, depth int) bool {
	switch colorType {
	case 0:
		return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16
	case 3:
		return depth == 1 || depth == 2 || depth == 4 || depth == 8
	}
	return depth == 8 || depth == 16
}

var errPNGStream = errors.New("png: malformed")

// pngChunks reads a PNG's chunks, checking each CRC.
type pngChunks struct {
	r   io.Reader
	crc hash.Hash32
	// left is what is left of the current IDAT chunk's data.
	left   uint32
	inIDAT bool
	done   bool // a chunk after the IDATs was reached
}

// next reads a chunk header.
func (c *pngChunks) next() (n uint32, typ string, err error) {
	var h [8]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, "", err
	}
	n = binary.BigEndian.Uint32(h[:4])
	if n > 1<<31-1 {
		return 0, "", errPNGStream
	}
	c.crc = crc32.NewIEEE()
	c.crc.Write(h[4:])
	return n, string(h[4:]), nil
}

// body reads a whole (small) chunk's data and its CRC.
func (c *pngChunks) body(n uint32) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, err
	}
	c.crc.Write(b)
	return b, c.checkCRC()
}

func (c *pngChunks) checkCRC() error {
	var want [4]byte
	if _, err := io.ReadFull(c.r, want[:]); err != nil {
		return err
	}
	if c.crc.Sum32() != binary.BigEndian.Uint32(want[:]) {
		return errPNGStream
	}
	return nil
}

// Read returns the concatenated data of consecutive IDAT chunks.
func (c *pngChunks) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.checkCRC(); err != nil {
			return 0, err
		}
		n, typ, err := c.next()
		if err != nil {
			return 0, err
		}
		if typ != "IDAT" {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	p = p[:min(len(p), int(c.left))]
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.left -= uint32(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readPNGHeader reads up to the first IDAT, leaving c at its data.
func readPNGHeader(c *pngChunks) (*pngHeader, error) {
	var sig [8]byte
	if _, err := io.ReadFull(c.r, sig[:]); err != nil {
		return nil, err
	}
	if string(sig[:]) != "\x89PNG\r\n\x1a\n" {
		return nil, errPNGStream
	}
	var h *pngHeader
	for {
		n, typ, err := c.next()
		if err != nil {
			return nil, err
		}
		if h == nil && typ != "IHDR" || typ == "IEND" {
			return nil, errPNGStream
		}
		if typ == "IDAT" {
			if h.colorType == 3 && !h.hasPalette {
				return nil, errPNGStream
			}
			c.left, c.inIDAT = n, true
			return h, nil
		}
		if typ != "IHDR" && typ != "PLTE" && typ != "tRNS" {
			if _, err := io.CopyN(c.crc, c.r, int64(n)); err != nil {
				return nil, err
			}
			if err := c.checkCRC(); err != nil {
				return nil, err
			}
			continue
		}
		if n > 3*256 {
			return nil, errPNGStream
		}
		b, err := c.body(n)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "IHDR":
			if h != nil || len(b) != 13 {
				return nil, errPNGStream
			}
			h = &pngHeader{w: int(binary.BigEndian.Uint32(b)), h: int(binary.BigEndian.Uint32(b[4:])), depth: int(b[8]), colorType: int(b[9])}
			h.channels = pngChannels[h.colorType]
			if h.w <= 0 || h.h <= 0 || h.w > 1<<20 || h.h > 1<<20 || h.channels == 0 || !pngDepthOK(h.colorType, h.depth) || b[10] != 0 || b[11] != 0 || b[12] != 0 {
				return nil, errPNGStream
			}
			for i := range h.palette {
				h.palette[i] = [4]uint16{0, 0, 0, 0xffff} // out of range: opaque black, as image/png
			}
		case "PLTE":
			if h.colorType != 3 || len(b)%3 != 0 || len(b) == 0 || len(b)/3 > 1<<h.depth {
				if h.colorType == 3 {
					return nil, errPNGStream
				}
				continue // optional, and ignored, for true colour
			}
			for i := 0; i < len(b)/3; i++ {
				h.palette[i] = [4]uint16{uint16(b[3*i]) * 0x101, uint16(b[3*i+1]) * 0x101, uint16(b[3*i+2]) * 0x101, 0xffff}
			}
			h.hasPalette = true
		case "tRNS":
			if err := h.setTRNS(b); err != nil {
				return nil, err
			}
		}
	}
}

// setTRNS reads a tRNS chunk as image/png does.
func (h *pngHeader) setTRNS(b []byte) error {
	switch h.colorType {
	case 0, 2:
		if len(b) != 2*h.channels {
			return errPNGStream
		}
		for i := 0; i < h.channels; i++ {
			v := binary.BigEndian.Uint16(b[2*i:])
			if h.depth < 16 {
				v &= 0xff
				v = uint16(uint8(v) * uint8(0xff/(1<<h.depth-1))) // image/png scales the low byte
			}
			h.trns[i] = v
		}
		h.hasTRNS = true
	case 3:
		if len(b) > 256 {
			return errPNGStream
		}
		for i, a := range b {
			h.palette[i][3] = uint16(a) * 0x101
		}
	default:
		return errPNGStream
	}
	return nil
}

// streamPNG decodes the PNG in r as plan says (see above).
func streamPNG(r io.Reader, plan shrinkPlan) (image.Image, error) {
	c := &pngChunks{r: r}
	h, err := readPNGHeader(c)
	if err != nil {
		return nil, err
	}
	crop, k := plan(h.w, h.h)
	crop = crop.Intersect(image.Rect(0, 0, h.w, h.h))
	if crop.Empty() {
		return nil, errPNGStream
	}
	avg := newBlockAverager(crop.Dx()/k, crop.Dy()/k, k)
	zr, err := zlib.NewReader(c)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	rowBytes := (h.w*h.channels*h.depth + 7) / 8
	bpp := max(1, h.channels*h.depth/8)
	cur, prev := make([]byte, 1+rowBytes), make([]byte, 1+rowBytes)
	lastRow := crop.Min.Y + avg.dst.Rect.Dy()*k // rows below are not needed
	for y := 0; y < lastRow; y++ {
		if _, err := io.ReadFull(zr, cur); err != nil {
			return nil, err
		}
		if err := unfilter(cur[0], cur[1:], prev[1:], bpp); err != nil {
			return nil, err
		}
		if y >= crop.Min.Y {
			h.convert(avg.row.Pix, cur[1:], crop.Min.X, crop.Min.X+avg.row.Rect.Dx())
			avg.addRow()
		}
		cur, prev = prev, cur
	}
	return avg.dst, nil
}

// unfilter undoes a row's filter in place (PNG section 9).
func unfilter(filter byte, cur, prev []byte, bpp int) error {
	switch filter {
	case 0:
	case 1:
		for i := bpp; i < len(cur); i++ {
			cur[i] += cur[i-bpp]
		}
	case 2:
		for i := range cur {
			cur[i] += prev[i]
		}
	case 3:
		for i := range cur {
			var left int
			if i >= bpp {
				left = int(cur[i-bpp])
			}
			cur[i] += byte((left + int(prev[i])) / 2)
		}
	case 4:
		for i := range cur {
			var a, c int
			if i >= bpp {
				a, c = int(cur[i-bpp]), int(prev[i-bpp])
			}
			cur[i] += paeth(a, int(prev[i]), c)
		}
	default:
		return errPNGStream
	}
	return nil
}

func paeth(a, b, c int) byte {
	p := a + b - c
	pa, pb, pc := intAbs(p-a), intAbs(p-b), intAbs(p-c)
	switch {
	case pa <= pb && pa <= pc:
		return byte(a)
	case pb <= pc:
		return byte(b)
	}
	return byte(c)
}

func intAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// convert writes the pixels x0..x1 of an unfiltered row into dst as
// premultiplied 8-bit RGBA, with image/png's and image/draw's arithmetic:
// samples widened to 16 bits, alpha multiplied in, the high byte kept.
func (h *pngHeader) convert(dst, row []byte, x0, x1 int) {
	if h.depth == 8 && !h.hasTRNS && h.colorType != 3 {
		h.convert8(dst, row, x0, x1)
		return
	}
	var s [4]uint16
	for x := x0; x < x1; x++ {
		for i := 0; i < h.channels; i++ {
			s[i] = h.sample(row, x*h.channels+i)
		}
		var c [4]uint16
		switch h.colorType {
		case 0:
			c = [4]uint16{s[0], s[0], s[0], 0xffff}
			if h.hasTRNS && h.trnsMatch(s[:1]) {
				c[3] = 0
			}
		case 2:
			c = [4]uint16{s[0], s[1], s[2], 0xffff}
			if h.hasTRNS && h.trnsMatch(s[:3]) {
				c[3] = 0
			}
		case 3:
			c = h.palette[s[0]>>8]
		case 4:
			c = [4]uint16{s[0], s[0], s[0], s[1]}
		case 6:
			c = s
		}
		a := uint32(c[3])
		o := dst[4*(x-x0):]
		o[0] = uint8(uint32(c[0]) * a / 0xffff >> 8)
		o[1] = uint8(uint32(c[1]) * a / 0xffff >> 8)
		o[2] = uint8(uint32(c[2]) * a / 0xffff >> 8)
		o[3] = uint8(a >> 8)
	}
}

// convert8 is convert for the common 8-bit grey, RGB, grey-alpha and
// RGBA rows without tRNS, the same arithmetic without widening.
func (h *pngHeader) convert8(dst, row []byte, x0, x1 int) {
	n := h.channels
	for x := x0; x < x1; x++ {
		p, o := row[n*x:n*x+n], dst[4*(x-x0):4*(x-x0)+4]
		switch n {
		case 1:
			o[0], o[1], o[2], o[3] = p[0], p[0], p[0], 0xff
		case 3:
			o[0], o[1], o[2], o[3] = p[0], p[1], p[2], 0xff
		default:
			a := uint32(p[n-1])
			for i := range 3 {
				o[i] = uint8(uint32(p[min(i, n-2)]) * 0x101 * a / 0xff >> 8)
			}
			o[3] = uint8(a)
		}
	}
}

// sample returns the i-th sample of a row widened to 16 bits; a palette
// index is returned in the high byte, unscaled.
func (h *pngHeader) sample(row []byte, i int) uint16 {
	switch h.depth {
	case 16:
		return binary.BigEndian.Uint16(row[2*i:])
	case 8:
		return uint16(row[i]) * 0x101
	}
	bit := i * h.depth
	v := row[bit/8] >> (8 - h.depth - bit%8) & (1<<h.depth - 1)
	if h.colorType == 3 {
		return uint16(v) << 8
	}
	v *= 0xff / (1<<h.depth - 1) // image/png scales low-depth grey to 8 bits
	return uint16(v) * 0x101
}

// trnsMatch compares samples with tRNS as image/png does: at depths up
// to 8 only their 8-bit values count.
func (h *pngHeader) trnsMatch(s []uint16) bool {
	for i, v := range s {
		if h.depth < 16 {
			v &= 0xff
		}
		want := h.trns[i]
		if h.depth < 16 {
			want &= 0xff
		}
		if v != want {
			return false
		}
	}
	return true
}
