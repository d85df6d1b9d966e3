package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// eventLoop serves client connections from one goroutine over an epoll
// set ("event-loop yes"), as Redis serves them from its one thread: a
// readable connection gets one read(2), runs every complete command the
// read brought, and gets its replies in one write(2). A goroutine per
// connection costs a second, empty read before it parks, and a wake-up
// of a goroutine (often of another thread) per batch; the loop pays one
// epoll_wait for all the connections ready at once.
//
// The loop serves plain request/reply connections. A command that must
// wait (a blocking command with nothing to take, WAIT, a script, CLIENT
// PAUSE, PSYNC, SHUTDOWN, an fsync under appendfsync always), or a reply
// the socket cannot take at once, detaches its connection: the loop's
// goroutine goes on serving that connection as its own goroutine, from
// where it is, and a fresh goroutine takes over the loop. A connection
// that subscribes, monitors, tracks or speaks RESP3 (it then receives
// pushes) is handed to a goroutine of its own after that command. Either
// way the connection keeps its buffered input and output, so nothing is
// lost or reordered; once the wait is over it comes back (reattach).
//
// The loop owns a looped connection's descriptor: it alone reads,
// writes, and closes it, and others ask it to (closeSocket, interrupt);
// a connection it hands over gets a net.Conn again. Level-triggered
// events let a new loop goroutine find what the one before it left
// unserved.
type eventLoop struct {
	s    *Server
	epfd int
	wake int // an eventfd: kick's way into epoll_wait

	mu     sync.Mutex
	conns  map[uint64]*conn // by id, the epoll events' data
	kicked []*conn
	woken  bool // an eventfd write not yet read
	closed bool
}

// wakeID is the wake eventfd's epoll data; client ids start at 1.
const wakeID = 0

// idleSweep is how often the loop looks for clients past `timeout`;
// without one it still wakes every second, to notice a new setting.
const (
	idleSweep = 100 * time.Millisecond
	idleWake  = 1000 // ms
)

var errWouldBlock = errors.New("socket would block")

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEventID(&ev, wakeID)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	l := &eventLoop{s: s, epfd: epfd, wake: wake, conns: make(map[uint64]*conn)}
	go l.run()
	return l, nil
}

func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
}

func eventID(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// add makes the loop serve c, a new connection or one a goroutine gives
// back; false leaves c to a goroutine (not a socket of its own, or the
// loop has stopped). The caller must not touch c after true.
//
// The loop takes the socket out of Go's netpoller: it keeps a duplicate
// of the descriptor and closes c.nc, whose addresses stay readable.
// Registered in both, every request would also wake a thread parked in
// the netpoller, for nothing (a context switch per request at -P 1).
func (l *eventLoop) add(c *conn) bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if err := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || fd < 0 {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP}
	setEventID(&ev, c.id)
	// Registered under mu, so that a kick cannot give c a turn (which
	// may release it) before it is in the epoll set.
	l.mu.Lock()
	if l.closed || unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		l.mu.Unlock()
		unix.Close(fd)
		return false
	}
	c.raw = rawIO{fd: fd}
	c.modeMu.Lock()
	c.loop = l
	c.nc.Close()
	c.modeMu.Unlock()
	l.conns[c.id] = c
	l.mu.Unlock()
	// A close asked for while c was being added closed only c.nc: the
	// loop's duplicate would keep the client served (and an evicted
	// client's buffer counted) until its peer hung up.
	if c.closeReq.Load() {
		l.kick(c)
	}
	return true
}

// release takes c out of the loop; from here a goroutine serves it, on
// a net.Conn made from the loop's descriptor. A close asked for
// meanwhile (closeSocket) happens now instead.
func (l *eventLoop) release(c *conn) {
	fd := c.raw.fd
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
	var nc net.Conn
	if !c.closeReq.Load() {
		f := os.NewFile(uintptr(fd), "client")
		var err error
		if nc, err = net.FileConn(f); err != nil {
			l.s.log.Warn("event loop: cannot hand a client over; closing it", "client", c.id, "err", err)
		}
		f.Close()
	} else {
		unix.Close(fd)
	}
	c.raw.fd = -1
	c.modeMu.Lock()
	c.loop = nil
	if nc != nil {
		c.nc = nc // else the closed one: every read and write fails
		if c.closeReq.Load() {
			nc.Close() // asked for while the descriptor was handed over
		}
	}
	c.modeMu.Unlock()
}

// kick makes the loop serve c soon even without input (nil: just wake
// the loop), for a close request or shutdown.
func (l *eventLoop) kick(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c != nil {
		l.kicked = append(l.kicked, c)
	}
	if !l.woken && !l.closed {
		l.woken = true
		one := [8]byte{1}
		unix.Write(l.wake, one[:])
	}
}

// served returns the connection with id while the loop serves it.
func (l *eventLoop) served(id uint64) *conn {
	l.mu.Lock()
	c := l.conns[id]
	l.mu.Unlock()
	return c
}

// popKicked takes one kicked connection the loop still serves.
func (l *eventLoop) popKicked() *conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.kicked) > 0 {
		c := l.kicked[0]
		l.kicked[0] = nil
		l.kicked = l.kicked[1:]
		if l.conns[c.id] == c {
			return c
		}
	}
	l.kicked = nil
	return nil
}

