//go:build !vips && !linux

package imgbed

import "image"

// libheifLoaded: the system's libheif is called only on Linux here
// (heic_libheif.go); elsewhere HEICs go to the WebAssembly decoder.
func libheifLoaded() bool { return false }

func decodeHEICLibheif([]byte, shrinkPlan) (image.Image, error) { return nil, errNoDecoder }
