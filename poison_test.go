package lsmgo

import "github.com/lsmgo-dev/lsmgo/internal/cache"

// The engine's tests run with recycled block buffers poisoned: a read of a
// block after its last release finds garbage, and the models notice.
func init() { cache.PoisonRecycledBlocks(true) }
