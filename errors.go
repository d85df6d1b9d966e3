package lsmgo

import (
	"errors"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

var (
	// ErrNotFound is returned by Get for a key that is absent, deleted or
	// expired.
	ErrNotFound = errors.New("lsmgo: not found")
	// ErrClosed is returned by every operation on a closed DB.
	ErrClosed = errors.New("lsmgo: closed")
	// ErrReadOnly is matched by the error every write returns after a
	// background I/O error; the error also wraps the original cause.
	ErrReadOnly = errors.New("lsmgo: read-only after background error")
	// ErrValueTooLarge is matched by the error a write returns when the DB
	// could not store it: a key and value over MaxEntrySize together, or a
	// batch too large for a memtable. Nothing of the batch is written.
	// Open returns it, too, for a WAL holding such a write (which versions
	// that did not check the limits could accept), without changing
	// anything.
	ErrValueTooLarge = errors.New("lsmgo: value too large")
	// ErrNoSpace is matched by the error a write returns when the disk
	// is full (ENOSPC or EDQUOT from the WAL) or its free space is below
	// Options.DiskReserve. The write was not applied. Unlike ErrReadOnly
	// it heals by itself: writes succeed again once space is freed, with
	// no restart and no call to Resume (doc/operations.md).
	ErrNoSpace = errors.New("lsmgo: no space left for writes")
	// ErrCorruption is matched, with errors.Is, by every error that reports
	// damaged on-disk data; errors.As with *CorruptionError gives the file
	// and offset.
	ErrCorruption = base.ErrCorruption
)

// CorruptionError describes damaged data: the file, the offset (-1 when
// unknown) and what was wrong.
type CorruptionError = base.CorruptionError

// backgroundError is the sticky error that makes a DB read-only.
type backgroundError struct{ cause error }

func (e *backgroundError) Error() string { return "lsmgo: read-only: " + e.cause.Error() }

func (e *backgroundError) Unwrap() []error { return []error{ErrReadOnly, e.cause} }

// noSpaceError is a write refused for lack of space: it matches ErrNoSpace
// and wraps the cause (an ENOSPC from the filesystem, or the reserve).
type noSpaceError struct{ cause error }

func (e *noSpaceError) Error() string   { return "lsmgo: no space: " + e.cause.Error() }
func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.cause} }
