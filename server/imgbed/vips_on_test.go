//go:build vips

package imgbed

// vipsBuild: renders are libvips' (thumb_vips.go).
const vipsBuild = true
