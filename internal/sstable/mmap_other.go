//go:build !unix

package sstable

import "github.com/lsmgo-dev/lsmgo/vfs"

// Where files cannot be mapped, tables are read with ReadAt.
func mapFile(vfs.File, int64) (data []byte, unmap func() error, ok bool) {
	return nil, nil, false
}
