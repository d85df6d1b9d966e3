//go:build !linux

package vfs

import "os"

// osFile returns f as it is: only Linux files offer WriteMapper, since
// fallocate(2), which keeps a full disk from faulting a store, is Linux's.
func osFile(f *os.File) File { return f }
