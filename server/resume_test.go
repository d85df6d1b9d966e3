package server

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

// TestResumeCommand: LSMGO.RESUME answers OK on a healthy engine (Resume
// is then a no-op); the engine tests cover what it does after a failure.
func TestResumeCommand(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	r.send("LSMGO.RESUME\r\n")
	eq(t, "LSMGO.RESUME", r.reply(), "+OK\r\n")
}

// TestEngineErrorNoSpace: a full disk is reported as MISCONF that says it
// heals by itself, unlike a read-only engine, which names the command
// that resumes it.
func TestEngineErrorNoSpace(t *testing.T) {
	noSpace := fmt.Errorf("%w: %w", lsmgo.ErrNoSpace, syscall.ENOSPC)
	readOnly := fmt.Errorf("%w: %w", lsmgo.ErrReadOnly, errors.New("fsync failed"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{noSpace, "MISCONF Disk full; writes resume by themselves once space is freed: "},
		{readOnly, "MISCONF Errors writing to disk; writes are refused until an operator runs LSMGO.RESUME"},
	} {
		if got := engineError(tc.err); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("engineError(%v) = %q, want prefix %q", tc.err, got, tc.want)
		}
	}
}
