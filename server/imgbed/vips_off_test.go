//go:build !vips

package imgbed

// vipsBuild: renders are the pure-Go decoders' (thumb_go.go).
const vipsBuild = false
