// Package testutil holds what the server module's tests share: a log
// buffer that a server under test writes from many goroutines while the
// test reads it, the contents of a DB directory, a proxy that cuts and
// delays a replication link, and free ports for child processes that
// must be given one.
package testutil

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// SyncBuffer collects what a server under test logs from many goroutines,
// so that a test can read it, or wait for a line, at any moment.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor waits until the buffer holds want, failing t after 10 seconds.
func (s *SyncBuffer) WaitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
