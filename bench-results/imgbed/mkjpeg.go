//go:build ignore

// Mkjpeg writes the photo-like JPEG the image host benchmark uploads: a
// 640×480 gradient with seeded noise at quality 90, about 100 KB, the
// same bytes on every machine with the same Go release.
//
//	go run mkjpeg.go OUT.jpg
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
)

func main() {
	rng := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for y := range 480 {
		for x := range 640 {
			n := func(base int) uint8 { return uint8(min(max(base+rng.IntN(noise)-noise/2, 0), 255)) }
			img.Set(x, y, color.RGBA{n(x * 255 / 640), n(y * 255 / 480), n(128), 255})
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
