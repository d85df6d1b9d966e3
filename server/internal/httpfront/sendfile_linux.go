package httpfront

import (
	"io"
	"os"
	"syscall"
	"time"
)

// sendFile is SendFile's sendfile(2), where f and the connection have
// descriptors; handled is false, with nothing written, where not.
func (b *bodyWriter) sendFile(f io.ReaderAt, off, n int64) (sent int64, handled bool, err error) {
	src, ok := f.(syscall.Conn)
	dst, ok2 := b.w.c.nc.(syscall.Conn)
	if !ok || !ok2 {
		return 0, false, nil
	}
	sc, err := src.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	if err := b.startMore(dc); err != nil {
		return 0, true, err
	}
	var serr error
	b.w.c.nc.SetWriteDeadline(time.Now().Add(b.idle))
	err = sc.Control(func(sfd uintptr) {
		err := dc.Write(func(dfd uintptr) bool {
			for sent < n {
				o := off + sent
				m, err := syscall.Sendfile(int(dfd), int(sfd), &o, int(min(n-sent, maxSendfile)))
				sent += int64(max(m, 0))
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket takes more
				case err == syscall.EINTR:
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case m == 0:
					serr = io.ErrUnexpectedEOF // the file ends before off+n
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = err
		}
	})
	if serr == nil {
		serr = err
	}
	return sent, true, serr
}

// maxSendfile is the most one sendfile(2) is asked for, as Go's own
// sendfile loop asks (the count is an int32 in the kernel).
const maxSendfile = 1<<31 - 1

// startMore writes the held head, once, with MSG_MORE: the kernel keeps
// it for the body that follows at once, so that the first segment
// carries both and the client wakes once, as nginx's TCP_CORK around
// its head and sendfile does, without the two setsockopt(2)s.
func (b *bodyWriter) startMore(dc syscall.RawConn) error {
	if b.w.started {
		return nil
	}
	b.w.started = true
	head := b.w.c.head
	var serr error
	b.w.c.nc.SetWriteDeadline(time.Now().Add(b.idle))
	err := dc.Write(func(fd uintptr) bool {
		for len(head) > 0 {
			m, err := syscall.SendmsgN(int(fd), head, nil, nil, syscall.MSG_MORE)
			head = head[max(m, 0):]
			switch {
			case err == syscall.EAGAIN:
				return false
			case err == syscall.EINTR:
			case err != nil:
				serr = os.NewSyscallError("sendmsg", err)
				return true
			}
		}
		return true
	})
	if serr != nil {
		return serr
	}
	return err
}
