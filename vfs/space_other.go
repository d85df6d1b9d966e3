//go:build !(linux || darwin || freebsd)

package vfs

import "errors"

// DiskUsage is not implemented on this platform; the engine then skips its
// free-space checks.
func (osFS) DiskUsage(string) (free, total uint64, err error) {
	return 0, 0, errors.ErrUnsupported
}
