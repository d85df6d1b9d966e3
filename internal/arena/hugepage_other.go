//go:build unix && !linux

package arena

func adviseHugePages([]byte) {}
