package arena

import "syscall"

// adviseHugePages asks for transparent huge pages: a skiplist insert visits
// a dozen nodes scattered over the arena, and with 4 KiB pages most of
// those visits also miss the TLB.
func adviseHugePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
