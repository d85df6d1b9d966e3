//go:build !linux

package vfs

import "os"

// osFile returns f as it is: only Linux files offer WriteMapper, the one
// system whose page cache behaviour under a shared mapping (allocation by
// writing zeros, fsync writing the mapping's pages back) was checked.
func osFile(f *os.File) File { return f }
