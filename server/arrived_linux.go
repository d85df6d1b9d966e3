package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// arrivedBytes returns how many bytes of input have reached the server
// on nc, read by the connection or not: TCP_INFO's bytes_received, which
// the kernel counts as data arrives, so no read in progress can make it
// miss bytes. ok is false when nc is not a TCP connection.
func arrivedBytes(nc net.Conn) (n int64, ok bool) {
	tc, isTCP := nc.(*net.TCPConn)
	if !isTCP {
		return 0, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	cerr := raw.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if cerr != nil || err != nil {
		return 0, false
	}
	return int64(info.Bytes_received), true
}
