//go:build !vips && !linux

package imgbed

import "image"

// libheifLoaded, de265Loaded: the system's libheif and libde265 are
// called only on Linux here (heic_libheif.go, heic_de265.go); elsewhere
// HEICs go to the WebAssembly decoder.
func libheifLoaded() bool { return false }

func decodeHEICLibheif([]byte, shrinkPlan) (image.Image, error) { return nil, errNoDecoder }

func de265Loaded() bool { return false }

func decodeHEICDe265([]byte, heifImage, shrinkPlan) (image.Image, error) { return nil, errNoDecoder }
