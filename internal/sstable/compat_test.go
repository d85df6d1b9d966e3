package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// compatEntries are the entries of testdata/v1-legacy-filter.sst, a table
// written (snappy, 256-byte blocks, 10 bloom bits per key) by the writer
// as it was before the blocked filter layout: every other key of
// "k00000".."k01598", some with two versions, some deleted.
func compatEntries() []entry {
	var es []entry
	seq := base.SeqNum(1)
	for i := 0; i < 800; i++ {
		k := fmt.Appendf(nil, "k%05d", 2*i)
		if i%11 == 0 {
			es = append(es, entry{base.MakeInternalKey(k, seq+1000, base.KindSet), bytes.Repeat(fmt.Appendf(nil, "new%05d", i), 4)})
		}
		kind, v := base.KindSet, bytes.Repeat(fmt.Appendf(nil, "v%05d-", i), 6)
		if i%7 == 0 {
			kind, v = base.KindDelete, nil
		}
		es = append(es, entry{base.MakeInternalKey(k, seq, kind), v})
		seq++
	}
	return es
}

// TestReadLegacyFilterTable reads a table written before the blocked
// filter: its legacy filter must still answer, and every read must match
// the entries it was written from.
func TestReadLegacyFilterTable(t *testing.T) {
	data, err := os.ReadFile("testdata/v1-legacy-filter.sst")
	if err != nil {
		t.Fatal(err)
	}
	var stats Stats
	r, err := openTable(data, ReaderOptions{Stats: &stats, FileName: "v1.sst"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.legacy || r.filter == nil {
		t.Fatal("legacy filter not found")
	}
	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
	m := model(compatEntries())
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	checkGets(t, rng, r, m)
	checkIterator(t, rng, r, m, nil, nil)
	for i := 0; i < 800; i++ {
		if _, _, found, err := r.Get(fmt.Appendf(nil, "k%05d", 2*i+1), base.SeqNumMax); found || err != nil {
			t.Fatalf("absent key %d: found=%v err=%v", 2*i+1, found, err)
		}
	}
	if stats.BloomNegatives.Load() < 700 {
		t.Fatalf("legacy filter rejected only %d of 800 absent keys", stats.BloomNegatives.Load())
	}
}

// TestNewTablesUseBlockedFilter checks the writer's meta-index names the
// blocked filter only.
func TestNewTablesUseBlockedFilter(t *testing.T) {
	data, _ := buildTable(t, compatEntries(), WriterOptions{BlockSize: 4096, BloomBitsPerKey: 10})
	r, err := openTable(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.legacy || r.filter == nil {
		t.Fatalf("filter %d bytes, legacy=%v", len(r.filter), r.legacy)
	}
}
