//go:build !vips && linux

package imgbed

import (
	"bytes"
	"image"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// vmHWM is this process's peak resident set since the last resetHWM.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// TestHEICDecodeCost checks render_cost.go's HEIC figures against the
// decoders this process runs: the peak resident set of each of three
// decodes (to a 256-pixel thumbnail's plan) stays under the estimate of
// the decoder's route, and decodes leave no memory behind
// (github.com/gen2brain/heic's own libheif path kept 2.4 bytes a pixel
// of every decode). libde265 decodes HEICs of one picture: 12, 25 and
// 48 megapixels of 8 bits, 12 and 25 of 10; libheif, which takes grids
// and crops, 12-megapixel ones of 8 and 10 bits. -v logs the
// figures per pixel that render_cost.go quotes; run with -tags
// nodynamic for the WebAssembly decoder's.
func TestHEICDecodeCost(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is no measure of RSS")
	}
	if testing.Short() {
		t.Skip("seconds of CPU a decode; run without -short")
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	for _, c := range []struct {
		w, h          int
		deep, libheif bool
	}{
		{4032, 3024, false, false},
		{5792, 4344, false, false},
		{8064, 6048, false, false},
		{4032, 3024, true, false},
		{5792, 4344, true, false},
		{4032, 3024, false, true},
		{4032, 3024, true, true},
	} {
		data := encodeHEIC(t, c.w, c.h, c.deep)
		px := int64(c.w * c.h)
		limit, route := heicCost(data, px, int64(len(data))), "wasm"
		img, r := heicRoute(data)
		decode := func() (image.Image, error) {
			return decodeShrunk(formatHEIC.mime(), bytes.NewReader(data), plan256)
		}
		switch {
		case r == heicDe265 && c.libheif:
			limit, route = px*costHEICLibheif+3*int64(len(data)), "libheif"
			if c.deep {
				limit = px*costHEICLibheifDeep + 3*int64(len(data))
			}
			decode = func() (image.Image, error) { return decodeHEICLibheif(data, plan256) }
		case r == heicDe265:
			route = "libde265"
		case r == heicLibheif:
			route = "libheif"
		}
		if de265Loaded() && (r != heicDe265 || img.deep != c.deep) {
			t.Fatalf("%d-megapixel HEIC, deep %v: routed to %s, deep %v", px/1e6, c.deep, route, img.deep)
		}
		var after []int64 // RSS after each decode, garbage freed
		for round := range 3 {
			runtime.GC()
			debug.FreeOSMemory()
			os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
			before := rssBytes(t)
			out, err := decode()
			if err != nil || out.Bounds().Dx() != c.w/(c.w/256) {
				t.Fatalf("decode: %v", err)
			}
			peak := vmHWM(t) - before
			t.Logf("%s, %d×%d (%d bits, %d bytes), round %d: peak RSS %d MiB above the start, %.1f bytes a pixel (estimate %.1f)",
				route, c.w, c.h, map[bool]int{false: 8, true: 10}[c.deep], len(data), round, peak>>20, float64(peak)/float64(px), float64(limit)/float64(px))
			if peak > limit {
				t.Errorf("%s, %d×%d, round %d: the decode peaked %d MiB above its start, over its estimate of %d MiB", route, c.w, c.h, round, peak>>20, limit>>20)
			}
			runtime.GC()
			debug.FreeOSMemory()
			after = append(after, rssBytes(t))
		}
		// A decoder that kept its picture would add 1.5 bytes a pixel
		// or more each time.
		if grew := after[2] - after[0]; grew > px/4 {
			t.Errorf("%s, %d×%d: two more decodes left %d MiB more resident", route, c.w, c.h, grew>>20)
		}
	}
}

// plan256 is a 256-pixel-wide thumbnail's plan of the whole image.
func plan256(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), sw / 256 }
