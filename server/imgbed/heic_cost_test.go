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

// TestHEICDecodeCost checks render_cost.go's HEIC figure against the
// decoder this process runs: the peak resident set of each of three
// decodes of a 12-megapixel HEIC (to a 256-pixel thumbnail's plan)
// stays under heicCost, and the decodes leave no memory behind
// (github.com/gen2brain/heic's own libheif path kept 2.4 bytes a pixel
// of every decode). -v logs the figures per pixel that render_cost.go
// quotes; run with -tags nodynamic for the WebAssembly decoder's.
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
	const w, h = 4032, 3024
	data := encodeHEIC(t, w, h, false)
	px := int64(w * h)
	limit := heicCost(px, int64(len(data)))
	plan := func(sw, sh int) (image.Rectangle, int) { return image.Rect(0, 0, sw, sh), sw / 256 }
	runtime.GC()
	debug.FreeOSMemory()
	start := rssBytes(t)
	for round := range 3 {
		runtime.GC()
		debug.FreeOSMemory()
		os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		before := rssBytes(t)
		img, err := decodeShrunk(formatHEIC.mime(), bytes.NewReader(data), plan)
		if err != nil || img.Bounds().Dx() != w/(w/256) {
			t.Fatalf("decode: %v", err)
		}
		peak := vmHWM(t) - before
		t.Logf("libheif %v, round %d: peak RSS %d MiB above the start, %.1f bytes a pixel (estimate %.1f)",
			libheifLoaded(), round, peak>>20, float64(peak)/float64(px), float64(limit)/float64(px))
		if peak > limit {
			t.Errorf("round %d: the decode peaked %d MiB above its start, over its estimate of %d MiB", round, peak>>20, limit>>20)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	if kept := rssBytes(t) - start; kept > 2*px {
		t.Errorf("three decodes left %d MiB resident", kept>>20)
	}
}
