package base

import (
	"errors"
	"syscall"
)

// IsNoSpace reports whether err says the filesystem ran out of space or the
// user's quota: the failures that heal by themselves once space is freed,
// so a write that met one may be retried. Every other I/O error is treated
// as one whose outcome is unknown.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
