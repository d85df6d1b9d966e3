//go:build !vips && linux

package imgbed

import (
	"fmt"
	"image"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gen2brain/heic"
)

// The system's libheif, called through purego (no cgo), decodes HEICs
// where it can be loaded: the same condition as github.com/gen2brain/heic's
// dynamic mode (a dynamically linked binary and a loadable libheif.so;
// Debian: libheif1 and libheif-dev for the link), which that package then
// uses itself. We call libheif ourselves instead of through heic.Decode
// because its dynamic decode never releases the decoded heif_image: RSS
// grew by about 29 MiB for each decode of a 12-megapixel HEIC (8 decodes
// in a row, 33 to 267 MiB), where this binding's stays flat. It also
// reads the planes where libheif left them, with libheif's strides, so
// the narrow images the WebAssembly path garbles (decodeHEIC) come out
// right, and only the shrunk image is copied into Go's heap.

// libheif's enumerations and the offset of convert_hdr_to_8bit in
// struct heif_decoding_options (libheif 1.15 heif.h: two bytes, then
// four pointers from offset 8).
const (
	heifColorspaceYCbCr     = 0
	heifChroma420           = 1
	heifChannelY            = 0
	heifOptionsConvertHDRAt = 40
	mArenaMax               = -8 // glibc malloc.h
	mMmapThreshold          = -3
)

var libheif struct {
	once sync.Once
	ok   bool

	contextAlloc   func() uintptr
	contextFree    func(uintptr)
	readFromMemory func(ctx uintptr, data *byte, size uintptr, opts uintptr) uintptr
	primaryHandle  func(ctx uintptr, handle *uintptr) uintptr
	handleRelease  func(uintptr)
	optionsAlloc   func() unsafe.Pointer
	optionsFree    func(unsafe.Pointer)
	decodeImage    func(handle uintptr, img *uintptr, colorspace, chroma int32, opts unsafe.Pointer) uintptr
	imageRelease   func(uintptr)
	imageWidth     func(img uintptr, channel int32) int32
	imageHeight    func(img uintptr, channel int32) int32
	imageBits      func(img uintptr, channel int32) int32
	planeReadonly  func(img uintptr, channel int32, stride *int32) *byte

	// glibc's, where libc is glibc: nil elsewhere.
	malloptFn  func(param, value int32) int32
	mallocTrim func(pad uintptr) int32
}

// libheifLoaded reports whether the system's libheif decodes HEICs here.
func libheifLoaded() bool {
	libheif.once.Do(func() {
		if heic.Dynamic() != nil {
			return // no dynamic binary, or no libheif.so
		}
		lib, err := purego.Dlopen("libheif.so", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return
		}
		l := &libheif
		for name, fn := range map[string]any{
			"heif_context_alloc":                         &l.contextAlloc,
			"heif_context_free":                          &l.contextFree,
			"heif_context_read_from_memory_without_copy": &l.readFromMemory,
			"heif_context_get_primary_image_handle":      &l.primaryHandle,
			"heif_image_handle_release":                  &l.handleRelease,
			"heif_decoding_options_alloc":                &l.optionsAlloc,
			"heif_decoding_options_free":                 &l.optionsFree,
			"heif_decode_image":                          &l.decodeImage,
			"heif_image_release":                         &l.imageRelease,
			"heif_image_get_width":                       &l.imageWidth,
			"heif_image_get_height":                      &l.imageHeight,
			"heif_image_get_bits_per_pixel_range":        &l.imageBits,
			"heif_image_get_plane_readonly":              &l.planeReadonly,
		} {
			if _, err := purego.Dlsym(lib, name); err != nil {
				return
			}
			purego.RegisterLibFunc(fn, lib, name)
		}
		l.ok = true
		if libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			if _, err := purego.Dlsym(libc, "malloc_trim"); err == nil {
				purego.RegisterLibFunc(&l.malloptFn, libc, "mallopt")
				purego.RegisterLibFunc(&l.mallocTrim, libc, "malloc_trim")
				// libheif's and libde265's allocations are the only
				// big C ones in this build; one arena keeps a decode
				// and libde265's worker threads from each leaving freed
				// memory in an arena of their own (glibc makes up to 8
				// per core). A fixed mmap threshold keeps every picture
				// and per-block array mapped and unmapped on free:
				// glibc's default raises the threshold to the size of
				// the largest block freed, so later pictures came from
				// arenas (which the earlier dlopens had multiplied) and
				// stayed there, RSS creeping 35 to 70 MiB over 30
				// 12-megapixel decodes on libde265's calling threads;
				// flat at 37 MiB with it.
				l.malloptFn(mArenaMax, 1)
				l.malloptFn(mMmapThreshold, 256<<10)
			}
		}
	})
	return libheif.ok
}

// heifCheck turns a returned struct heif_error, whose code and subcode
// arrive in the first register, into an error.
func heifCheck(ret uintptr, what string) error {
	if code := uint32(ret); code != 0 {
		return fmt.Errorf("libheif %s: error %d.%d", what, code, uint32(uint64(ret)>>32))
	}
	return nil
}

// decodeHEICLibheif decodes the primary image of the HEIC in data with
// libheif (which applies irot/imir itself) as 8-bit YCbCr 4:2:0 and
// averages the part plan picks straight out of libheif's planes, so Go's
// heap holds only the shrunk image.
func decodeHEICLibheif(data []byte, plan shrinkPlan) (image.Image, error) {
	l := &libheif
	if len(data) == 0 {
		return nil, invalid("empty HEIC")
	}
	if l.mallocTrim != nil {
		// Hands the decode's freed memory back to the system, as
		// thumbnailer.release does with Go's heap after a big render.
		defer l.mallocTrim(0)
	}
	defer runtime.KeepAlive(data) // libheif reads it in place until the context is freed
	ctx := l.contextAlloc()
	defer l.contextFree(ctx)
	if err := heifCheck(l.readFromMemory(ctx, &data[0], uintptr(len(data)), 0), "read"); err != nil {
		return nil, err
	}
	var handle uintptr
	if err := heifCheck(l.primaryHandle(ctx, &handle), "primary image"); err != nil {
		return nil, err
	}
	defer l.handleRelease(handle)
	opts := l.optionsAlloc()
	defer l.optionsFree(opts)
	*(*uint8)(unsafe.Add(opts, heifOptionsConvertHDRAt)) = 1
	var img uintptr
	if err := heifCheck(l.decodeImage(handle, &img, heifColorspaceYCbCr, heifChroma420, opts), "decode"); err != nil {
		return nil, err
	}
	defer l.imageRelease(img)
	w, h := int(l.imageWidth(img, heifChannelY)), int(l.imageHeight(img, heifChannelY))
	if w <= 0 || h <= 0 || l.imageBits(img, heifChannelY) != 8 {
		return nil, invalid("libheif gave a %d×%d image of %d bits", w, h, l.imageBits(img, heifChannelY))
	}
	var p [3]*byte
	var s [3]int32
	for c := range p {
		p[c] = l.planeReadonly(img, int32(c), &s[c]) // heif_channel_Y, Cb, Cr
	}
	return shrinkPlanes(p, s, w, h, 1, plan)
}
