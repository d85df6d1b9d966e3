//go:build vips

package imgbed

import (
	"fmt"
	"io"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"
)

// streamsJPEG: libvips, not jpeg_stream.go, decodes JPEGs here (libjpeg
// keeps a progressive file's coefficients), so renders are estimated as
// image/jpeg's.
const streamsJPEG = false

// heicCost is the peak memory of libvips decoding a HEIC of px pixels
// and size bytes through libheif (render_cost.go), the file included.
func heicCost(_ []byte, px, size int64) int64 { return px*costHEICVips + size }

var vipsStartup sync.Once

// renderThumb renders with libvips in-process (build tag vips; needs
// Debian's libvips-dev and cgo). vips_thumbnail decodes JPEGs at a reduced
// scale (shrink-on-load), which pure Go cannot, applies the EXIF
// orientation itself, and crops a cover box around the centre. No
// converter process is started.
func renderThumb(src io.Reader, _ string, spec renderSpec) (data []byte, w, h int, err error) {
	vipsStartup.Do(func() {
		vips.LoggingSettings(nil, vips.LogLevelWarning)
		vips.Startup(&vips.Config{ConcurrencyLevel: 1})
	})
	buf, err := io.ReadAll(src) // at most MaxBytes: the original was checked
	if err != nil {
		return nil, 0, 0, err
	}
	// A side maxRatio times the other leaves that one in charge;
	// SizeDown never enlarges.
	const maxRatio = 100
	bw, bh, crop := spec.w, spec.h, vips.InterestingNone
	switch {
	case spec.fit == fitCover:
		crop = vips.InterestingCentre
	case bh == 0:
		bh = bw * maxRatio
	case bw == 0:
		bw = bh * maxRatio
	}
	img, err := vips.NewThumbnailWithSizeFromBuffer(buf, bw, bh, crop, vips.SizeDown)
	if err != nil {
		return nil, 0, 0, invalid("cannot decode the original: %v", err)
	}
	defer img.Close()
	if spec.fit == fitCover {
		// An original smaller than the box is not enlarged, and
		// vips_thumbnail then leaves it whole: crop it to the box's
		// shape around the centre, as the pure-Go renderer does.
		w, h := img.Width(), img.Height()
		cw, ch := min(w, h*bw/bh), min(h, w*bh/bw)
		if cw > 0 && ch > 0 && (cw != w || ch != h) {
			if err := img.ExtractArea((w-cw)/2, (h-ch)/2, cw, ch); err != nil {
				return nil, 0, 0, invalid("cannot decode the original: %v", err)
			}
		}
	}
	switch spec.f {
	case formatJPEG:
		p := vips.NewJpegExportParams()
		p.Quality, p.StripMetadata = 85, true
		data, _, err = img.ExportJpeg(p)
	case formatPNG:
		p := vips.NewPngExportParams()
		p.StripMetadata, p.Compression = true, 1
		data, _, err = img.ExportPng(p)
	case formatWebP:
		p := vips.NewWebpExportParams()
		p.Quality, p.StripMetadata = 80, true
		data, _, err = img.ExportWebp(p)
	case formatAVIF:
		p := vips.NewAvifExportParams()
		p.Quality, p.StripMetadata = 60, true
		data, _, err = img.ExportAvif(p)
	default:
		return nil, 0, 0, fmt.Errorf("imgbed: no encoder for %v", spec.f.ext())
	}
	if err != nil {
		// libvips decodes lazily, while it exports: a damaged file
		// fails here, not at the load.
		return nil, 0, 0, invalid("cannot decode the original: %v", err)
	}
	return data, img.Width(), img.Height(), nil
}
