//go:build !unix

package vfs

import (
	"fmt"
	"io"
	"runtime"
)

// lockFile refuses where flock is not available: a DB whose directory
// cannot be locked could be opened twice and corrupted.
func lockFile(name string) (io.Closer, error) {
	return nil, fmt.Errorf("lsmgo: lock %s: directory locking is not implemented on %s", name, runtime.GOOS)
}
