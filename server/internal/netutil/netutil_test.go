package netutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

func TestIsTimeout(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	a.SetReadDeadline(time.Now().Add(-time.Second))
	_, deadline := a.Read(make([]byte, 1))
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{os.ErrDeadlineExceeded, true},
		{deadline, true},
		{fmt.Errorf("read: %w", deadline), true},
		{net.ErrClosed, false},
	} {
		if got := IsTimeout(c.err); got != c.want {
			t.Errorf("IsTimeout(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
