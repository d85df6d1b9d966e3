package imgbed

import (
	"bytes"
	"encoding/binary"
	"image"
	"strings"
	"testing"

	xwebp "golang.org/x/image/webp"
)

// makeAnimatedWebP builds an extended WebP of two frames of w×h (each a
// still WebP's image chunk in an ANMF frame), as animation tools write.
func makeAnimatedWebP(t *testing.T, frames [2][]byte, w, h int) []byte {
	le24 := func(b []byte, v int) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16)) }
	chunk := func(typ string, data []byte) []byte {
		c := binary.LittleEndian.AppendUint32([]byte(typ), uint32(len(data)))
		c = append(c, data...)
		if len(data)%2 == 1 {
			c = append(c, 0)
		}
		return c
	}
	vp8x := le24(le24([]byte{0x02, 0, 0, 0}, w-1), h-1) // animation flag
	body := append([]byte("WEBP"), chunk("VP8X", vp8x)...)
	body = append(body, chunk("ANIM", []byte{0, 0, 0, 0, 0, 0})...) // background, loop forever
	for _, f := range frames {
		anmf := le24(le24(le24(le24(le24(nil, 0), 0), w-1), h-1), 100) // at 0,0; 100 ms
		anmf = append(anmf, 0)
		body = append(body, chunk("ANMF", append(anmf, f[12:]...))...)
	}
	return append(binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

// TestAnimatedWebPThumbnail: an animated WebP is stored and gets a
// thumbnail of its first frame (the gallery's tile was broken: 422).
func TestAnimatedWebPThumbnail(t *testing.T) {
	th := newTestHost(t, Config{})
	red, blue := image.NewNRGBA(image.Rect(0, 0, 40, 30)), image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := 0; i < len(red.Pix); i += 4 {
		copy(red.Pix[i:], []byte{255, 0, 0, 255})
		copy(blue.Pix[i:], []byte{0, 0, 255, 255})
	}
	data := makeAnimatedWebP(t, [2][]byte{encodeWebP(t, red), encodeWebP(t, blue)}, 40, 30)
	if _, err := xwebp.Decode(bytes.NewReader(data)); err == nil {
		t.Fatal("x/image/webp decodes the animation: the test no longer needs libwebp")
	}
	status, r := th.uploadRaw(t, data, "image/webp")
	if status != 201 || r.Data.Width != 40 {
		t.Fatalf("upload: %d %+v", status, r.Data)
	}
	resp, body := th.get(t, strings.Replace(r.Data.Links.ThumbnailURL, ".webp", ".png", 1))
	if resp.StatusCode != 200 {
		t.Fatalf("thumbnail: %d %s", resp.StatusCode, body)
	}
	img, _, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, b, _ := img.At(20, 15).RGBA(); r>>8 < 200 || b>>8 > 60 {
		t.Errorf("thumbnail is not the first (red) frame: %d,%d", r>>8, b>>8)
	}
}
