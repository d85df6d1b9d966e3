//go:build unix

package vfs

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockFile takes a non-blocking flock on name. flock locks belong to the
// open file description, so a second Open in the same process conflicts
// too, which is what we want.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lsmgo: lock %s: %w by another process or DB instance (%w)", name, ErrLocked, err)
	}
	return f, nil
}
