//go:build !unix

package memtable

import (
	"testing"
	"time"
)

// processCPU is unknown here; benchmarks report zero CPU time.
func processCPU(testing.TB) time.Duration { return 0 }
