package imgbed

import (
	"bufio"
	"bytes"
	"image"
	"image/jpeg"
	"testing"
)

func TestDbgJPEG(t *testing.T) {
	photo := photoLike(1200, 900, 1)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	data := encodeJPEG(t, gray)
	full, _ := jpeg.Decode(bytes.NewReader(data))
	for _, k := range []int{2, 4, 8} {
		img, err := streamJPEG(bufio.NewReader(bytes.NewReader(data)), func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), k })
		if err != nil {
			t.Fatal(err)
		}
		s := 8
		for s > 2*k {
			s /= 2
		}
		w := boxShrink(full, s)
		g := img.(*image.RGBA)
		t.Log(k, s, g.Rect, w.Rect)
		r := g.Rect.Intersect(w.Rect)
		m := areaScale(g.SubImage(r), r.Dx(), r.Dy())
		n := areaScale(w.SubImage(r), r.Dx(), r.Dy())
		mean, most := pixelDiff(t, m, n)
		t.Log(mean, most)
	}
}
