package server

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/lsmgo-dev/lsmgo/vfs/errorfs"
)

// TestFsyncFailureWithholdsReply: under appendfsync always a write is
// visible before its fsync; when that fsync fails, its client gets no
// reply (the connection closes: the write's outcome is unknown), every
// later write is refused, LSMGO.RESUME refuses to resume (the write was
// visible), and reads go on.
func TestFsyncFailureWithholdsReply(t *testing.T) {
	toggle := errorfs.NewToggle(errorfs.EIO(), []errorfs.Op{errorfs.OpSync}, ".log")
	cfg := DefaultConfig()
	cfg.Addr, cfg.HTTPAddr, cfg.Dir, cfg.AppendFsync = "127.0.0.1:0", "", "/data", "always"
	cfg.LogOutput = io.Discard
	cfg.FS = errorfs.Wrap(vfs.NewMem(), toggle)
	cfg.EventLoop = eventLoopTests
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown of a read-only engine reports its error (TestReadOnlyEngine).
	defer s.Shutdown(context.Background())
	a := dialRaw(t, s)
	a.send("SET k before\r\n")
	eq(t, "SET before the failure", a.reply(), "+OK\r\n")
	toggle.Enable()
	a.send("INCR hot\r\n")
	a.expectClosed("")
	toggle.Disable()
	b := dialRaw(t, s)
	b.send("SET k after\r\n")
	if r := b.reply(); !strings.HasPrefix(r, "-MISCONF ") {
		t.Fatalf("SET after the failed fsync: %q, want MISCONF", r)
	}
	b.send("LSMGO.RESUME\r\n")
	if r := b.reply(); !strings.Contains(r, "reopen") {
		t.Fatalf("LSMGO.RESUME after a visible write's failed fsync: %q, want a refusal asking for a reopen", r)
	}
	b.send("GET k\r\n")
	eq(t, "GET after the failure", b.reply(), "$6\r\nbefore\r\n")
}
