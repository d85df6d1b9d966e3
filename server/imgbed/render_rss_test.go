package imgbed

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBytes is this process's resident set.
func rssBytes(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// uniqueVariants returns n files of the same picture with different
// bytes (so each upload is stored and rendered anew): a comment chunk,
// segment or box carrying the index, where each format allows one.
func uniqueVariants(f format, data []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		tag := []byte(fmt.Sprintf("client %d", i))
		switch f {
		case formatPNG:
			const ihdrEnd = 8 + 8 + 13 + 4
			v := pngChunk(append([]byte(nil), data[:ihdrEnd]...), "tEXt", append([]byte("Comment\x00"), tag...))
			out[i] = append(v, data[ihdrEnd:]...)
		case formatJPEG:
			seg := binary.BigEndian.AppendUint16([]byte{0xff, 0xd8, 0xff, 0xfe}, uint16(len(tag)+2))
			out[i] = append(append(seg, tag...), data[2:]...)
		default: // HEIF: a free box at the end
			box := binary.BigEndian.AppendUint32(nil, uint32(8+len(tag)))
			out[i] = append(append(append(append([]byte(nil), data...), box...), "free"...), tag...)
		}
	}
	return out
}

// TestRenderRSS measures the target: 8 clients at once each
// upload a 50-megapixel image and fetch two renders of it (a ladder
// thumbnail and a 1024×1024 cover WebP); the process's resident set may
// grow at most 300 MB above idle: 50-megapixel PNGs (streamed), JPEGs
// (decoded whole, admitted by the render budget) and, where heif-enc is
// installed, HEICs (refused by the budget: the system's libheif would
// need ~350 MB, the WebAssembly decoder ~1.4 GB; render_cost.go). A minute or more of CPU, so not in -short; -v logs the
// figures. TestStreamPNGHostile bounds the PNG part's heap in -short.
func TestRenderRSS(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is no measure of RSS")
	}
	if testing.Short() {
		t.Skip("minutes of CPU; run without -short")
	}
	const clients, side = 8, 7070 // 50 megapixels, under MaxPixels (heif-enc keeps even sides)
	type kind struct {
		name string
		f    format
		data []byte
		// renderOK is false where the render is refused (422).
		renderOK bool
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, side, side)), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	kinds := []kind{{"png", formatPNG, craftPNG(side, side, side), true}, {"jpeg", formatJPEG, jpg.Bytes(), true}}
	if enc, err := exec.LookPath("heif-enc"); err == nil {
		dir := t.TempDir()
		src, dst := filepath.Join(dir, "big.png"), filepath.Join(dir, "big.heic")
		if err := os.WriteFile(src, kinds[0].data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(enc, "-q", "50", "-o", dst, src).CombinedOutput(); err != nil {
			t.Fatalf("heif-enc: %v %s", err, out)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, kind{"heic", formatHEIC, b, false})
	}
	th := newTestHost(t, Config{MaxUploadsPerClient: clients})
	runtime.GC()
	debug.FreeOSMemory()
	idle := rssBytes(t)
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, rssBytes(t))
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	for _, k := range kinds {
		var wg sync.WaitGroup
		for i, data := range uniqueVariants(k.f, k.data, clients) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, r := th.uploadRaw(t, data, "application/octet-stream", "X-Forwarded-For", fmt.Sprintf("10.0.0.%d", i))
				if status != 201 {
					t.Errorf("%s upload %d: %d %s", k.name, i, status, r.Message)
					return
				}
				for _, q := range []string{".png?w=256", ".webp?w=1024&h=1024&fit=cover"} {
					resp, body := th.get(t, th.srv.URL+"/t/"+r.Data.Key+q)
					want := map[bool]int{true: 200, false: 422}[k.renderOK]
					if resp.StatusCode != want {
						t.Errorf("%s %s: %d %.200s, want %d", k.name, q, resp.StatusCode, body, want)
					}
				}
			}()
		}
		wg.Wait()
	}
	close(stop)
	<-sampled
	above := peak - idle
	if testing.Verbose() {
		t.Logf("idle %d MiB, peak %d MiB, %d MiB above idle, %d clients × %v in %v", idle>>20, peak>>20, above>>20, clients, len(kinds), time.Since(start).Round(time.Second))
	}
	if above > 300_000_000 {
		t.Fatalf("RSS peaked %d MB above idle (%d MB), over the 300 MB target", above/1_000_000, idle/1_000_000)
	}
}
