//go:build linux || darwin || freebsd

package vfs

import "syscall"

// DiskUsage reads statfs(2): Bavail is what an unprivileged process may
// still use, without the blocks the filesystem keeps for root.
func (osFS) DiskUsage(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bsize := uint64(st.Bsize)
	return uint64(st.Bavail) * bsize, uint64(st.Blocks) * bsize, nil
}
