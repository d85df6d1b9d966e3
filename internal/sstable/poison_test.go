package sstable

import "github.com/lsmgo-dev/lsmgo/internal/cache"

// Recycled block buffers are poisoned in these tests: a read of a block
// after its last release finds garbage.
func init() { cache.PoisonRecycledBlocks(true) }
