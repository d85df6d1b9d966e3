package lsmgo

import (
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/sstable"
)

// TestCompressionMapping pins the mapping from the public Compression enum
// to the type byte tables store: a change to either numbering that the
// mapping does not follow would write the wrong algorithm's byte.
func TestCompressionMapping(t *testing.T) {
	for _, c := range []struct {
		public Compression
		stored sstable.Compression
		byte   uint8 // doc/format.md
		name   string
	}{
		{SnappyCompression, sstable.SnappyCompression, 1, "snappy"},
		{NoCompression, sstable.NoCompression, 0, "none"},
		{ZstdCompression, sstable.ZstdCompression, 2, "zstd"},
		{Compression(99), sstable.SnappyCompression, 1, "snappy"},
	} {
		got := c.public.sstableCompression()
		if got != c.stored || uint8(got) != c.byte || c.public.String() != c.name {
			t.Errorf("Compression(%d) maps to %d (%s), want %d (%s)", int(c.public), uint8(got), c.public, c.byte, c.name)
		}
	}
}
