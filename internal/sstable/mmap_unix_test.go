//go:build unix

package sstable

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// TestMappedTableTruncated cuts a mapped table's file short under its
// reader: reads of the pages past the new end fault, and must come back
// as errors, not kill the process or return data.
func TestMappedTableTruncated(t *testing.T) {
	entries := randomEntries(rand.New(rand.NewPCG(testSeed(t), 9)), 2000)
	data, _ := buildTable(t, entries, WriterOptions{BlockSize: 4096, Compression: SnappyCompression})
	path := filepath.Join(t.TempDir(), "000001.sst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, int64(len(data)), ReaderOptions{FileName: path, Map: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.mapped == nil {
		t.Fatal("the table was not mapped")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[:100] {
		v, _, found, err := r.Get(e.key.UserKey, base.SeqNumMax)
		if err == nil || found || v != nil {
			t.Fatalf("Get(%s) of a truncated mapped table: found=%v err=%v", e.key, found, err)
		}
		if errors.Is(err, base.ErrCorruption) {
			t.Fatalf("Get(%s): a fault reported as corruption: %v", e.key, err)
		}
	}
	if err := r.VerifyChecksums(); err == nil {
		t.Fatal("VerifyChecksums of a truncated mapped table passed")
	}
}