// run is the loop. It returns when the server has stopped and no
// connection is left, or when a connection it served detached and took
// this goroutine (a new one runs the loop then).
func (l *eventLoop) run() {
	events := make([]unix.EpollEvent, 256)
	nextSweep := time.Now().Add(idleSweep)
	for {
		// Kicks first: a loop goroutine that took over from a detached
		// one finds the kicks the one before it woke for but did not
		// serve, and would otherwise sleep on them for idleWake.
		for c := l.popKicked(); c != nil; c = l.popKicked() {
			if !l.turn(c) {
				return
			}
		}
		wait := idleWake
		if l.s.config().Timeout > 0 {
			wait = int(max(time.Until(nextSweep), 0) / time.Millisecond)
		}
		n, err := unix.EpollWait(l.epfd, events, wait)
		if err != nil && err != unix.EINTR {
			l.s.log.Error("event loop: epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond)
		}
		for i := range n {
			id := eventID(&events[i])
			if id == wakeID {
				l.mu.Lock()
				l.woken = false
				var buf [8]byte
				unix.Read(l.wake, buf[:])
				l.mu.Unlock()
				continue
			}
			if c := l.served(id); c != nil && !l.turn(c) {
				return
			}
		}
		if timeout := l.s.config().Timeout; timeout > 0 && !time.Now().Before(nextSweep) {
			l.closeIdle(timeout)
			nextSweep = time.Now().Add(idleSweep)
		}
		if l.stopped() {
			return
		}
	}
}

// stopped closes the loop once the server is shutting down and serves
// no connection any more.
func (l *eventLoop) stopped() bool {
	select {
	case <-l.s.done:
	default:
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) > 0 {
		return false
	}
	l.closed = true
	unix.Close(l.epfd)
	unix.Close(l.wake)
	return true
}

// closeIdle closes the clients idle for timeout, as awaitInput's read
// deadline does for a goroutine's.
func (l *eventLoop) closeIdle(timeout time.Duration) {
	cut := time.Now().Add(-timeout).UnixNano()
	var idle []*conn
	l.mu.Lock()
	for _, c := range l.conns {
		if c.lastActive.Load() <= cut {
			idle = append(idle, c)
		}
	}
	l.mu.Unlock()
	for _, c := range idle {
		l.release(c)
		go c.finish(os.ErrDeadlineExceeded)
	}
}

// turn serves c after its socket became readable or it was kicked: one
// read, every complete command, the batch's end (conn.serve's loop
// body). false says c detached and this goroutine served it to its end.
func (l *eventLoop) turn(c *conn) bool {
	err := c.rd.Fill()
	if c.detached { // the read waited for memory (connBudget.Grow)
		c.detached = false
		if err != nil && err != errWouldBlock {
			// Refused or evicted: dropping the error reattached the
			// client with its buffer, still counted, to wait again.
			c.finish(err)
		} else {
			c.serveOn()
		}
		return false
	}
	if err == errWouldBlock {
		err = nil
	}
	for err == nil && !c.quit && !c.s.cutoff.Load() && !c.closeReq.Load() {
		args, ok, rerr := c.rd.ReadBuffered()
		if ok {
			c.execute(args)
			switch {
			case c.detached:
				c.detached = false
				c.serveOn()
				return false
			case c.sub != nil:
				// Pushes reach it through its goroutine (pubsub.go).
				l.release(c)
				go c.serveOn()
				return true
			}
			continue
		}
		if err = rerr; err != nil {
			break
		}
		err = c.endBatch()
		if c.detached {
			c.detached = false
			if err != nil {
				c.finish(err)
			} else {
				c.serveOn()
			}
			return false
		}
		if err == nil {
			err = c.idleChecks()
		}
		if err == nil {
			c.publishBuffers(0)
			return true
		}
	}
	l.release(c)
	go c.finish(err)
	return true
}

// detach hands c, served by the loop, to the goroutine running it now:
// called before anything that waits. A new goroutine runs the loop; turn
// serves c from here on.
func (c *conn) detach() {
	l := c.loop
	if l == nil {
		return
	}
	l.release(c)
	c.detached = true
	go l.run()
}

// rawIO is a looped connection's socket, read and written without
// waiting. syscall's Read and Write, as the net package's, tell the race
// detector that what a client wrote happened before the server read it.
type rawIO struct{ fd int }

// readOnce reads once without waiting: errWouldBlock when there is no
// input, io.EOF once the client closed its side.
func (r *rawIO) readOnce(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(r.fd, p)
		switch err {
		case nil:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errWouldBlock
		}
		return 0, os.NewSyscallError("read", err)
	}
}

// writeAll writes p without waiting: it stops with errWouldBlock when
// the socket's buffer is full.
func (r *rawIO) writeAll(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Write(r.fd, p[n:])
		switch err {
		case nil:
			n += m
		case syscall.EINTR:
		case syscall.EAGAIN:
			return n, errWouldBlock
		default:
			return n, os.NewSyscallError("write", err)
		}
	}
	return n, nil
}
