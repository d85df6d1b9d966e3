//go:build ignore

// Mkjpeg writes the photo-like JPEG the image host benchmark uploads: a
// 640×480 gradient with seeded noise at quality 90, about 100 KB, the
// same bytes on every machine with the same Go release. Another width and
// height give other sizes, about 0.32 bytes a pixel (544×408: 72 KB;
// 3600×3000: 3.5 MB).
//
//	go run mkjpeg.go OUT.jpg [WIDTH HEIGHT]
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	rng := rand.New(rand.NewPCG(1, 2))
	w, h := 640, 480
	if len(os.Args) == 4 {
		w, _ = strconv.Atoi(os.Args[2])
		h, _ = strconv.Atoi(os.Args[3])
	}
	if w <= 0 || h <= 0 {
		fmt.Fprintln(os.Stderr, "usage: mkjpeg OUT.jpg [WIDTH HEIGHT]")
		os.Exit(2)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			n := func(base int) uint8 { return uint8(min(max(base+rng.IntN(noise)-noise/2, 0), 255)) }
			img.Set(x, y, color.RGBA{n(x * 255 / w), n(y * 255 / h), n(128), 255})
		}
	}
	f, err := os.Create(os.Args[1])
	if err == nil {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 90})
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkjpeg:", err)
		os.Exit(1)
	}
}

// noise is the amplitude of the per-channel noise, chosen for a file of
// about 100 KB.
const noise = 36
