package imgbed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
)

// A JPEG decoded at a reduced scale, as libjpeg's scaled decode does:
// each 8×8 block of DCT coefficients is transformed straight into
// 4×4, 2×2 or 1×1 pixels (its low frequencies only), so a 50-megapixel
// photo rendered as a thumbnail is never decoded whole. Baseline files
// are decoded an MCU row at a time into the block average, like
// png_stream.go: memory is one row of blocks. Progressive files are
// taken at 1/8 only, from their DC scans (the AC scans are skipped
// unread), which keeps a coefficient a block. Go's image/jpeg keeps the
// whole image (and for progressive files every coefficient) and offers
// no scaled decode; the maintained libraries that do (jpegli, the same
// author's WebAssembly package, and go-scaled-jpeg) are not served by
// the module proxy this project builds from.
//
// Everything else (arithmetic coding, lossless, 12-bit samples, CMYK,
// RGB-coded files, sampling factors that do not divide the largest,
// non-interleaved baseline scans, progressive files above 1/8) is left
// to image/jpeg: streamJPEG returns errJPEGFallback before reading any
// entropy-coded data, with the header bytes it read.

// jpegFallback carries the bytes streamJPEG consumed before deciding
// that image/jpeg must decode the file: prepend them to the rest.
type jpegFallback struct{ head []byte }

func (*jpegFallback) Error() string { return "imgbed: JPEG left to image/jpeg" }

// maxJPEGHead bounds the header bytes kept for a fallback (tables,
// frame and scan headers; APP and COM segments are not kept, since
// image/jpeg reads only APP0 and APP14 of them).
const maxJPEGHead = 1 << 20

// maxJPEGStreamPixels bounds the frame size streamJPEG allocates for:
// the DC coefficients of a progressive file are 4 bytes a block.
const maxJPEGStreamPixels = 1 << 28

var errJPEGStream = errors.New("imgbed: damaged JPEG")

// jpegUnzig maps the zigzag order coefficients arrive in to their
// natural (row-major) position in the block.
var jpegUnzig = [64]uint8{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
}

// jpegHuff is a Huffman table (JPEG Annex C): codes of up to 8 bits are
// looked up at once, longer ones walked length by length.
type jpegHuff struct {
	lookup  [256]uint16 // length<<8 | value; 0: longer than 8 bits
	maxcode [17]int32   // the largest code of each length, -1 if none
	valptr  [17]int32
	mincode [17]int32
	vals    []byte
	set     bool
}

func (h *jpegHuff) build(counts []byte, vals []byte) error {
	*h = jpegHuff{vals: vals, set: true}
	code, k := int32(0), int32(0)
	for l := 1; l <= 16; l++ {
		n := int32(counts[l-1])
		h.mincode[l], h.valptr[l], h.maxcode[l] = code, k, -1
		if n > 0 {
			h.maxcode[l] = code + n - 1
		}
		if code+n > 1<<l {
			return errJPEGStream // more codes than the length allows
		}
		for range n {
			if l <= 8 {
				shift := 8 - l
				for j := range int32(1) << shift {
					h.lookup[code<<shift|j] = uint16(l)<<8 | uint16(vals[k])
				}
			}
			code++
			k++
		}
		code <<= 1
	}
	return nil
}

// jpegBits reads the entropy-coded bytes of a scan: stuffed 0xFF00 is a
// 0xFF, and at a marker it stops and pads with zeros (as libjpeg does),
// leaving the marker unread.
type jpegBits struct {
	r      *bufio.Reader
	acc    uint64 // the next bits, first at the top
	n      uint
	marker bool
	pad    uint  // zero bytes added after the data
	err    error // a read error: the file ended
}

// short returns the read error if the data ran out before the bits
// used so far (padding after a marker is no error, after the end is).
func (b *jpegBits) short() error {
	if b.err != nil && b.pad*8 > b.n {
		return b.err
	}
	return nil
}

