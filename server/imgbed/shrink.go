package imgbed

import (
	"image"
	"image/draw"
)

// shrinkPlan chooses, from a source's size, the part of it to render
// and the factor k to average it down by first.
type shrinkPlan func(sw, sh int) (crop image.Rectangle, k int)

// boxShrink averages the k×k blocks of src, converting a row at a time
// so that memory stays at one row whatever the image size. Premultiplied
// RGBA averages transparent pixels correctly. The last Dx()%k columns and
// Dy()%k rows, fewer than k pixels, are left out.
func boxShrink(src image.Image, k int) *image.RGBA {
	b := src.Bounds()
	avg := newBlockAverager(b.Dx()/k, b.Dy()/k, k)
	for y := 0; y < avg.dst.Rect.Dy()*k; y++ {
		draw.Draw(avg.row, avg.row.Rect, src, image.Pt(b.Min.X, b.Min.Y+y), draw.Src)
		avg.addRow()
	}
	return avg.dst
}

// blockAverager averages the k×k blocks of rows w×k pixels wide, fed
// one at a time, into the rows of dst: its memory is one row and one
// sum per output pixel, whatever k is.
type blockAverager struct {
	dst  *image.RGBA
	row  *image.RGBA // filled by the caller before each addRow
	k    int
	sums []uint32
	rows int // rows summed into the current output row
	y    int
}

func newBlockAverager(w, h, k int) *blockAverager {
	return &blockAverager{
		dst:  image.NewRGBA(image.Rect(0, 0, w, h)),
		row:  image.NewRGBA(image.Rect(0, 0, w*k, 1)),
		k:    k,
		sums: make([]uint32, 4*w),
	}
}

func (a *blockAverager) addRow() {
	k, w := a.k, a.dst.Rect.Dx()
	for x := 0; x < w; x++ {
		block := a.row.Pix[4*k*x : 4*k*(x+1)]
		s := a.sums[4*x : 4*x+4]
		for i := 0; i < len(block); i += 4 {
			s[0] += uint32(block[i])
			s[1] += uint32(block[i+1])
			s[2] += uint32(block[i+2])
			s[3] += uint32(block[i+3])
		}
	}
	if a.rows++; a.rows < k {
		return
	}
	n := uint32(k * k)
	out := a.dst.Pix[a.y*a.dst.Stride : a.y*a.dst.Stride+4*w]
	for i, v := range a.sums {
		out[i] = uint8((v + n/2) / n)
	}
	clear(a.sums)
	a.rows = 0
	a.y++
}

// orientImage turns src as EXIF orientation o says, so that it shows
// upright: 2 mirrors, 3 turns half, 4 flips, 5-8 transpose then as 1-4.
func orientImage(src *image.NRGBA, o int) *image.NRGBA {
	if o <= 1 || o > 8 {
		return src
	}
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dw, dh := sw, sh
	if o >= 5 {
		dw, dh = sh, sw
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	for y := 0; y < sh; y++ {
		for x := 0; x < sw; x++ {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = sw-1-x, y
			case 3:
				dx, dy = sw-1-x, sh-1-y
			case 4:
				dx, dy = x, sh-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = sh-1-y, x
			case 7:
				dx, dy = sh-1-y, sw-1-x
			case 8:
				dx, dy = y, sw-1-x
			}
			copy(dst.Pix[dy*dst.Stride+dx*4:dy*dst.Stride+dx*4+4], src.Pix[y*src.Stride+x*4:])
		}
	}
	return dst
}

// areaScale resamples src to w×h (at most its size) by area averaging:
// each output pixel is the mean of the source area it covers, edge
// pixels weighted by their overlap, in premultiplied alpha. It reads the
// source a row at a time, so its memory is a row and two rows of sums,
// where x/image/draw's Catmull-Rom kept a float buffer of the output
// width times the source height (77 MB for one 1024-pixel render of a
// 50-megapixel image, measured by TestRenderRSS).
func areaScale(src image.Image, w, h int) *image.NRGBA {
	b := src.Bounds()
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	xs, ys := areaTaps(b.Dx(), w), areaTaps(b.Dy(), h)
	row := image.NewRGBA(image.Rect(0, 0, b.Dx(), 1))
	across := make([]float64, 4*w) // the last source row read, resampled across
	sums := make([]float64, 4*w)
	last := -1
	for oy := range h {
		clear(sums)
		for _, t := range ys[oy] {
			if t.i != last { // consecutive output rows share their edge row
				draw.Draw(row, row.Rect, src, image.Pt(b.Min.X, b.Min.Y+t.i), draw.Src)
				resampleRow(across, row.Pix, xs)
				last = t.i
			}
			for i, v := range across {
				sums[i] += v * t.w
			}
		}
		out := dst.Pix[oy*dst.Stride:]
		for x := range w {
			s, o := sums[4*x:4*x+4], out[4*x:4*x+4]
			if s[3] < 0.5 {
				o[0], o[1], o[2], o[3] = 0, 0, 0, 0
				continue
			}
			un := 255 / s[3]
			o[0], o[1], o[2], o[3] = toByte(s[0]*un), toByte(s[1]*un), toByte(s[2]*un), toByte(s[3])
		}
	}
	return dst
}

// areaTap is one source pixel's share of an output pixel.
type areaTap struct {
	i int
	w float64
}

// areaTaps splits m source pixels among n outputs: each output's taps
// are the pixels its span covers, weighted by overlap, summing to 1.
func areaTaps(m, n int) [][]areaTap {
	scale := float64(m) / float64(n)
	out := make([][]areaTap, n)
	for o := range out {
		lo, hi := float64(o)*scale, float64(o+1)*scale
		for i := int(lo); float64(i) < hi && i < m; i++ {
			if ov := min(hi, float64(i+1)) - max(lo, float64(i)); ov > 0 {
				out[o] = append(out[o], areaTap{i, ov / scale})
			}
		}
	}
	return out
}

// resampleRow fills dst (4 sums per output pixel) from the RGBA pixels
// of one source row.
func resampleRow(dst []float64, pix []byte, xs [][]areaTap) {
	for x, taps := range xs {
		var r, g, b, a float64
		for _, t := range taps {
			p := pix[4*t.i : 4*t.i+4]
			r += float64(p[0]) * t.w
			g += float64(p[1]) * t.w
			b += float64(p[2]) * t.w
			a += float64(p[3]) * t.w
		}
		dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = r, g, b, a
	}
}

func toByte(v float64) uint8 {
	return uint8(min(255, max(0, v+0.5)))
}
