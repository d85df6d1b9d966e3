package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// TestSalvage: on an intact table Salvage returns every entry; with one
// data block damaged it returns every entry of the other blocks, in order,
// and reports the damaged one.
func TestSalvage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randomEntries(rng, 400)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 256, Compression: NoCompression})
	salvage := func(data []byte) (got []entry, skipped int, first error) {
		r, err := openTable(data, ReaderOptions{FileName: "t"})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		skipped, first, err = r.Salvage(func(k base.InternalKey, v []byte) error {
			got = append(got, entry{key: base.InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}, value: bytes.Clone(v)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, skipped, first
	}
	got, skipped, first := salvage(data)
	if skipped != 0 || first != nil || len(got) != len(entries) {
		t.Fatalf("intact table: %d of %d entries, %d skipped, %v", len(got), len(entries), skipped, first)
	}

	damaged := bytes.Clone(data)
	damaged[300] ^= 0x55 // inside the second data block
	got, skipped, first = salvage(damaged)
	if skipped != 1 || !errors.Is(first, base.ErrCorruption) {
		t.Fatalf("one damaged block: %d skipped, %v", skipped, first)
	}
	if len(got) == 0 || len(got) >= len(entries) {
		t.Fatalf("salvaged %d of %d entries", len(got), len(entries))
	}
	// What was saved is a subsequence of the table, values intact.
	i := 0
	for _, e := range got {
		for i < len(entries) && (!bytes.Equal(entries[i].key.UserKey, e.key.UserKey) || entries[i].key.Trailer != e.key.Trailer) {
			i++
		}
		if i == len(entries) || !bytes.Equal(entries[i].value, e.value) {
			t.Fatalf("salvaged entry %s is not in the table, in order, with its value", e.key)
		}
	}
}