func (b *jpegBits) fill() {
	for b.n <= 56 {
		var c byte
		if !b.marker {
			p, err := b.r.Peek(2)
			switch {
			case len(p) == 0:
				b.err, b.marker = io.ErrUnexpectedEOF, true
				if err != nil && err != io.EOF {
					b.err = err
				}
			case p[0] != 0xff:
				c = p[0]
				b.r.Discard(1)
			case len(p) == 2 && p[1] == 0:
				c = 0xff
				b.r.Discard(2)
			default: // a marker, or a lone 0xFF at the end
				b.marker = true
			}
		}
		if b.marker {
			b.pad++
		}
		b.acc |= uint64(c) << (56 - b.n)
		b.n += 8
	}
}

func (b *jpegBits) bits(n uint) int32 {
	if n == 0 {
		return 0
	}
	if b.n < n {
		b.fill()
	}
	v := int32(b.acc >> (64 - n))
	b.acc <<= n
	b.n -= n
	return v
}

// receive reads an n-bit magnitude and extends its sign (F.2.2.1).
func (b *jpegBits) receive(n uint) int32 {
	v := b.bits(n)
	if n > 0 && v < 1<<(n-1) {
		v += -1<<n + 1
	}
	return v
}

func (b *jpegBits) decode(h *jpegHuff) (byte, error) {
	if b.n < 16 {
		b.fill()
	}
	if e := h.lookup[b.acc>>56]; e != 0 {
		l := uint(e >> 8)
		b.acc <<= l
		b.n -= l
		return byte(e), nil
	}
	code := int32(b.acc >> 56)
	for l := 9; l <= 16; l++ {
		code = code<<1 | int32(b.acc>>(64-l)&1)
		if code <= h.maxcode[l] {
			b.acc <<= uint(l)
			b.n -= uint(l)
			i := h.valptr[l] + code - h.mincode[l]
			if i < 0 || int(i) >= len(h.vals) {
				return 0, errJPEGStream
			}
			return h.vals[i], nil
		}
	}
	return 0, fmt.Errorf("%w: bad Huffman code", errJPEGStream)
}

// restart drops the bits left and reads the RSTn marker that must come
// next (any bytes before it are skipped, as by libjpeg).
func (b *jpegBits) restart() error {
	b.acc, b.n, b.marker, b.pad = 0, 0, false, 0
	m, err := nextJPEGMarker(b.r)
	if err != nil {
		return err
	}
	if m < 0xd0 || m > 0xd7 {
		return fmt.Errorf("%w: missing restart marker", errJPEGStream)
	}
	return nil
}

// nextJPEGMarker skips to the next marker that is not a stuffed 0xFF
// and returns its code, consumed.
func nextJPEGMarker(r *bufio.Reader) (byte, error) {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0, unexpected(err)
		}
		if c != 0xff {
			continue
		}
		for c == 0xff { // fill bytes
			if c, err = r.ReadByte(); err != nil {
				return 0, unexpected(err)
			}
		}
		if c != 0 {
			return c, nil
		}
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

type jpegComp struct {
	id, h, v, tq int
	td, ta       int // the Huffman tables of the current scan
	bw, bh       int // blocks across and down in the padded MCU grid
	cw, ch       int // blocks across and down a non-interleaved scan covers
	pred         int32
	dc           []int32 // progressive: the DC coefficient of each block
	// nx×ny: the pixels a block becomes. A subsampled component's
	// blocks cover more of the image, so they keep more of their
	// frequencies (as libjpeg's scaled decode does): its pixels then
	// match the luma's one to one, up to 8 a block.
	nx, ny int
	idct   *scaledIDCT
	rows   []byte // the current MCU row's pixels, bw*nx wide, v*ny high
}

type jpegStream struct {
	r           *bufio.Reader
	head        bytes.Buffer // bytes read that image/jpeg needs if it takes over
	keep        bool
	w, h        int
	progressive bool
	comps       []jpegComp
	hmax, vmax  int
	mcusX       int
	mcusY       int
	quant       [4][64]int32 // zigzag order
	dcTab       [4]jpegHuff
	acTab       [4]jpegHuff
	interval    int
	adobeRGB    bool
	n           int // pixels a block becomes across: 8/scale
	bits        jpegBits
}

