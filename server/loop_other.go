//go:build !linux

package server

import "errors"

// eventLoop needs epoll: elsewhere "event-loop yes" is refused at start.
type eventLoop struct{}

var errWouldBlock = errors.New("socket would block")

func newEventLoop(*Server) (*eventLoop, error) {
	return nil, errors.New("event-loop needs Linux")
}

func (*eventLoop) add(*conn) bool { return false }
func (*eventLoop) kick(*conn)     {}
func (c *conn) detach()           {}

type rawIO struct{ fd int }

func (*rawIO) readOnce([]byte) (int, error) { return 0, errWouldBlock }
func (*rawIO) writeAll([]byte) (int, error) { return 0, errWouldBlock }
