//go:build vips

package imgbed

// vipsBuild: renders are libvips' (thumb_vips.go).
const vipsBuild = true

// libheifLoaded: libvips decodes HEICs with the system's libheif.
func libheifLoaded() bool { return true }