// readFull reads len(p) bytes, keeping them for a fallback when keep.
func (d *jpegStream) readFull(p []byte, keep bool) error {
	if _, err := io.ReadFull(d.r, p); err != nil {
		return unexpected(err)
	}
	if keep && d.keep {
		if d.head.Len()+len(p) > maxJPEGHead {
			return fmt.Errorf("%w: headers over %d bytes", errJPEGStream, maxJPEGHead)
		}
		d.head.Write(p)
	}
	return nil
}

// streamJPEG decodes the JPEG in r as plan says, at the coarsest DCT
// scale (1/2, 1/4 or 1/8) that plan's averaging factor allows, then
// averages what is left of the factor, as streamPNG does. It returns a
// *jpegFallback for the files it leaves to image/jpeg.
func streamJPEG(r *bufio.Reader, plan shrinkPlan) (image.Image, error) {
	d := &jpegStream{r: r, keep: true}
	soi := make([]byte, 2)
	if err := d.readFull(soi, true); err != nil {
		return nil, err
	}
	if soi[0] != 0xff || soi[1] != 0xd8 {
		return nil, fmt.Errorf("%w: no SOI marker", errJPEGStream)
	}
	sos, err := d.readHeader()
	if err != nil {
		return nil, err
	}
	if sos == nil {
		return nil, fmt.Errorf("%w: no image data", errJPEGStream)
	}
	c, kk := plan(d.w, d.h)
	scale := d.scale(kk, sos)
	if scale == 0 {
		return nil, d.fallback()
	}
	d.keep = false
	d.n = 8 / scale
	// The last partial scaled pixel (padding mixed in) is left out, as
	// boxShrink leaves out the pixels short of a whole block.
	sw, sh := d.w/scale, d.h/scale
	half := scale / 2 // round the crop to the nearest scaled pixel
	crop := image.Rect((c.Min.X+half)/scale, (c.Min.Y+half)/scale, (c.Max.X+half)/scale, (c.Max.Y+half)/scale).Intersect(image.Rect(0, 0, sw, sh))
	k := max(1, kk/scale)
	if crop.Dx() < k || crop.Dy() < k {
		return nil, fmt.Errorf("%w: nothing to render", errJPEGStream)
	}
	for i := range d.comps {
		c := &d.comps[i]
		if d.progressive {
			c.dc = make([]int32, c.bw*c.bh)
		}
		c.nx, c.ny = d.n, d.n
		if !d.progressive { // a DC coefficient is one pixel a block
			c.nx, c.ny = min(8, d.n*d.hmax/c.h), min(8, d.n*d.vmax/c.v)
		}
		c.idct = newScaledIDCT(c.nx, c.ny)
		c.rows = make([]byte, c.bw*c.nx*c.v*c.ny)
	}
	avg := newBlockAverager(crop.Dx()/k, crop.Dy()/k, k)
	for sos != nil {
		done, err := d.scan(sos, avg, crop)
		if err != nil || done {
			return avg.dst, err
		}
		if sos, err = d.readHeader(); err != nil {
			return nil, err
		}
	}
	if !d.progressive {
		return nil, fmt.Errorf("%w: no image data", errJPEGStream)
	}
	d.emitDC(avg, crop)
	return avg.dst, nil
}

