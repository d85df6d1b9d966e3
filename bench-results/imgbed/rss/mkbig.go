//go:build ignore

// Mkbig writes the 50-megapixel PNG the image host's memory benchmark
// uploads (smooth gradients and rings, RGB, a few MB), and copies of a
// file that differ only in a comment (a tEXt chunk in a PNG, a free box
// at the end of a HEIF file), so that each client's upload is stored and
// rendered anew.
//
//	go run mkbig.go png OUT.png SIDE
//	go run mkbig.go png-grain OUT.png SIDE   (the same with ±10 levels of grain)
//	go run mkbig.go variants IN N OUTPREFIX   (writes OUTPREFIX-I.EXT)
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) == 4 && (os.Args[1] == "png" || os.Args[1] == "png-grain") {
		side, err := strconv.Atoi(os.Args[3])
		check(err)
		img := image.NewRGBA(image.Rect(0, 0, side, side))
		grain := func(x, y, i int) uint8 { return 0 }
		if os.Args[1] == "png-grain" {
			// ±10 levels of noise, as a photo's sensor grain: without it
			// a HEVC encoder codes the picture in a few hundred KB and
			// the decoder's in-loop filters have nothing to do.
			grain = func(x, y, i int) uint8 {
				g := uint32(x*3+i)*2654435761 ^ uint32(y)*2246822519
				return uint8(int((g^g>>15)%21) - 10)
			}
		}
		for y := range side {
			row := img.Pix[y*img.Stride:]
			for x := range side {
				d := (x-side/3)*(x-side/3) + (y-side/2)*(y-side/2)
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = clamp(x*255/side, grain(x, y, 0)), clamp(y*255/side, grain(x, y, 1)), clamp(d>>14&255, grain(x, y, 2)), 0xff
			}
		}
		f, err := os.Create(os.Args[2])
		check(err)
		check((&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(f, img))
		check(f.Close())
		return
	}
	if len(os.Args) == 5 && os.Args[1] == "variants" {
		data, err := os.ReadFile(os.Args[2])
		check(err)
		n, err := strconv.Atoi(os.Args[3])
		check(err)
		for i := range n {
			tag := []byte(fmt.Sprintf("client %d", i))
			var out []byte
			if bytes.HasPrefix(data, []byte("\x89PNG")) {
				const ihdrEnd = 8 + 8 + 13 + 4
				body := append([]byte("tEXt"), append([]byte("Comment\x00"), tag...)...)
				out = binary.BigEndian.AppendUint32(append([]byte(nil), data[:ihdrEnd]...), uint32(len(body)-4))
				out = append(out, body...)
				out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
				out = append(out, data[ihdrEnd:]...)
			} else {
				out = binary.BigEndian.AppendUint32(append([]byte(nil), data...), uint32(8+len(tag)))
				out = append(append(out, "free"...), tag...)
			}
			check(os.WriteFile(fmt.Sprintf("%s-%d%s", os.Args[4], i, filepath.Ext(os.Args[2])), out, 0o644))
		}
		return
	}
	fmt.Fprintln(os.Stderr, "usage: mkbig png OUT.png SIDE | mkbig variants IN N OUTPREFIX")
	os.Exit(2)
}

// clamp adds a signed grain g to v, within 0-255.
func clamp(v int, g uint8) uint8 { return uint8(min(255, max(0, v+int(int8(g))))) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
