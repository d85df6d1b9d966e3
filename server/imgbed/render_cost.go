package imgbed

import (
	"bytes"
	"encoding/binary"
)

// Peak memory of a render, estimated before it starts from the
// original's header, so that renderBudget can admit it. The figures per
// stored pixel are what this build's decoders hold at their peak
// (doc/imgbed.md has the measurements): a JPEG averaged by 2 or more is
// decoded at a reduced DCT scale a row of blocks at a time
// (jpeg_stream.go; a progressive one at 1/8 from its DC coefficients,
// 4 bytes a block per component); otherwise Go's JPEG decoder keeps
// YCbCr planes (1.5-3 bytes a pixel, 4 for CMYK), and for a progressive
// JPEG every DCT coefficient too (4 bytes each, per component); a PNG is
// streamed through the shrink a row at a time (png_stream.go) unless it
// is interlaced, when it is decoded whole (8 bytes a pixel at 16 bits);
// GIF's first frame is a palette index a pixel; a still WebP is YCbCr
// with alpha. The WebAssembly decoders (AVIF, animated WebP) copy the
// file in and grow their linear memory by reallocation. A HEIC is
// priced by the decoder that will run for it (heicCost): libde265 or
// libheif when the system's are loaded, else libheif and libde265 in
// WebAssembly, or libvips in the vips build; their figures are below. Then come the
// shrunk intermediate (4 bytes a pixel), and per output pixel the scaled
// image, its turned copy and the encoder's buffers (far more for AVIF,
// also WebAssembly).
const (
	costJPEG            = 4
	costJPEGProgressive = 16
	costJPEGDC          = 12 // per block of 64 pixels: a DC coefficient of each of 3 components
	costJPEGRows        = 64 // per stored column: a row of blocks at up to 1/2 scale, its RGBA row
	costPNGWhole        = 4
	costPNG16Whole      = 8
	costPNGRows         = 64 // per stored column: rows in flight, inflate window
	costGIF             = 2
	costWebP            = 4
	costWasm            = 20
	// HEIC decodes, peak RSS above the process's before, per stored
	// pixel, the file's copies included (TestHEICDecodeCost logs them;
	// heif-enc -q 50 files of a gradient with grain, SAO on, 3 decodes
	// each, 2-core VM, shared). libde265 called directly on a file of
	// one picture (heic_de265.go), 8 bits: 3.3-3.4 at 12.2, 25.2 and
	// 48.8 megapixels (its picture 1.5, per-block data about 1, SAO's
	// copy of one plane at a time 1), priced 4, so that a 48-megapixel
	// phone photo's thumbnail (about 200 MiB with a 6 MB file) fits the
	// default budget; 10 bits: 5.8-5.9 at 12.2 and 25.2 (samples of two
	// bytes), priced 8. The system's libheif 1.15 (heic_libheif.go;
	// grids, crops), 8 bits: 4.7 at 12.2 megapixels, 5.2-6.3 at 48.8
	// (measured before glibc's mmap threshold was fixed): its libde265
	// filters into a second whole picture, then libheif copies the
	// picture; 10 bits: 15.0-16.5 at 12.2 (16-bit samples, then their
	// 8-bit conversion), priced 20, as is a HEIC whose head shows no
	// meta box. Go's heap holds 0.4 (the shrunk image). The
	// WebAssembly decoder 21-28 at 12.2 megapixels (3 decodes; its
	// linear memory, a Go slice, peaked at 19.5-23.6), which refuses a
	// 12-megapixel HEIC under the default budget rather than let it
	// take 340 MB. libvips 8.14 (vips build; vipsthumbnail to 256
	// pixels) 7.2 at 48.8 megapixels, 2 runs.
	costHEICDe265       = 4
	costHEICDe265Deep   = 8
	costHEICLibheif     = 7
	costHEICLibheifDeep = 20
	costHEICWasm        = 28
	costHEICVips        = 8
	costOutput          = 24
	costOutputAVIF      = 64
)

// renderCost estimates the peak bytes of rendering an original of type
// mime, stored as sw×sh pixels in size bytes, whose first bytes are
// head, as plan p says, into format f.
func renderCost(mime string, head []byte, sw, sh int, size int64, p renderPlan, f format) int64 {
	px := int64(sw) * int64(sh)
	streamed := false
	var in int64
	switch mime {
	case formatJPEG.mime():
		scale, progressive := 0, false
		if streamsJPEG {
			scale, progressive = jpegStreamScale(head, p.k)
		}
		switch {
		case scale != 0 && progressive:
			in, streamed = px*costJPEGDC/64+int64(sw)*costJPEGRows, true
		case scale != 0:
			in, streamed = int64(sw)*costJPEGRows+64<<10, true
		case progressiveJPEG(head):
			in = px * costJPEGProgressive
		default:
			in = px * costJPEG
		}
	case formatPNG.mime():
		switch {
		case !pngInterlaced(head):
			in, streamed = int64(sw)*costPNGRows+64<<10, true
		case len(head) > 24 && head[24] == 16:
			in = px * costPNG16Whole
		default:
			in = px * costPNGWhole
		}
	case formatGIF.mime():
		in = px * costGIF
	case formatWebP.mime():
		in = px*costWebP + size
		if animatedWebP(head) {
			in = px*costWasm + 2*size
		}
	case formatHEIC.mime():
		in = heicCost(head, px, size)
	default: // AVIF: WebAssembly
		in = px*costWasm + 2*size
	}
	var shrunk int64 // a decoded image is cropped in place, not copied
	if streamed || p.k >= 2 {
		shrunk = int64(p.crop.Dx()/p.k) * int64(p.crop.Dy()/p.k) * 4
	}
	out := int64(costOutput)
	if f == formatAVIF {
		out = costOutputAVIF
	}
	return in + shrunk + int64(p.w)*int64(p.h)*out
}

// progressiveJPEG reports whether the frame header in head is a
// progressive one (SOF2, or SOF6/10/14); an unreadable head counts as
// progressive, the costlier case.
func progressiveJPEG(head []byte) bool {
	for i := 2; i+4 <= len(head) && head[i] == 0xff; {
		m := head[i+1]
		switch m {
		case 0xc2, 0xc6, 0xca, 0xce:
			return true
		case 0xc0, 0xc1, 0xc3, 0xc5, 0xc7, 0xc9, 0xcb, 0xcd, 0xcf:
			return false
		case 0xda, 0xd9:
			return true
		}
		i += 2 + int(binary.BigEndian.Uint16(head[i+2:]))
	}
	return true
}

// pngInterlaced reports whether a PNG's IHDR says Adam7.
func pngInterlaced(head []byte) bool {
	return len(head) < 29 || !bytes.Equal(head[12:16], []byte("IHDR")) || head[28] != 0
}

// animatedWebP reports whether data is an extended WebP with the
// animation flag.
func animatedWebP(data []byte) bool {
	return len(data) >= 21 && string(data[12:16]) == "VP8X" && data[20]&0x02 != 0
}