// readHeader reads segments up to the next scan and returns its header
// (nil at the end of the image), taking in the tables on the way.
func (d *jpegStream) readHeader() (sos []byte, err error) {
	for {
		m, err := nextJPEGMarker(d.r)
		if err != nil {
			return nil, err
		}
		if m == 0xd9 { // EOI
			return nil, nil
		}
		if m >= 0xd0 && m <= 0xd7 || m == 0x01 { // no length
			continue
		}
		var lb [2]byte
		if err := d.readFull(lb[:], false); err != nil {
			return nil, err
		}
		n := int(lb[0])<<8 | int(lb[1]) - 2
		if n < 0 {
			return nil, fmt.Errorf("%w: bad segment length", errJPEGStream)
		}
		if m == 0xfe || m >= 0xe1 && m <= 0xef && m != 0xee { // COM, APPn
			if _, err := d.r.Discard(n); err != nil {
				return nil, unexpected(err)
			}
			continue
		}
		if d.keep {
			d.head.Write([]byte{0xff, m, lb[0], lb[1]})
		}
		seg := make([]byte, n)
		if err := d.readFull(seg, true); err != nil {
			return nil, err
		}
		switch {
		case m == 0xdb:
			err = d.readDQT(seg)
		case m == 0xc4:
			err = d.readDHT(seg)
		case m == 0xdd:
			if len(seg) < 2 {
				err = errJPEGStream
			} else {
				d.interval = int(seg[0])<<8 | int(seg[1])
			}
		case m == 0xee:
			// Adobe: transform 0 with three components is RGB.
			d.adobeRGB = len(seg) >= 12 && string(seg[:5]) == "Adobe" && seg[11] == 0
		case m == 0xc0 || m == 0xc1 || m == 0xc2:
			if d.comps != nil {
				return nil, fmt.Errorf("%w: two frames", errJPEGStream)
			}
			err = d.readSOF(seg, m == 0xc2)
		case m >= 0xc3 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			return nil, d.fallback() // lossless, hierarchical, arithmetic
		case m == 0xda:
			if d.comps == nil || len(seg) < 1 {
				return nil, fmt.Errorf("%w: scan before frame", errJPEGStream)
			}
			return seg, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// scale returns the DCT scale a render averaging by k takes the frame
// at, its first scan's header being sos: 2, 4 or 8, or 0 where the file
// is left to image/jpeg. planRender's k of 2 or more leaves at least
// twice the output size, so a scale of up to 2k still leaves at least
// the output; k = 1 may leave less than twice, and is decoded whole.
func (d *jpegStream) scale(k int, sos []byte) int {
	scale := 8
	for scale > 2*k {
		scale /= 2
	}
	if k < 2 {
		return 0
	}
	if d.progressive && scale != 8 || !d.progressive && int(sos[0]) != len(d.comps) {
		return 0
	}
	return scale
}

// jpegStreamScale returns the scale streamJPEG would decode the JPEG
// whose first bytes are head at for an averaging factor of k, or 0
// where it would fall back to image/jpeg or head does not reach the
// first scan.
func jpegStreamScale(head []byte, k int) (scale int, progressive bool) {
	d := &jpegStream{r: bufio.NewReader(bytes.NewReader(head))}
	if soi, _ := d.r.Peek(2); len(soi) < 2 || soi[0] != 0xff || soi[1] != 0xd8 {
		return 0, false
	}
	d.r.Discard(2)
	sos, err := d.readHeader()
	if err != nil || sos == nil {
		return 0, false
	}
	return d.scale(k, sos), d.progressive
}

func (d *jpegStream) fallback() error {
	if !d.keep {
		return errJPEGStream
	}
	return &jpegFallback{head: d.head.Bytes()}
}

func (d *jpegStream) readDQT(seg []byte) error {
	for len(seg) > 0 {
		pq, tq := seg[0]>>4, seg[0]&15
		size := 64 * (1 + int(pq))
		if pq > 1 || tq > 3 || len(seg) < 1+size {
			return fmt.Errorf("%w: bad DQT", errJPEGStream)
		}
		for i := range 64 {
			if pq == 0 {
				d.quant[tq][i] = int32(seg[1+i])
			} else {
				d.quant[tq][i] = int32(seg[1+2*i])<<8 | int32(seg[2+2*i])
			}
		}
		seg = seg[1+size:]
	}
	return nil
}

func (d *jpegStream) readDHT(seg []byte) error {
	for len(seg) > 0 {
		if len(seg) < 17 {
			return fmt.Errorf("%w: bad DHT", errJPEGStream)
		}
		tc, th := seg[0]>>4, seg[0]&15
		total := 0
		for _, c := range seg[1:17] {
			total += int(c)
		}
		if tc > 1 || th > 3 || total > 256 || len(seg) < 17+total {
			return fmt.Errorf("%w: bad DHT", errJPEGStream)
		}
		t := &d.dcTab[th]
		if tc == 1 {
			t = &d.acTab[th]
		}
		if err := t.build(seg[1:17], bytes.Clone(seg[17:17+total])); err != nil {
			return err
		}
		seg = seg[17+total:]
	}
	return nil
}

func (d *jpegStream) readSOF(seg []byte, progressive bool) error {
	if len(seg) < 6 {
		return fmt.Errorf("%w: bad SOF", errJPEGStream)
	}
	d.progressive = progressive
	d.h, d.w = int(seg[1])<<8|int(seg[2]), int(seg[3])<<8|int(seg[4])
	nc := int(seg[5])
	if seg[0] != 8 || (nc != 1 && nc != 3) || d.w == 0 || d.h == 0 {
		return d.fallback() // 12-bit, CMYK, DNL: image/jpeg's (or its error)
	}
	if int64(d.w)*int64(d.h) > maxJPEGStreamPixels {
		return fmt.Errorf("%w: %d×%d is too large", errJPEGStream, d.w, d.h)
	}
	if len(seg) < 6+3*nc {
		return fmt.Errorf("%w: bad SOF", errJPEGStream)
	}
	d.comps = make([]jpegComp, nc)
	d.hmax, d.vmax = 1, 1
	for i := range d.comps {
		c := &d.comps[i]
		p := seg[6+3*i:]
		c.id, c.h, c.v, c.tq = int(p[0]), int(p[1]>>4), int(p[1]&15), int(p[2])
		if nc == 1 { // a lone component's MCU is one block, whatever it says
			c.h, c.v = 1, 1
		}
		if c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4 || c.tq > 3 {
			return fmt.Errorf("%w: bad SOF", errJPEGStream)
		}
		d.hmax, d.vmax = max(d.hmax, c.h), max(d.vmax, c.v)
	}
	for i := range d.comps {
		c := &d.comps[i]
		if d.hmax%c.h != 0 || d.vmax%c.v != 0 {
			return d.fallback()
		}
	}
	if nc == 3 && (d.adobeRGB || d.comps[0].id == 'R' && d.comps[1].id == 'G' && d.comps[2].id == 'B') {
		return d.fallback()
	}
	d.mcusX = (d.w + 8*d.hmax - 1) / (8 * d.hmax)
	d.mcusY = (d.h + 8*d.vmax - 1) / (8 * d.vmax)
	for i := range d.comps {
		c := &d.comps[i]
		c.bw, c.bh = d.mcusX*c.h, d.mcusY*c.v
		c.cw = ((d.w*c.h+d.hmax-1)/d.hmax + 7) / 8
		c.ch = ((d.h*c.v+d.vmax-1)/d.vmax + 7) / 8
	}
	return nil
}

// scan decodes one scan whose header is seg. done: the render has all
// the rows it needs (a baseline scan ends the image).
func (d *jpegStream) scan(seg []byte, avg *blockAverager, crop image.Rectangle) (done bool, err error) {
	if len(seg) < 1 {
		return false, errJPEGStream
	}
	ns := int(seg[0])
	if ns < 1 || ns > len(d.comps) || len(seg) < 1+2*ns+3 {
		return false, fmt.Errorf("%w: bad SOS", errJPEGStream)
	}
	scomps := make([]*jpegComp, ns)
	for i := range scomps {
		id, tabs := int(seg[1+2*i]), seg[2+2*i]
		for j := range d.comps {
			if d.comps[j].id == id {
				scomps[i] = &d.comps[j]
			}
		}
		c := scomps[i]
		if c == nil || tabs>>4 > 3 || tabs&15 > 3 {
			return false, fmt.Errorf("%w: bad SOS", errJPEGStream)
		}
		c.td, c.ta, c.pred = int(tabs>>4), int(tabs&15), 0
	}
	ss, se, ah, al := seg[1+2*ns], seg[2+2*ns], seg[3+2*ns]>>4, seg[3+2*ns]&15
	d.bits = jpegBits{r: d.r}
	switch {
	case !d.progressive:
		if ns != len(d.comps) || ss != 0 || se != 63 {
			return false, fmt.Errorf("%w: bad SOS", errJPEGStream)
		}
		return true, d.baseline(scomps, avg, crop)
	case ss != 0: // an AC scan: not needed at 1/8
		return false, nil
	case se != 0:
		return false, fmt.Errorf("%w: bad SOS", errJPEGStream)
	}
	return false, d.dcScan(scomps, ah, al)
}

// blocks calls fn for each block of the scan in order, restarting where
// the interval says. A scan of one component covers that component's
// blocks only; an interleaved one whole MCUs.
func (d *jpegStream) blocks(scomps []*jpegComp, rowDone func(my int) bool, fn func(c *jpegComp, bx, by int) error) error {
	mx, my := d.mcusX, d.mcusY
	if len(scomps) == 1 {
		mx, my = scomps[0].cw, scomps[0].ch
	}
	count := 0
	for y := range my {
		for x := range mx {
			if d.interval > 0 && count > 0 && count%d.interval == 0 {
				if err := d.bits.restart(); err != nil {
					return err
				}
				for _, c := range scomps {
					c.pred = 0
				}
			}
			count++
			if len(scomps) == 1 {
				if err := fn(scomps[0], x, y); err != nil {
					return err
				}
				continue
			}
			for _, c := range scomps {
				for by := range c.v {
					for bx := range c.h {
						if err := fn(c, x*c.h+bx, y*c.v+by); err != nil {
							return err
						}
					}
				}
			}
		}
		if err := d.bits.short(); err != nil {
			return err
		}
		if rowDone != nil && rowDone(y) {
			return nil
		}
	}
	return nil
}

func (d *jpegStream) dcScan(scomps []*jpegComp, ah, al byte) error {
	if al > 13 {
		return fmt.Errorf("%w: bad SOS", errJPEGStream)
	}
	for _, c := range scomps {
		if ah == 0 && !d.dcTab[c.td].set {
			return fmt.Errorf("%w: missing Huffman table", errJPEGStream)
		}
	}
	return d.blocks(scomps, nil, func(c *jpegComp, bx, by int) error {
		i := by*c.bw + bx
		if ah != 0 {
			if d.bits.bits(1) != 0 {
				c.dc[i] |= 1 << al
			}
			return nil
		}
		if err := d.nextDC(c); err != nil {
			return err
		}
		c.dc[i] = c.pred << al
		return nil
	})
}

// nextDC decodes a block's DC difference into c's predictor.
func (d *jpegStream) nextDC(c *jpegComp) error {
	t, err := d.bits.decode(&d.dcTab[c.td])
	if err != nil {
		return err
	}
	if t > 16 {
		return fmt.Errorf("%w: bad DC code", errJPEGStream)
	}
	c.pred += d.bits.receive(uint(t))
	return nil
}

// baseline decodes the one interleaved scan of a baseline file an MCU
// row at a time, each block straight to its scaled pixels, and feeds
// the rows the crop needs to avg; it stops at the last one.
func (d *jpegStream) baseline(scomps []*jpegComp, avg *blockAverager, crop image.Rectangle) error {
	for _, c := range scomps {
		if !d.dcTab[c.td].set || !d.acTab[c.ta].set {
			return fmt.Errorf("%w: missing Huffman table", errJPEGStream)
		}
	}
	var coef [64]int32
	last := crop.Min.Y + avg.dst.Rect.Dy()*avg.k // rows below are not needed
	return d.blocks(scomps, func(my int) bool {
		return d.emitRow(my, avg, crop, last)
	}, func(c *jpegComp, bx, by int) error {
		clear(coef[:])
		q := &d.quant[c.tq]
		if err := d.nextDC(c); err != nil {
			return err
		}
		coef[0] = c.pred * q[0]
		for z := 1; z < 64; z++ {
			rs, err := d.bits.decode(&d.acTab[c.ta])
			if err != nil {
				return err
			}
			r, s := int(rs>>4), uint(rs&15)
			if s == 0 {
				if r != 15 {
					break // end of block
				}
				z += 15
				continue
			}
			if z += r; z > 63 {
				return fmt.Errorf("%w: bad AC run", errJPEGStream)
			}
			coef[jpegUnzig[z]] = d.bits.receive(s) * q[z]
		}
		stride := c.bw * c.nx
		c.idct.block(c.rows[(by%c.v)*c.ny*stride+bx*c.nx:], stride, &coef)
		return nil
	})
}

// emitDC turns a progressive file's DC coefficients into pixels, an MCU
// row at a time, through the same path as baseline rows.
func (d *jpegStream) emitDC(avg *blockAverager, crop image.Rectangle) {
	last := crop.Min.Y + avg.dst.Rect.Dy()*avg.k
	for my := range d.mcusY {
		for i := range d.comps {
			c := &d.comps[i]
			q0 := d.quant[c.tq][0]
			for by := range c.v {
				row := c.dc[(my*c.v+by)*c.bw:][:c.bw]
				out := c.rows[by*c.bw : (by+1)*c.bw]
				for x, v := range row {
					out[x] = clampSample(float64(v*q0)/8 + 128)
				}
			}
		}
		if d.emitRow(my, avg, crop, last) {
			return
		}
	}
}

// emitRow converts the scaled pixels of MCU row my to RGBA and feeds
// the rows inside the crop to avg. It reports whether the crop's last
// row is done.
func (d *jpegStream) emitRow(my int, avg *blockAverager, crop image.Rectangle, last int) bool {
	rowsPer := d.vmax * d.n
	for j := range rowsPer {
		y := my*rowsPer + j
		if y < crop.Min.Y {
			continue
		}
		if y >= last {
			return true
		}
		// A component's pixel under output pixel x is x·num/den.
		var planes [3][]byte
		var num [3]int
		den := d.hmax * d.n
		for i := range d.comps {
			c := &d.comps[i]
			stride := c.bw * c.nx
			r := j * c.v * c.ny / rowsPer
			planes[i] = c.rows[r*stride : (r+1)*stride]
			num[i] = c.h * c.nx
		}
		pix := avg.row.Pix
		for i := range avg.row.Rect.Dx() {
			x := crop.Min.X + i
			p := pix[4*i : 4*i+4]
			yy := planes[0][x*num[0]/den]
			if len(d.comps) == 1 {
				p[0], p[1], p[2], p[3] = yy, yy, yy, 0xff
				continue
			}
			p[0], p[1], p[2] = color.YCbCrToRGB(yy, planes[1][x*num[1]/den], planes[2][x*num[2]/den])
			p[3] = 0xff
		}
		avg.addRow()
	}
	return false
}

// scaledIDCT is the inverse DCT of a block's lowest nx×ny frequencies
// to nx×ny pixels: with fewer than 8 each pixel is the block's cosine
// series taken at the centre of the pixels it stands for, so 1×1 is the
// block's mean. Plain floating point: its cost is a small part of the
// Huffman decoding's.
type scaledIDCT struct {
	nx, ny     int
	cosX, cosY []float64 // cos[x*n+u] = C(u)/2 · cos((2x+1)uπ/2n)
	tmp        [64]float64
}

func newScaledIDCT(nx, ny int) *scaledIDCT {
	return &scaledIDCT{nx: nx, ny: ny, cosX: idctCos(nx), cosY: idctCos(ny)}
}

func idctCos(n int) []float64 {
	t := make([]float64, n*n)
	for x := range n {
		for u := range n {
			c := 0.5
			if u == 0 {
				c = 0.5 / math.Sqrt2
			}
			t[x*n+u] = c * math.Cos(float64((2*x+1)*u)*math.Pi/float64(2*n))
		}
	}
	return t
}

// block writes the pixels of coef (natural order, dequantized) to dst,
// rows stride apart.
func (t *scaledIDCT) block(dst []byte, stride int, coef *[64]int32) {
	nx, ny := t.nx, t.ny
	for v := range ny { // across each row of coefficients
		for x := range nx {
			s := 0.0
			for u := range nx {
				s += t.cosX[x*nx+u] * float64(coef[v*8+u])
			}
			t.tmp[v*nx+x] = s
		}
	}
	for y := range ny {
		for x := range nx {
			s := 0.0
			for v := range ny {
				s += t.cosY[y*ny+v] * t.tmp[v*nx+x]
			}
			dst[y*stride+x] = clampSample(s + 128)
		}
	}
}

func clampSample(v float64) byte {
	return uint8(min(255, max(0, math.Round(v))))
}
