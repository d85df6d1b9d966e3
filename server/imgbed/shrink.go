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
