//go:build !linux

package server

import "net"

// arrivedBytes is Linux-only (arrived_linux.go); elsewhere a message
// waits only for the input the connection has read already.
func arrivedBytes(net.Conn) (int64, bool) { return 0, false }
